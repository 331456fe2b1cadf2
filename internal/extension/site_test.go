package extension_test

import (
	"bytes"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"sync"
)

// site serves the pages the real-browser tests drive, on 127.0.0.1.
type site struct {
	mux *http.ServeMux

	mu   sync.Mutex
	gate *gate // holds /slow.png and /hang until released
}

// gate lets a test hold a response until it says so.
type gate struct {
	started chan struct{} // closed when the held request arrives
	release chan struct{} // closed by the test
	served  chan struct{} // closed once the held response was written
	once    sync.Once
}

func newSite() *site {
	s := &site{mux: http.NewServeMux()}
	pages := map[string]string{
		"/controls": controlsPage,
		"/click":    clickPage,
		"/form":     formPage,
		"/keys":     keysPage,
		"/long":     longPage,
		"/slow":     `<!doctype html><title>slow</title><h1>Slow page</h1><img src="/slow.png" alt="held">`,
		"/named": `<!doctype html><title>Named</title><div id="__agentbridge">page content</div>
<button onclick="document.getElementById('__agentbridge').remove(); this.textContent = 'Removed'">Remove it</button>`,
		"/toslow":  `<!doctype html><title>To slow</title><a href="/slow">Slow link</a>`,
		"/secrets": secretsPage,
		"/plain":   `<!doctype html><title>Plain</title><h1>Plain page</h1><p id="text">Nothing to see</p>`,
		"/shadow":  shadowPage,
		"/framed": `<!doctype html><title>Inner</title>
<button onclick="out.value = 'clicked in frame'">Inner button</button>
<input id="out" aria-label="Output" readonly>`,
	}
	for path, doc := range pages {
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.Write([]byte(doc))
		})
	}
	// /frames holds /framed, from the same origin or, with ?cross, from
	// another one (localhost instead of 127.0.0.1); with ?low, below the
	// fold.
	s.mux.HandleFunc("/frames", func(w http.ResponseWriter, r *http.Request) {
		src := "/framed"
		if r.URL.Query().Has("cross") {
			_, port, _ := net.SplitHostPort(r.Host)
			src = "http://localhost:" + port + "/framed"
		}
		spacer := ""
		if r.URL.Query().Has("low") {
			spacer = `<div style="height:3000px"></div>`
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintf(w, `<!doctype html><title>Frames</title><h1>Outer</h1>%s
<iframe src="%s" style="width:600px;height:200px;border:7px solid;padding:5px"></iframe>`, spacer, src)
	})
	s.mux.HandleFunc("/result", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!doctype html><title>Result</title><h1 id="result">You searched: ` +
			html.EscapeString(r.FormValue("q")) + `</h1>`))
	})
	s.mux.HandleFunc("/slow.png", func(w http.ResponseWriter, r *http.Request) {
		s.hold(w, r, "image/png", onePixelPNG())
	})
	s.mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		s.hold(w, r, "text/html", []byte(`<!doctype html><title>Released</title><p>released</p>`))
	})
	return s
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// arm makes the next /slow.png or /hang request wait for the gate.
func (s *site) arm() *gate {
	g := &gate{started: make(chan struct{}), release: make(chan struct{}), served: make(chan struct{})}
	s.mu.Lock()
	s.gate = g
	s.mu.Unlock()
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (s *site) hold(w http.ResponseWriter, r *http.Request, mime string, body []byte) {
	s.mu.Lock()
	g := s.gate
	s.gate = nil
	s.mu.Unlock()
	if g != nil {
		close(g.started)
		select {
		case <-g.release:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", mime)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(body)
	if g != nil {
		close(g.served)
	}
}

func onePixelPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 200, A: 255})
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

const controlsPage = `<!doctype html>
<html><head><title>Controls</title></head>
<body>
<h1>Sign up</h1>
<form id="f">
  <label for="email">Email address</label> <input id="email" name="email" type="email" value="ada@example.com" required>
  <label>Password <input name="pw" type="password" value="hunter2"></label>
  <label><input type="checkbox" name="news" checked> Newsletter</label>
  <select name="plan" aria-label="Plan"><option>Free</option><option selected>Pro</option></select>
  <input type="hidden" name="csrf" value="hidden-value">
  <button type="button" disabled>Disabled action</button>
  <button type="submit">Create account</button>
</form>
<a href="/plain">Terms of service</a>
<span id="lbl">Search the docs</span><input aria-labelledby="lbl" name="q">
<div style="display:none"><button>Invisible</button></div>
<div role="button" tabindex="0" aria-expanded="false">Menu</div>
<div style="height:3000px"></div>
<button id="far">Far below</button>
</body></html>`

const clickPage = `<!doctype html>
<html><head><title>Click</title></head>
<body>
<button id="inc" onclick="count.textContent = 'clicked ' + (++n)">Add one</button>
<p id="count">clicked 0</p>
<script>let n = 0;</script>
</body></html>`

const formPage = `<!doctype html>
<html><head><title>Search</title></head>
<body>
<form action="/result" method="get">
  <label>Query <input name="q" id="q"></label>
  <button type="submit">Search</button>
</form>
</body></html>`

const keysPage = `<!doctype html>
<html><head><title>Keys</title></head>
<body>
<input id="box" aria-label="Box">
<p id="log"></p>
<script>
document.addEventListener('keydown', (e) => {
  const mods = [e.ctrlKey && 'ctrl', e.shiftKey && 'shift', e.altKey && 'alt', e.metaKey && 'meta'].filter(Boolean);
  log.textContent += mods.concat(e.key).join('+') + '@' + (e.target.id || e.target.tagName.toLowerCase()) + ' ';
});
</script>
</body></html>`

const longPage = `<!doctype html>
<html><head><title>Long</title></head>
<body style="margin:0">
<h1>Top</h1>
<div style="height:5000px"></div>
<button id="bottom">Bottom button</button>
</body></html>`

const secretsPage = `<!doctype html>
<html><head><title>Secrets</title></head>
<body>
<h1>Account</h1>
<p>Public text</p>
<form id="f">
  <label>User <input name="username" value="alice-visible"></label>
  <input type="password" name="pw" value="S3CRET-password">
  <input name="login" autocomplete="current-password" value="S3CRET-current">
  <input name="fresh" autocomplete="new-password" value="S3CRET-new">
  <input name="code" autocomplete="one-time-code" value="S3CRET-otc">
  <input name="api_token" value="S3CRET-token">
  <input id="client-secret" value="S3CRET-secret">
  <input aria-label="Card number" value="S3CRET-card">
  <input name="cvc" value="S3CRET-cvc">
  <input name="otp" value="S3CRET-otp">
  <input name="passphrase" value="S3CRET-pass">
  <textarea name="notes">notes-visible</textarea>
  <label>Card type <select name="card_type"><option>Amex</option><option selected>S3CRET-select</option></select></label>
  <div contenteditable="true" id="secret-note" role="textbox">S3CRET-editable <b>S3CRET-bold</b></div>
  <div contenteditable="true" aria-label="Memo">memo-visible</div>
</form>
</body></html>`

// shadowPage holds controls in an open and in a closed shadow root.
const shadowPage = `<!doctype html>
<html><head><title>Shadow</title></head>
<body>
<h1>Components</h1>
<open-widget></open-widget>
<closed-widget></closed-widget>
<script>
customElements.define('open-widget', class extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: 'open' }).innerHTML =
      '<span id="lbl">Shadow label</span><input aria-labelledby="lbl" value="in the shadow">' +
      '<button onclick="this.getRootNode().getElementById(&quot;out&quot;).textContent = &quot;open clicked&quot;">Open button</button>' +
      '<p id="out">not yet</p>';
  }
});
customElements.define('closed-widget', class extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: 'closed' }).innerHTML = '<button>Closed button</button>';
  }
});
</script>
</body></html>`
