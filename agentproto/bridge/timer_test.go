package bridge_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One timer per connection times every call out at its own deadline:
// whatever the order in which calls with different timeouts arrive, and
// whether earlier calls were answered in time.
func TestTimeoutsOfManyCallsOnOneConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSyncBridge(t)
		a := dialRaw(t, b)
		start := time.Now()
		send := func(id string, timeoutMs int) {
			go a.conn.WriteMessage(fmt.Appendf(nil, `{"id":%q,"type":"browser.click","timeoutMs":%d}`, id, timeoutMs))
			<-b.Extension.Requests()
		}
		// Long first, then shorter ones: the timer must be brought
		// forward for each.
		send("t5000", 5000)
		send("t3000", 3000)
		answered := make(chan struct{})
		go func() {
			// Answered in time: its deadline must not end the others
			// early, nor leave the timer unarmed for them.
			go a.conn.WriteMessage([]byte(`{"id":"answered","type":"browser.click","timeoutMs":1000}`))
			req := <-b.Extension.Requests()
			time.Sleep(500 * time.Millisecond)
			req.Reply(true)
			close(answered)
		}()
		<-answered
		send("t4000", 3500)  // at 500 ms: due at 4000 ms
		send("t3000b", 2500) // at 500 ms: due at 3000 ms, with t3000

		got := map[string]time.Duration{}
		for len(got) < 5 {
			var reply struct {
				ID     string          `json:"id"`
				Error  string          `json:"error"`
				Result json.RawMessage `json:"result"`
			}
			require.NoError(t, json.Unmarshal([]byte(a.recv(t)), &reply))
			got[reply.ID] = time.Since(start)
			if reply.ID == "answered" {
				assert.JSONEq(t, `true`, string(reply.Result))
			} else {
				assert.Equal(t, "Bridge request timed out: browser.click", reply.Error, reply.ID)
			}
		}
		assert.Equal(t, map[string]time.Duration{
			"answered": 500 * time.Millisecond,
			"t3000":    3 * time.Second,
			"t3000b":   3 * time.Second,
			"t4000":    4 * time.Second,
			"t5000":    5 * time.Second,
		}, got)
		synctest.Wait()
		assert.Zero(t, b.Host.Pending(), "every timed-out call is forgotten by the host")
	})
}

// After the timer has fired with nothing overdue left, a new call arms it
// again.
func TestTimeoutAfterAnIdleConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSyncBridge(t)
		a := dialRaw(t, b)
		for i := range 3 {
			start := time.Now()
			go a.conn.WriteMessage(fmt.Appendf(nil, `{"id":"%d","type":"tasks.get","timeoutMs":700}`, i))
			<-b.Extension.Requests()
			assert.Equal(t, fmt.Sprintf(`{"id":"%d","error":"Bridge request timed out: tasks.get"}`, i), a.recv(t))
			assert.Equal(t, 700*time.Millisecond, time.Since(start))
			time.Sleep(10 * time.Second)
		}
	})
}
