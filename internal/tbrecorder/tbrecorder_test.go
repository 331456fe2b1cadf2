package tbrecorder

import (
	"testing"
)

// TestUnformattedCallsAreRecorded: the unformatted methods are recorded
// like their formatting counterparts, never passed on to the real test
// (whose Fatal, on Run's goroutine, would fail it).
func TestUnformattedCallsAreRecorded(t *testing.T) {
	r := New(t)
	r.Run(func(tb testing.TB) {
		tb.Log("log")
		tb.Error("error")
		tb.Fatal("fatal")
	})
	if r.FatalMsg != "fatal" || len(r.ErrorMsgs) != 1 || r.ErrorMsgs[0] != "error" ||
		len(r.LogMsgs) != 1 || r.LogMsgs[0] != "log" || !r.Failed() {
		t.Fatalf("recorded fatal %q, errors %q, logs %q, failed %v", r.FatalMsg, r.ErrorMsgs, r.LogMsgs, r.Failed())
	}

	r = New(t)
	r.Run(func(tb testing.TB) { tb.Skip("skip") })
	if r.SkipMsg != "skip" || !r.Skipped() || r.Failed() {
		t.Fatalf("recorded skip %q, skipped %v, failed %v", r.SkipMsg, r.Skipped(), r.Failed())
	}

	r = New(t)
	r.Run(func(tb testing.TB) { tb.FailNow() })
	if !r.Failed() {
		t.Fatal("FailNow not recorded")
	}
}
