// Package tbrecorder is a testing.TB that records what a test helper does
// with it (fails, skips, logs, registers cleanups), for the tests of
// helpers such as browsertest.Start.
package tbrecorder

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// Recorder is a testing.TB that records what the code under test does
// with it. Its Fatal and Skip methods end the calling goroutine, as the
// real ones do, so run that code with Run. Everything else goes to the
// embedded TB. Read the fields once Run has returned.
type Recorder struct {
	testing.TB

	mu        sync.Mutex
	FatalMsg  string   // the message of Fatalf, if called
	SkipMsg   string   // the message of Skipf, if called
	ErrorMsgs []string // the messages of Errorf
	LogMsgs   []string // the messages of Logf
	failed    bool
	skipped   bool
	cleanups  []func()
}

// New returns a Recorder over t.
func New(t testing.TB) *Recorder { return &Recorder{TB: t} }

// Helper does nothing.
func (r *Recorder) Helper() {}

// Fatalf records the message, marks the test failed and ends the calling
// goroutine.
func (r *Recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.FatalMsg = fmt.Sprintf(format, args...)
	r.failed = true
	r.mu.Unlock()
	runtime.Goexit()
}

// Skipf records the message and ends the calling goroutine.
func (r *Recorder) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.SkipMsg = fmt.Sprintf(format, args...)
	r.skipped = true
	r.mu.Unlock()
	runtime.Goexit()
}

// Errorf records the message and marks the test failed.
func (r *Recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	r.ErrorMsgs = append(r.ErrorMsgs, fmt.Sprintf(format, args...))
	r.failed = true
	r.mu.Unlock()
}

// Fatal, FailNow, Skip, SkipNow, Error, Fail and Log record as their
// formatting counterparts do, so that no call of the code under test
// reaches the embedded TB (whose FailNow must not run on Run's goroutine).

func (r *Recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }
func (r *Recorder) FailNow()          { r.Fatalf("FailNow") }
func (r *Recorder) Skip(args ...any)  { r.Skipf("%s", fmt.Sprint(args...)) }
func (r *Recorder) SkipNow()          { r.Skipf("SkipNow") }
func (r *Recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *Recorder) Log(args ...any)   { r.Logf("%s", fmt.Sprint(args...)) }

func (r *Recorder) Fail() {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
}

// Skipped reports whether Skip, Skipf or SkipNow was called.
func (r *Recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

// Logf records the message.
func (r *Recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	r.LogMsgs = append(r.LogMsgs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// Failed reports whether Fatal, Fatalf, FailNow, Error, Errorf or Fail was
// called.
func (r *Recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// Cleanup records f for RunCleanups.
func (r *Recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// Cleanups returns how many cleanups are registered.
func (r *Recorder) Cleanups() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cleanups)
}

// RunCleanups runs the registered cleanups, last first, as the testing
// package does.
func (r *Recorder) RunCleanups() {
	r.mu.Lock()
	cs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// Run calls f with r in a goroutine of its own, as the testing package
// runs a test, so that Fatalf and Skipf can end it, and waits for it.
func (r *Recorder) Run(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}
