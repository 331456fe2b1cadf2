package extbridge

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// logRecorder keeps the messages and attributes of the records it gets.
type logRecorder struct {
	mu      sync.Mutex
	records []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	r.mu.Lock()
	r.records = append(r.records, b.String())
	r.mu.Unlock()
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.records {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

// refusedAsAnotherBrowser asserts that err is a hello refused with 1008
// "another browser is connected".
func refusedAsAnotherBrowser(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var ce websocket.CloseError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, websocket.StatusPolicyViolation, ce.Code)
	assert.Equal(t, "another browser is connected", ce.Reason)
}

// Two browsers with the extension replace each other on every reconnect.
// Newest wins up to ReplaceLimit replacements in ReplaceWindow; then the
// current connection is kept and newcomers are refused for as long as it
// stays connected (a cool-down that ran out restarted the flapping),
// logged once with both versions; once it ends, the next one gets in.
func TestReplacementStormDamped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecorder{}
		e := newEnv(t, HubOptions{Logger: slog.New(logs)})
		browser := extbridgetest.NewBrowser()
		e.dial(extbridgetest.Options{Version: "1.0-a", Browser: browser})
		var last *extbridgetest.Extension
		for range DefaultReplaceLimit {
			time.Sleep(time.Second)
			last = e.dial(extbridgetest.Options{Version: "1.0-b", Browser: browser})
		}
		for range 5 {
			time.Sleep(time.Second)
			_, err := e.connect(extbridgetest.Options{Version: "2.0-c", Browser: browser})
			refusedAsAnotherBrowser(t, err)
		}
		// The kept connection works, untouched.
		select {
		case <-last.Done():
			t.Fatal("the current connection was replaced")
		default:
		}
		_, err := e.hub.Tabs(t.Context())
		require.NoError(t, err)
		info, _ := e.hub.Extension()
		assert.Equal(t, "1.0-b", info.Version)
		assert.Equal(t, 1, logs.count("keeping the current one"), "logged once, not per attempt")
		assert.Equal(t, 1, logs.count("current_version=1.0-b newcomer_version=2.0-c"))

		// Long after the storm, the other browser still does not take over:
		// the flapping is over for as long as the kept connection lives.
		for range 3 {
			time.Sleep(2 * time.Minute)
			_, err := e.connect(extbridgetest.Options{Version: "2.0-c", Browser: browser})
			refusedAsAnotherBrowser(t, err)
		}
		info, _ = e.hub.Extension()
		assert.Equal(t, "1.0-b", info.Version)
		assert.Equal(t, 1, logs.count("keeping the current one"), "still one log line")

		// When the kept connection ends, the next newcomer is accepted and
		// newest wins again.
		require.NoError(t, last.Close())
		synctest.Wait()
		e.dial(extbridgetest.Options{Version: "2.0-c", Browser: browser})
		info, _ = e.hub.Extension()
		assert.Equal(t, "2.0-c", info.Version)
		e.dial(extbridgetest.Options{Version: "2.0-d", Browser: browser})
		info, _ = e.hub.Extension()
		assert.Equal(t, "2.0-d", info.Version)
	})
}

// Replacements spread over more than the window are all accepted.
func TestSlowReplacementsAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		for range 3 * DefaultReplaceLimit {
			e.dial(extbridgetest.Options{})
			time.Sleep(DefaultReplaceWindow / 2)
		}
		assert.True(t, e.hub.Connected())
	})
}

func TestReplaceKeepCurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecorder{}
		e := newEnv(t, HubOptions{Replace: ReplaceKeepCurrent, Logger: slog.New(logs)})
		first := e.dial(extbridgetest.Options{Version: "1"})
		for range 3 {
			_, err := e.connect(extbridgetest.Options{Version: "2"})
			refusedAsAnotherBrowser(t, err)
		}
		assert.Equal(t, 1, logs.count("keeping the current one"))
		require.NoError(t, first.Close())
		synctest.Wait()
		require.False(t, e.hub.Connected())
		e.dial(extbridgetest.Options{Version: "2"})
		info, _ := e.hub.Extension()
		assert.Equal(t, "2", info.Version)
	})
}

func TestReplacePolicyChecked(t *testing.T) {
	_, err := NewHub(testToken, &HubOptions{Replace: "oldest"})
	assert.ErrorContains(t, err, "unknown replace policy")
}
