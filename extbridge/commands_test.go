package extbridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

func TestNavigateRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		b := extbridgetest.NewBrowser()
		b.SetPage("https://example.com/", extbridgetest.Page{Title: "Example Domain"})
		e.dial(extbridgetest.Options{Browser: b})
		res, err := e.hub.Navigate(t.Context(), "https://example.com/")
		require.NoError(t, err)
		assert.Equal(t, "https://example.com/", res.URL)
		assert.Equal(t, "Example Domain", res.Title)
	})
}

func TestBrowserActions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		b := extbridgetest.NewBrowser()
		b.SetPage("https://shop.example/", extbridgetest.Page{Title: "Shop", Text: map[string]string{"": "Welcome", "h1": "Shop"}})
		image := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 10)
		b.SetImage(image)
		b.OpenTab("https://docs.example/")
		e.dial(extbridgetest.Options{Browser: b})
		ctx := t.Context()

		_, err := e.hub.Navigate(ctx, "https://shop.example/")
		require.NoError(t, err)
		res, err := e.hub.Read(ctx, "")
		require.NoError(t, err)
		assert.Equal(t, "Welcome", res.Content)
		res, err = e.hub.Read(ctx, "h1")
		require.NoError(t, err)
		assert.Equal(t, "Shop", res.Content)
		_, err = e.hub.Click(ctx, "button.buy")
		require.NoError(t, err)
		_, err = e.hub.Type(ctx, "input[name=q]", "socks", &TypeOptions{PressEnter: true})
		require.NoError(t, err)
		shot, err := e.hub.Screenshot(ctx)
		require.NoError(t, err)
		assert.Equal(t, image, shot.Data)
		assert.Equal(t, "image/png", shot.MIMEType)
		assert.Equal(t, "Shop", shot.Title)
		tabs, err := e.hub.Tabs(ctx)
		require.NoError(t, err)
		assert.Equal(t, []Tab{{Index: 0, URL: "https://shop.example/", Title: "Shop", Active: true},
			{Index: 1, URL: "https://docs.example/", Title: "Page https://docs.example/"}}, tabs)
		assert.Equal(t, []string{"button.buy"}, b.Clicks())
		assert.Equal(t, "socks", b.Value("input[name=q]"))

		_, err = e.hub.Read(ctx, "#missing")
		var cmdErr *CommandError
		require.ErrorAs(t, err, &cmdErr)
		assert.Equal(t, ActionRead, cmdErr.Action)
		assert.Equal(t, "no element matches selector #missing", cmdErr.Message)
	})
}

func TestCommandFrames(t *testing.T) {
	tests := []struct {
		name string
		run  func(ctx context.Context, h *Hub) error
		want map[string]any // the frame without its id
	}{
		{"navigate", func(ctx context.Context, h *Hub) error { _, err := h.Navigate(ctx, "https://a/"); return err },
			map[string]any{"type": "browser_command", "action": "navigate", "url": "https://a/", "timeout_ms": 30000.0}},
		{"read body omits selector", func(ctx context.Context, h *Hub) error { _, err := h.Read(ctx, ""); return err },
			map[string]any{"type": "browser_command", "action": "read", "timeout_ms": 30000.0}},
		{"type with enter", func(ctx context.Context, h *Hub) error {
			_, err := h.Type(ctx, "#q", "hi", &TypeOptions{PressEnter: true})
			return err
		},
			map[string]any{"type": "browser_command", "action": "type", "selector": "#q", "text": "hi", "press_enter": true, "timeout_ms": 30000.0}},
		{"deadline sets timeout_ms", func(ctx context.Context, h *Hub) error {
			ctx, cancel := context.WithTimeout(ctx, 7*time.Second)
			defer cancel()
			_, err := h.Tabs(ctx)
			return err
		}, map[string]any{"type": "browser_command", "action": "tabs", "timeout_ms": 7000.0}},
		{"generic with params", func(ctx context.Context, h *Hub) error {
			_, err := h.Command(ctx, BrowserCommand{Action: "scroll", Params: json.RawMessage(`{"direction":"down","amount":3}`)})
			return err
		}, map[string]any{"type": "browser_command", "action": "scroll", "direction": "down", "amount": 3.0, "timeout_ms": 30000.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, HubOptions{})
				ext := e.dial(extbridgetest.Options{})
				errc := make(chan error, 1)
				go func() { errc <- tt.run(t.Context(), e.hub) }()
				cmd, err := ext.NextCommand(t.Context())
				require.NoError(t, err)
				var got map[string]any
				require.NoError(t, json.Unmarshal(cmd.Raw, &got))
				assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, got["id"])
				delete(got, "id")
				assert.Equal(t, tt.want, got)
				require.NoError(t, ext.Reply(t.Context(), cmd.ID, &extbridgetest.Result{}))
				assert.NoError(t, <-errc)
			})
		})
	}
}

func TestCommandParamsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		e.dial(extbridgetest.Options{})
		for _, params := range []string{`{"id":"x"}`, `{"timeout_ms":1}`, `[1]`, `{"a":1,"a":2}`, `nope`} {
			_, err := e.hub.Command(t.Context(), BrowserCommand{Action: "scroll", Params: json.RawMessage(params)})
			assert.Error(t, err, params)
		}
		_, err := e.hub.Command(t.Context(), BrowserCommand{URL: "x"})
		assert.Error(t, err, "no action")
	})
}

func TestCommandTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		e.dial(extbridgetest.Options{Browser: answer(func(_ *extbridgetest.Command) *extbridgetest.Result { return nil })})

		start := time.Now()
		_, err := e.hub.Navigate(t.Context(), "https://slow/")
		assert.Equal(t, DefaultCommandTimeout+DefaultReplyMargin, time.Since(start))
		var te *TimeoutError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "timed out waiting for the browser extension to navigate", err.Error())
		assert.ErrorIs(t, err, ErrTimeout)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)

		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start = time.Now()
		_, err = e.hub.Screenshot(ctx)
		assert.Equal(t, 3*time.Second, time.Since(start))
		assert.ErrorIs(t, err, ErrTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, "timed out waiting for the browser extension to screenshot", err.Error())

		ctx, cancel = context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		_, err = e.hub.Tabs(ctx)
		assert.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, ErrTimeout)

		e.hub.mu.Lock()
		assert.Empty(t, e.hub.calls, "no pending call is left behind")
		e.hub.mu.Unlock()
	})
}

// deadlineOnly reports a deadline but is never done, as a context type of
// the caller's might: the hub's own wait still ends at the deadline.
type deadlineOnly struct {
	context.Context
	at time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.at, true }

// The hub waits for every command with one timer, armed for the earliest
// deadline: calls started in any order, with and without deadlines, each
// end exactly when their own wait does, and one answered in time is not
// disturbed.
func TestCommandTimeoutsOfConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{CommandTimeout: 10 * time.Second, ReplyMargin: time.Second})
		e.dial(extbridgetest.Options{Browser: answer(func(c *extbridgetest.Command) *extbridgetest.Result {
			if c.Selector == "fast" {
				return &extbridgetest.Result{Title: "answered"}
			}
			return nil
		})})
		start := time.Now()
		type ended struct {
			after time.Duration
			res   *BrowserResult
			err   error
		}
		run := func(delay time.Duration, ctx context.Context, selector string) <-chan ended {
			out := make(chan ended, 1)
			go func() {
				time.Sleep(delay)
				res, err := e.hub.Click(ctx, selector)
				out <- ended{time.Since(start), res, err}
			}()
			return out
		}
		short, cancel := context.WithTimeout(t.Context(), 5*time.Second) // from 0: ends at 5 s
		defer cancel()
		a := run(0, t.Context(), "a")                                                       // 0 + 11 s
		b := run(2*time.Second, short, "b")                                                 // the context's 5 s
		c := run(4*time.Second, t.Context(), "c")                                           // 4 + 11 s
		d := run(6*time.Second, t.Context(), "fast")                                        // answered
		f := run(7*time.Second, deadlineOnly{t.Context(), start.Add(9 * time.Second)}, "f") // 9 s

		for _, tt := range []struct {
			ch       <-chan ended
			after    time.Duration
			deadline bool
		}{{b, 5 * time.Second, true}, {f, 9 * time.Second, true}, {a, 11 * time.Second, false}, {c, 15 * time.Second, false}} {
			got := <-tt.ch
			assert.Equal(t, tt.after, got.after)
			assert.ErrorIs(t, got.err, ErrTimeout)
			assert.Equal(t, tt.deadline, errors.Is(got.err, context.DeadlineExceeded), "%v", got.err)
		}
		got := <-d
		require.NoError(t, got.err)
		assert.Equal(t, 6*time.Second, got.after)
		assert.Equal(t, "answered", got.res.Title)

		e.hub.mu.Lock()
		assert.Empty(t, e.hub.calls, "no pending call is left behind")
		e.hub.mu.Unlock()
	})
}

func TestNotConnectedWording(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		_, err := e.hub.Navigate(t.Context(), "https://a/")
		assert.EqualError(t, err, "no browser extension connected on port 52789")
		assert.ErrorIs(t, err, ErrNotConnected)
		var nc *NotConnectedError
		require.ErrorAs(t, err, &nc)
		assert.Equal(t, 52789, nc.Port)
	})
}

func TestResultsIgnoredAndTolerated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{})
		ctx := t.Context()
		errc := make(chan error, 1)
		var res *BrowserResult
		go func() {
			var err error
			res, err = e.hub.Read(ctx, "")
			errc <- err
		}()
		cmd, err := ext.NextCommand(ctx)
		require.NoError(t, err)
		// Unknown id, then nulls everywhere, then a duplicate.
		require.NoError(t, ext.SendRaw(ctx, []byte(`{"type":"browser_result","id":"00000000-0000-4000-8000-000000000000","content":"wrong"}`)))
		require.NoError(t, ext.SendRaw(ctx, []byte(`{"type":"browser_result","id":"`+cmd.ID+`","content":null,"url":null,"title":null,"events":null,"error":null,"tabs":null,"future":{"x":1}}`)))
		require.NoError(t, <-errc)
		assert.Equal(t, "", res.Content)
		assert.JSONEq(t, `{"x":1}`, gjson(t, res.Raw, "future"))
		require.NoError(t, ext.Reply(ctx, cmd.ID, &extbridgetest.Result{Error: "late duplicate"}))

		// A malformed result with a readable id fails its command at once.
		go func() {
			_, err := e.hub.Tabs(ctx)
			errc <- err
		}()
		cmd, err = ext.NextCommand(ctx)
		require.NoError(t, err)
		require.NoError(t, ext.SendRaw(ctx, []byte(`{"type":"browser_result","id":"`+cmd.ID+`","tabs":"not an array"}`)))
		assert.ErrorIs(t, <-errc, ErrInvalidResult)
	})
}

func gjson(t *testing.T, raw []byte, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return string(m[key])
}

func TestScreenshotImages(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n-image-")
	tests := []struct {
		name     string
		result   extbridgetest.Result
		wantMIME string
		wantErr  error
	}{
		{"png", extbridgetest.Result{Image: base64.StdEncoding.EncodeToString(png), ImageMIMEType: "image/png"}, "image/png", nil},
		{"empty mime means png", extbridgetest.Result{Image: base64.StdEncoding.EncodeToString(png)}, "image/png", nil},
		{"jpeg", extbridgetest.Result{Image: base64.StdEncoding.EncodeToString(png), ImageMIMEType: "image/jpeg"}, "image/jpeg", nil},
		{"data url", extbridgetest.Result{Image: "data:image/webp;base64," + base64.StdEncoding.EncodeToString(png)}, "image/webp", nil},
		{"unpadded", extbridgetest.Result{Image: base64.RawStdEncoding.EncodeToString(png)}, "image/png", nil},
		{"empty image", extbridgetest.Result{URL: "https://a/"}, "", ErrInvalidResult},
		{"bad base64", extbridgetest.Result{Image: "!!!!"}, "", ErrInvalidResult},
		{"data url not base64", extbridgetest.Result{Image: "data:image/png,abc"}, "", ErrInvalidResult},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, HubOptions{})
				e.dial(extbridgetest.Options{Browser: answer(func(_ *extbridgetest.Command) *extbridgetest.Result { r := tt.result; return &r })})
				shot, err := e.hub.Screenshot(t.Context())
				if tt.wantErr != nil {
					assert.ErrorIs(t, err, tt.wantErr)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, png, shot.Data)
				assert.Equal(t, tt.wantMIME, shot.MIMEType)
			})
		})
	}
}

func TestTenMegabyteScreenshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		b := extbridgetest.NewBrowser()
		image := bytes.Repeat([]byte("0123456789abcdef"), 10<<20/16)
		b.SetImage(image)
		e.dial(extbridgetest.Options{Browser: b})
		shot, err := e.hub.Screenshot(t.Context())
		require.NoError(t, err)
		assert.Len(t, shot.Data, 10<<20)
		assert.True(t, bytes.Equal(image, shot.Data))
		// The connection is still usable afterwards.
		_, err = e.hub.Tabs(t.Context())
		assert.NoError(t, err)
	})
}

func TestCommandAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		e.dial(extbridgetest.Options{Browser: extbridgetest.NewBrowser()})
		require.NoError(t, e.hub.Close())
		_, err := e.hub.Tabs(t.Context())
		assert.ErrorIs(t, err, ErrClosed)
	})
}

// TestCommandErrorStrings: wrapped errors name the package and the action
// once.
func TestCommandErrorStrings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{Browser: answer(func(c *extbridgetest.Command) *extbridgetest.Result {
			if c.Action == string(ActionScreenshot) {
				return &extbridgetest.Result{Image: "!!!!"}
			}
			return &extbridgetest.Result{}
		})})
		_, err := e.hub.Screenshot(t.Context())
		assert.EqualError(t, err, "extbridge: screenshot: invalid result from the browser extension: image is not valid base64")

		errc, _ := readInFlight(t, e, e.dial(extbridgetest.Options{}))
		<-ext.Done()
		require.NoError(t, e.hub.Close())
		err = <-errc
		assert.ErrorIs(t, err, ErrDisconnected)
		assert.EqualError(t, err, "extbridge: read: browser extension disconnected: hub closed")
	})
}

// TestCommandOrderAndAck: a browser command written in place never
// overtakes frames queued before it, nor the hello ack.
func TestCommandOrderAndAck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e *env
		commanded := make(chan error, 1)
		e = newEnv(t, HubOptions{OnConnect: func(ConnInfo) {
			go func() {
				_, err := e.hub.Tabs(t.Context())
				commanded <- err
			}()
		}})
		ext := e.dial(extbridgetest.Options{Browser: extbridgetest.NewBrowser()}) // the ack came first
		require.NoError(t, <-commanded)

		const n = 100
		for i := range n {
			require.NoError(t, e.hub.Emit(t.Context(), TextMessageContent("m", strconv.Itoa(i))))
		}
		_, err := e.hub.Click(t.Context(), "#after-the-events")
		require.NoError(t, err)
		var types []string
		for _, f := range ext.Received() {
			types = append(types, f.Type)
		}
		want := []string{"mode", "browser_command"}
		for range n {
			want = append(want, "chat_event")
		}
		assert.Equal(t, append(want, "browser_command"), types)
	})
}

// encodeCommand writes, without reflection, the frame json.Marshal writes
// of a commandFrame, byte for byte.
func FuzzEncodeCommand(f *testing.F) {
	for _, s := range []string{"", "button.submit", `a[title="x"] > b`, `back\slash`, "tab\tnew\nline\r\b\f\x00\x1f\x7f",
		"<script>&amp;", "\u2028\u2029", "caf\u00e9 \U0001F600", "bad \xff\xfe utf-8", "\xed\xa0\x80"} {
		f.Add("click", s, s, s, true, int64(30000))
	}
	f.Fuzz(func(t *testing.T, action, url, selector, text string, enter bool, timeoutMS int64) {
		got, err := encodeCommand("id-1", BrowserCommand{Action: CommandAction(action), URL: url, Selector: selector, Text: text, PressEnter: enter}, timeoutMS)
		require.NoError(t, err)
		want, err := json.Marshal(commandFrame{Type: typeCommand, ID: "id-1", Action: action, URL: url, Selector: selector,
			Text: text, PressEnter: enter, TimeoutMS: timeoutMS})
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}
