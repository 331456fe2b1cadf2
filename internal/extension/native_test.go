package extension_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/jpeg"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/browsertest"
	"github.com/agentbridge/agentbridge/internal/extension"
)

type snapshotNode struct {
	Ref        string                   `json:"ref"`
	Role       string                   `json:"role"`
	Name       string                   `json:"name"`
	Value      *string                  `json:"value"`
	Href       string                   `json:"href"`
	State      []string                 `json:"state"`
	BBox       struct{ X, Y, W, H int } `json:"bbox"`
	InViewport bool                     `json:"inViewport"`
	FrameID    int                      `json:"frameId"`
}

type snapshot struct {
	URL      string `json:"url"`
	Title    string `json:"title"`
	Viewport struct {
		W       int `json:"w"`
		H       int `json:"h"`
		ScrollX int `json:"scrollX"`
		ScrollY int `json:"scrollY"`
	} `json:"viewport"`
	Nodes        []snapshotNode `json:"nodes"`
	TextSnippets []string       `json:"textSnippets"`
	DomHash      string         `json:"domHash"`
	TakenAt      int64          `json:"takenAt"`
}

// find returns the node with this role and name.
func (s snapshot) find(t testing.TB, role, name string) snapshotNode {
	t.Helper()
	for _, n := range s.Nodes {
		if n.Role == role && n.Name == name {
			return n
		}
	}
	require.Failf(t, "node not found", "no %s named %q in %+v", role, name, s.Nodes)
	return snapshotNode{}
}

type actionResult struct {
	Kind   string `json:"kind"`
	Result struct {
		OK         bool   `json:"ok"`
		Error      string `json:"error"`
		DurationMs *int64 `json:"durationMs"`
		ScrollY    int    `json:"scrollY"`
		Extracted  []struct {
			Ref   string  `json:"ref"`
			Text  string  `json:"text"`
			Value *string `json:"value"`
			Href  string  `json:"href"`
		} `json:"extracted"`
	} `json:"result"`
}

func (fx *fixture) url(path string) string { return "http://" + fx.pagesLn.Addr().String() + path }

// open navigates the active tab to path and returns a fresh snapshot.
func open(t testing.TB, fx *fixture, l *link, path string) snapshot {
	t.Helper()
	var nav struct {
		OK    bool   `json:"ok"`
		TabID int    `json:"tabId"`
		URL   string `json:"url"`
	}
	l.result(t, "browser.navigate", map[string]any{"url": fx.url(path)}, &nav)
	require.True(t, nav.OK)
	require.Equal(t, fx.url(path), nav.URL)
	return takeSnapshot(t, l)
}

func takeSnapshot(t testing.TB, l *link) snapshot {
	t.Helper()
	var res struct {
		Kind     string   `json:"kind"`
		Snapshot snapshot `json:"snapshot"`
	}
	l.result(t, "browser.snapshot", map[string]any{}, &res)
	require.Equal(t, "snapshot", res.Kind)
	return res.Snapshot
}

func action(t testing.TB, l *link, typ string, payload map[string]any) actionResult {
	t.Helper()
	var res actionResult
	l.result(t, typ, payload, &res)
	require.Equal(t, "action:result", res.Kind)
	require.NotNil(t, res.Result.DurationMs, "an action result carries durationMs")
	return res
}

// succeeds runs an action that must succeed.
func succeeds(t testing.TB, l *link, typ string, payload map[string]any) actionResult {
	t.Helper()
	res := action(t, l, typ, payload)
	require.True(t, res.Result.OK, "%s %v failed: %s", typ, payload, res.Result.Error)
	return res
}

// failsWith runs an action that must fail as a result (ok:false), not as
// an error, with an error mentioning want.
func failsWith(t testing.TB, l *link, typ string, payload map[string]any, want string) {
	t.Helper()
	res := action(t, l, typ, payload)
	assert.False(t, res.Result.OK, "%s %v succeeded", typ, payload)
	assert.Contains(t, res.Result.Error, want)
}

func TestNativeHello(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	assert.JSONEq(t, `{"kind":"bridge:hello"}`, string(l.hello))
	require.NotZero(t, l.conn.Pid)
	// Chrome starts a host with the caller's origin as its argument.
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(l.conn.Pid) + "/cmdline")
	require.NoError(t, err)
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	require.GreaterOrEqual(t, len(args), 2, "%q", args)
	assert.Equal(t, extension.NativeOrigin, args[1])
}

func TestNativeSnapshot(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	s := open(t, fx, l, "/controls")

	assert.Equal(t, fx.url("/controls"), s.URL)
	assert.Equal(t, "Controls", s.Title)
	assert.Positive(t, s.Viewport.W)
	assert.Positive(t, s.Viewport.H)
	assert.NotEmpty(t, s.DomHash)
	assert.Positive(t, s.TakenAt)
	assert.Contains(t, s.TextSnippets, "Sign up")

	for i, n := range s.Nodes {
		assert.Equal(t, "@e"+strconv.Itoa(i+1), n.Ref, "refs are numbered in order")
	}
	// Viewport first: once a node outside the viewport is listed, no node
	// inside it follows.
	seenOutside := false
	for _, n := range s.Nodes {
		if !n.InViewport {
			seenOutside = true
		}
		assert.False(t, seenOutside && n.InViewport, "node %s in the viewport listed after one outside it", n.Ref)
	}

	heading := s.find(t, "heading", "Sign up")
	assert.True(t, heading.InViewport)
	assert.Positive(t, heading.BBox.W)
	assert.Positive(t, heading.BBox.H)

	email := s.find(t, "textbox", "Email address")
	require.NotNil(t, email.Value)
	assert.Equal(t, "ada@example.com", *email.Value)
	assert.Contains(t, email.State, "required")

	pw := s.find(t, "textbox", "Password")
	require.NotNil(t, pw.Value)
	assert.Equal(t, "[redacted]", *pw.Value, "a password's value never leaves the page")

	news := s.find(t, "checkbox", "Newsletter")
	assert.Contains(t, news.State, "checked")
	plan := s.find(t, "combobox", "Plan")
	require.NotNil(t, plan.Value)
	assert.Equal(t, "Pro", *plan.Value)
	assert.Contains(t, s.find(t, "button", "Disabled action").State, "disabled")
	s.find(t, "button", "Create account")
	assert.Equal(t, fx.url("/plain"), s.find(t, "link", "Terms of service").Href)
	s.find(t, "textbox", "Search the docs") // aria-labelledby
	assert.Contains(t, s.find(t, "button", "Menu").State, "collapsed")

	far := s.find(t, "button", "Far below")
	assert.False(t, far.InViewport)
	assert.Equal(t, "@e"+strconv.Itoa(len(s.Nodes)), far.Ref, "the only node below the fold comes last")

	for _, n := range s.Nodes {
		assert.NotEqual(t, "Invisible", n.Name, "hidden elements are not listed")
		if n.Value != nil {
			assert.NotEqual(t, "hidden-value", *n.Value, "hidden inputs are not listed")
		}
	}
}

func TestNativeClickChangesThePage(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	s := open(t, fx, l, "/click")
	button := s.find(t, "button", "Add one")

	succeeds(t, l, "browser.click", map[string]any{"ref": button.Ref, "reason": "count"})
	succeeds(t, l, "browser.click", map[string]any{"ref": button.Ref})

	after := takeSnapshot(t, l)
	assert.NotEqual(t, s.DomHash, after.DomHash, "the page changed")
	assert.Contains(t, after.TextSnippets, "clicked 2")

	// A new snapshot invalidates old refs only by renumbering: an unknown
	// ref is an action failure, not an error.
	failsWith(t, l, "browser.click", map[string]any{"ref": "@e999"}, "@e999")
	failsWith(t, l, "browser.click", map[string]any{"ref": "button"}, "Invalid ref")
}

func TestNativeClickFollowsALink(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	s := open(t, fx, l, "/controls")
	succeeds(t, l, "browser.click", map[string]any{"ref": s.find(t, "link", "Terms of service").Ref})
	// The click answered once the next page loaded.
	after := takeSnapshot(t, l)
	assert.Equal(t, fx.url("/plain"), after.URL)
	assert.Equal(t, "Plain", after.Title)
}

func TestNativeTypeAndSubmit(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)

	t.Run("press Enter", func(t *testing.T) {
		s := open(t, fx, l, "/form")
		q := s.find(t, "textbox", "Query")
		succeeds(t, l, "browser.type", map[string]any{"ref": q.Ref, "text": "hello", "mode": "replace", "submit": "false"})
		succeeds(t, l, "browser.type", map[string]any{"ref": q.Ref, "text": " world", "mode": "append", "submit": "false"})

		typed := takeSnapshot(t, l)
		assert.Equal(t, fx.url("/form"), typed.URL, `submit "false" does not submit`)
		q = typed.find(t, "textbox", "Query")
		require.NotNil(t, q.Value)
		assert.Equal(t, "hello world", *q.Value)

		succeeds(t, l, "browser.press", map[string]any{"key": "Enter", "ref": q.Ref})
		done := takeSnapshot(t, l)
		assert.Equal(t, fx.url("/result?q=hello+world"), done.URL)
		done.find(t, "heading", "You searched: hello world")
	})

	t.Run("submit true", func(t *testing.T) {
		s := open(t, fx, l, "/form")
		q := s.find(t, "textbox", "Query")
		succeeds(t, l, "browser.type", map[string]any{"ref": q.Ref, "text": "replaced", "mode": "replace", "submit": "true"})
		done := takeSnapshot(t, l)
		done.find(t, "heading", "You searched: replaced")
	})

	t.Run("select", func(t *testing.T) {
		s := open(t, fx, l, "/controls")
		plan := s.find(t, "combobox", "Plan")
		succeeds(t, l, "browser.type", map[string]any{"ref": plan.Ref, "text": "Free"})
		plan = takeSnapshot(t, l).find(t, "combobox", "Plan")
		require.NotNil(t, plan.Value)
		assert.Equal(t, "Free", *plan.Value)
		failsWith(t, l, "browser.type", map[string]any{"ref": plan.Ref, "text": "Gold"}, "No option")
	})

	t.Run("not a text field", func(t *testing.T) {
		s := open(t, fx, l, "/form")
		failsWith(t, l, "browser.type", map[string]any{"ref": s.find(t, "button", "Search").Ref, "text": "x"}, "does not accept text")
	})
}

func TestNativePress(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	s := open(t, fx, l, "/keys")
	box := s.find(t, "textbox", "Box")

	succeeds(t, l, "browser.press", map[string]any{"key": "K", "modifiers": "ctrl+shift", "ref": box.Ref})
	// Without ref the key goes to the focused element, here still the box;
	// without key it is Enter.
	succeeds(t, l, "browser.press", map[string]any{})
	succeeds(t, l, "browser.press", map[string]any{"key": "x", "ref": box.Ref})

	after := takeSnapshot(t, l)
	log := strings.Join(after.TextSnippets, " ")
	assert.Contains(t, log, "ctrl+shift+K@box Enter@box x@box")
	box = after.find(t, "textbox", "Box")
	require.NotNil(t, box.Value)
	assert.Equal(t, "x", *box.Value, "a printable key without modifiers types itself")

	failsWith(t, l, "browser.press", map[string]any{"key": "a", "modifiers": "hyper"}, "hyper")
}

func TestNativeScroll(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	s := open(t, fx, l, "/long")
	bottom := s.find(t, "button", "Bottom button")
	require.False(t, bottom.InViewport)

	res := succeeds(t, l, "browser.scroll", map[string]any{"direction": "down", "amountPx": 500})
	assert.Equal(t, 500, res.Result.ScrollY)
	assert.Equal(t, 500, takeSnapshot(t, l).Viewport.ScrollY)

	res = succeeds(t, l, "browser.scroll", map[string]any{"direction": "up", "amountPx": 200})
	assert.Equal(t, 300, res.Result.ScrollY)

	succeeds(t, l, "browser.scroll", map[string]any{"direction": "bottom"})
	atBottom := takeSnapshot(t, l)
	assert.Greater(t, atBottom.Viewport.ScrollY, 4000)
	assert.True(t, atBottom.find(t, "button", "Bottom button").InViewport)

	res = succeeds(t, l, "browser.scroll", map[string]any{"direction": "top"})
	assert.Equal(t, 0, res.Result.ScrollY)

	s = takeSnapshot(t, l)
	succeeds(t, l, "browser.scroll", map[string]any{"direction": "to_ref", "ref": s.find(t, "button", "Bottom button").Ref})
	assert.True(t, takeSnapshot(t, l).find(t, "button", "Bottom button").InViewport)

	failsWith(t, l, "browser.scroll", map[string]any{"direction": "sideways"}, "sideways")
}

func TestNativeExtract(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	s := open(t, fx, l, "/controls")
	heading := s.find(t, "heading", "Sign up")
	email := s.find(t, "textbox", "Email address")
	pw := s.find(t, "textbox", "Password")
	link := s.find(t, "link", "Terms of service")

	res := succeeds(t, l, "browser.extract", map[string]any{"refs": heading.Ref + "," + email.Ref + ", " + link.Ref + "," + pw.Ref})
	require.Len(t, res.Result.Extracted, 4)
	got := res.Result.Extracted
	assert.Equal(t, heading.Ref, got[0].Ref)
	assert.Equal(t, "Sign up", got[0].Text)
	assert.Nil(t, got[0].Value)
	require.NotNil(t, got[1].Value)
	assert.Equal(t, "ada@example.com", *got[1].Value)
	assert.Equal(t, "Terms of service", got[2].Text)
	assert.Equal(t, fx.url("/plain"), got[2].Href)
	require.NotNil(t, got[3].Value)
	assert.Equal(t, "[redacted]", *got[3].Value)

	visible := action(t, l, "browser.extract", map[string]any{"refs": "visible"})
	all := action(t, l, "browser.extract", map[string]any{"refs": "all"})
	require.True(t, visible.Result.OK)
	require.True(t, all.Result.OK)
	assert.Len(t, all.Result.Extracted, len(s.Nodes))
	assert.Len(t, visible.Result.Extracted, len(s.Nodes)-1, "all but the button below the fold")
	assert.Equal(t, "Far below", all.Result.Extracted[len(s.Nodes)-1].Text)

	raw, err := json.Marshal(all)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "hunter2")

	failsWith(t, l, "browser.extract", map[string]any{"refs": "@e1,@e999"}, "@e999")
}

func TestNativeFrames(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	s := open(t, fx, l, "/frames")
	outer := s.find(t, "heading", "Outer")
	assert.Equal(t, "@e1", outer.Ref)
	inner := s.find(t, "button", "Inner button")
	output := s.find(t, "textbox", "Output")
	frameRef := regexp.MustCompile(`^@f[1-9]\d*e\d+$`)
	assert.Regexp(t, frameRef, inner.Ref, "refs inside frames are @f<frameId>e<N>")
	assert.Regexp(t, frameRef, output.Ref)
	assert.Positive(t, inner.FrameID)
	assert.True(t, inner.InViewport)

	succeeds(t, l, "browser.click", map[string]any{"ref": inner.Ref})
	res := succeeds(t, l, "browser.extract", map[string]any{"refs": output.Ref + "," + outer.Ref})
	require.Len(t, res.Result.Extracted, 2)
	assert.Equal(t, output.Ref, res.Result.Extracted[0].Ref)
	require.NotNil(t, res.Result.Extracted[0].Value)
	assert.Equal(t, "clicked in frame", *res.Result.Extracted[0].Value)
	assert.Equal(t, "Outer", res.Result.Extracted[1].Text, "answered in the order asked")

	// A ref into a frame that is gone is stale: a failed result.
	failsWith(t, l, "browser.click", map[string]any{"ref": "@f999999e1"}, "take a new snapshot")
	failsWith(t, l, "browser.extract", map[string]any{"refs": outer.Ref + ",@f999999e1"}, "take a new snapshot")

	all := succeeds(t, l, "browser.extract", map[string]any{"refs": "all"})
	var refs []string
	for _, e := range all.Result.Extracted {
		refs = append(refs, e.Ref)
	}
	assert.Contains(t, refs, inner.Ref)
	assert.Contains(t, refs, outer.Ref)
}

// TestNativePageCannotDropRefs: an element whose id is a plausible name
// for the page agent's state, removed by the page, does not take the refs
// of the last snapshot with it.
func TestNativePageCannotDropRefs(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	s := open(t, fx, l, "/named")
	button := s.find(t, "button", "Remove it")
	succeeds(t, l, "browser.click", map[string]any{"ref": button.Ref})
	res := succeeds(t, l, "browser.extract", map[string]any{"refs": button.Ref})
	require.Len(t, res.Result.Extracted, 1)
	assert.Equal(t, "Removed", res.Result.Extracted[0].Text)
}

func TestNativeShadowDOM(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	s := open(t, fx, l, "/shadow")
	s.find(t, "heading", "Components")
	s.find(t, "button", "Closed button") // a closed shadow root is read too
	box := s.find(t, "textbox", "Shadow label")
	require.NotNil(t, box.Value, "aria-labelledby resolves inside the shadow root")
	assert.Equal(t, "in the shadow", *box.Value)
	assert.Contains(t, s.TextSnippets, "not yet")

	succeeds(t, l, "browser.click", map[string]any{"ref": s.find(t, "button", "Open button").Ref})
	succeeds(t, l, "browser.type", map[string]any{"ref": box.Ref, "text": "typed"})
	after := takeSnapshot(t, l)
	assert.Contains(t, after.TextSnippets, "open clicked")
	assert.NotEqual(t, s.DomHash, after.DomHash, "a change inside a shadow root changes the hash")
	box = after.find(t, "textbox", "Shadow label")
	res := succeeds(t, l, "browser.extract", map[string]any{"refs": box.Ref})
	require.Len(t, res.Result.Extracted, 1)
	require.NotNil(t, res.Result.Extracted[0].Value)
	assert.Equal(t, "typed", *res.Result.Extracted[0].Value)
}

// TestNativeFrameViewport: inViewport means the top-level viewport in
// frames too, for a frame of the same origin (whose position the page
// agent reads) and of another one (asked of an IntersectionObserver).
func TestNativeFrameViewport(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	for _, origin := range []string{"same", "cross"} {
		t.Run(origin, func(t *testing.T) {
			path := "/frames?low"
			if origin == "cross" {
				path += "&cross"
			}
			s := open(t, fx, l, path)
			inner := s.find(t, "button", "Inner button")
			assert.Positive(t, inner.FrameID)
			assert.False(t, inner.InViewport, "the frame is below the fold")
			assert.False(t, s.find(t, "textbox", "Output").InViewport)
			assert.Equal(t, "@e1", s.find(t, "heading", "Outer").Ref, "viewport first")
			visible := succeeds(t, l, "browser.extract", map[string]any{"refs": "visible"})
			for _, e := range visible.Result.Extracted {
				assert.NotEqual(t, inner.Ref, e.Ref, "visible leaves out what is below the fold")
			}

			succeeds(t, l, "browser.scroll", map[string]any{"direction": "bottom"})
			s = takeSnapshot(t, l)
			if origin == "cross" {
				// A cross-origin frame learns where the top-level viewport
				// is from the browser process, asynchronously: a snapshot
				// taken right after a scroll may still see the frame where
				// it was. It converges within a few frames.
				for deadline := time.Now().Add(10 * time.Second); !innerInView(s) && time.Now().Before(deadline); {
					time.Sleep(100 * time.Millisecond)
					s = takeSnapshot(t, l)
				}
			}
			assert.True(t, s.find(t, "button", "Inner button").InViewport, "scrolled into view")
			assert.False(t, s.find(t, "heading", "Outer").InViewport)
			assert.Equal(t, "Inner button", s.Nodes[0].Name, "viewport first")
		})
	}
	// A frame in view, from another origin.
	s := open(t, fx, l, "/frames?cross")
	assert.True(t, s.find(t, "button", "Inner button").InViewport)
}

func innerInView(s snapshot) bool {
	for _, n := range s.Nodes {
		if n.Role == "button" && n.Name == "Inner button" {
			return n.InViewport
		}
	}
	return false
}

func TestNativeNavigateWaitsForLoad(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	g := fx.site.arm()
	defer g.open()

	_, navigated := l.send(t, "browser.navigate", map[string]any{"url": fx.url("/slow")})
	<-g.started // the page is parsed; its image is held
	// A full round trip through the extension while the image is held: the
	// navigation must still be pending.
	var list []json.RawMessage
	l.result(t, "tasks.list", map[string]any{}, &list)
	select {
	case r := <-navigated:
		require.FailNow(t, "browser.navigate answered before the page finished loading", "%s", r.raw)
	default:
	}
	g.open()
	r := l.wait(t, navigated)
	require.Nil(t, r.Error, "%s", r.raw)
	select {
	case <-g.served:
	default:
		assert.Fail(t, "navigate answered before the image was served")
	}
	var nav struct {
		OK    bool   `json:"ok"`
		TabID int    `json:"tabId"`
		URL   string `json:"url"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &nav))
	assert.True(t, nav.OK)
	assert.NotZero(t, nav.TabID)
	assert.Equal(t, fx.url("/slow"), nav.URL)

	// A fragment change loads nothing: it is answered without waiting for
	// a load that never comes.
	var hashNav struct {
		URL string `json:"url"`
	}
	l.result(t, "browser.navigate", map[string]any{"url": fx.url("/slow#bottom")}, &hashNav)
	assert.Equal(t, fx.url("/slow#bottom"), hashNav.URL)

	bad := l.call(t, "browser.navigate", map[string]any{"url": "javascript:alert(1)"})
	require.NotNil(t, bad.Error, "an unsupported scheme is an error")
	assert.Contains(t, *bad.Error, "javascript:")
}

// TestNativeStalledLoad: a page whose load never ends (an image that
// never arrives) can still be driven. Commands wait a while for the load,
// then act on the page as it is, instead of failing after the 30 s a
// navigate may take.
func TestNativeStalledLoad(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)

	t.Run("after navigate", func(t *testing.T) {
		g := fx.site.arm()
		defer g.open()
		_, navigated := l.send(t, "browser.navigate", map[string]any{"url": fx.url("/slow")})
		<-g.started
		s := takeSnapshot(t, l)
		s.find(t, "heading", "Slow page")
		res := succeeds(t, l, "browser.extract", map[string]any{"refs": "visible"})
		require.NotEmpty(t, res.Result.Extracted)
		g.open()
		r := l.wait(t, navigated)
		require.Nil(t, r.Error, "%s", r.raw)
	})

	t.Run("after a click", func(t *testing.T) {
		s := open(t, fx, l, "/toslow")
		g := fx.site.arm()
		defer g.open()
		succeeds(t, l, "browser.click", map[string]any{"ref": s.find(t, "link", "Slow link").Ref})
		select {
		case <-g.started:
		default:
			assert.Fail(t, "the click answered before the next page asked for its image")
		}
		takeSnapshot(t, l).find(t, "heading", "Slow page")
	})
}

func TestNativeScreenshot(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	s := open(t, fx, l, "/controls")

	var shot struct {
		Kind    string `json:"kind"`
		DataURL string `json:"dataUrl"`
	}
	l.result(t, "browser.screenshot", map[string]any{}, &shot)
	assert.Equal(t, "screenshot", shot.Kind)
	const prefix = "data:image/jpeg;base64,"
	require.True(t, strings.HasPrefix(shot.DataURL, prefix), "%.40s", shot.DataURL)
	data, err := base64.StdEncoding.DecodeString(shot.DataURL[len(prefix):])
	require.NoError(t, err)
	img, err := jpeg.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Equal(t, s.Viewport.W, img.Bounds().Dx(), "the screenshot is the viewport's width")
	assert.Equal(t, s.Viewport.H, img.Bounds().Dy(), "the screenshot is the viewport's height")
}

func TestNativeActionEvents(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	open(t, fx, l, "/click")
	l.drainEvents()

	r := l.call(t, "browser.type", map[string]any{"ref": "@e1", "text": "secret words"})
	require.Nil(t, r.Error)
	// Events travel on the same port before the response, so they are all
	// here once it is.
	events := l.takeEvents()
	require.Len(t, events, 3, "task:update, task:step, task:update")
	var kinds []string
	var taskIDs []string
	for _, raw := range events {
		var e struct {
			Kind   string `json:"kind"`
			TaskID string `json:"taskId"`
			Task   struct {
				ID     string `json:"id"`
				Goal   string `json:"goal"`
				Status string `json:"status"`
			} `json:"task"`
			Step struct {
				Status   string `json:"status"`
				ToolCall struct {
					Name string `json:"name"`
				} `json:"toolCall"`
			} `json:"step"`
		}
		require.NoError(t, json.Unmarshal(raw, &e))
		kinds = append(kinds, e.Kind)
		if e.Kind == "task:update" {
			assert.Equal(t, "External Agent", e.Task.Goal)
			taskIDs = append(taskIDs, e.Task.ID)
		} else {
			taskIDs = append(taskIDs, e.TaskID)
			assert.Equal(t, "browser.type", e.Step.ToolCall.Name)
			assert.Equal(t, "fail", e.Step.Status, "typing into a button fails")
		}
		assert.NotContains(t, string(raw), "secret words", "typed text stays out of events")
	}
	assert.Equal(t, []string{"task:update", "task:step", "task:update"}, kinds)
	assert.Equal(t, taskIDs[0], taskIDs[1])
	assert.Equal(t, taskIDs[0], taskIDs[2])
}

func TestNativeErrors(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	for _, typ := range []string{"browser.fly", "nope.x", ""} {
		r := l.call(t, typ, map[string]any{})
		require.NotNil(t, r.Error, "%s", r.raw)
		assert.Equal(t, "Unknown bridge request: "+typ, *r.Error)
	}
	r := l.call(t, "browser.snapshot", map[string]any{"tabId": 123456789})
	require.NotNil(t, r.Error)
	assert.Contains(t, *r.Error, "123456789")
	// A payload that is not an object reads as {}.
	r = l.call(t, "tasks.list", []int{1, 2})
	assert.Nil(t, r.Error, "%s", r.raw)
}

func TestNativeRequestsRunConcurrently(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	open(t, fx, l, "/plain")
	var task struct {
		ID string `json:"id"`
	}
	l.result(t, "tasks.start", map[string]any{"goal": "confirm hold on"}, &task)
	// tasks.wait blocks until the task settles; a snapshot sent after it
	// still answers first.
	_, waiting := l.send(t, "tasks.wait", map[string]any{"id": task.ID, "timeoutMs": 30000})
	takeSnapshot(t, l)
	var stopped struct {
		OK bool `json:"ok"`
	}
	l.result(t, "tasks.stop", map[string]any{"id": task.ID}, &stopped)
	assert.True(t, stopped.OK)
	r := l.wait(t, waiting)
	require.Nil(t, r.Error)
}

func TestNativeDropPortStartsANewHost(t *testing.T) {
	fx := getFixture(t)
	old := fx.native(t)
	oldPid := old.conn.Pid
	require.True(t, browsertest.ProcessAlive(oldPid))
	require.Equal(t, []int{oldPid}, fx.browser.HostPids())

	r := old.call(t, "debug.dropNativePort", map[string]any{})
	require.Nil(t, r.Error)
	// The relay host closes its socket only when its standard input ends.
	<-old.done
	assert.ErrorIs(t, old.readErr, io.EOF)
	waitGone(t, oldPid)

	l := fx.nextHost(t)
	assert.NotEqual(t, oldPid, l.conn.Pid, "a new host process")
	assert.True(t, browsertest.ProcessAlive(l.conn.Pid))
	assert.Equal(t, []int{l.conn.Pid}, fx.browser.HostPids(), "only the new host runs")
	s := open(t, fx, l, "/plain")
	s.find(t, "heading", "Plain page")
}

// TestServiceWorkerStopped: Chrome stops an extension's service worker
// when it thinks it idle, and everything in its memory goes. The
// extension's alarm (every second here, 30 s by default) starts it again,
// and it connects both sides anew.
func TestServiceWorkerStopped(t *testing.T) {
	fx := getFixture(t)
	old := fx.native(t)
	fx.hub.current(t)
	n := fx.hub.count()

	require.NoError(t, fx.browser.StopExtensionWorker(t.Context()))
	select {
	case <-old.done: // the port closed with the worker: the host saw EOF
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the native port outlived the service worker")
	}
	waitGone(t, old.conn.Pid)

	l := fx.nextHost(t)
	open(t, fx, l, "/plain").find(t, "heading", "Plain page")
	c := fx.hub.next(t, n)
	assert.Equal(t, "Plain", hubOpen(t, fx, c, "/plain")["title"])
}

// waitGone waits up to 10 s for process pid to exit.
func waitGone(t testing.TB, pid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, browsertest.WaitExit(ctx, pid), "process %d is still running", pid)
}
