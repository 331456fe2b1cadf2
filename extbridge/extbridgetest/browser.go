package extbridgetest

import (
	"context"
	"encoding/base64"
	"slices"
	"sync"
)

// Browser is a scripted browser, a [BrowserHandler] for Options.Browser: it
// keeps a list of tabs (the first is the controlled one), page titles and
// texts by URL, the values typed into selectors and the selectors clicked.
// Its methods are safe for concurrent use.
type Browser struct {
	mu     sync.Mutex
	tabs   []Tab
	pages  map[string]Page
	values map[string]string
	clicks []string
	enters []string
	image  []byte
}

// Page is the content of a scripted URL.
type Page struct {
	Title string
	Text  map[string]string // selector ("" for the body) → innerText
}

// NewBrowser returns a browser with one blank tab and a tiny PNG as its
// screenshot.
func NewBrowser() *Browser {
	return &Browser{
		tabs:   []Tab{{Index: 0, URL: "about:blank", Active: true}},
		pages:  map[string]Page{},
		values: map[string]string{},
		image:  []byte("\x89PNG\r\n\x1a\nfake"),
	}
}

// SetPage scripts the page at url. An unscripted URL is titled
// "Page <url>" and has no text.
func (b *Browser) SetPage(url string, p Page) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pages[url] = p
}

// SetImage sets the bytes a screenshot returns.
func (b *Browser) SetImage(data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.image = slices.Clone(data)
}

// Image returns the bytes a screenshot returns.
func (b *Browser) Image() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.image)
}

// OpenTab adds a background tab showing url.
func (b *Browser) OpenTab(url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tabs = append(b.tabs, Tab{Index: len(b.tabs), URL: url, Title: b.titleOf(url)})
}

// Clicks returns the selectors clicked, in order.
func (b *Browser) Clicks() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.clicks)
}

// Enters returns the selectors of the type commands that pressed Enter,
// in order.
func (b *Browser) Enters() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.enters)
}

// Value returns the text last typed into selector.
func (b *Browser) Value(selector string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.values[selector]
}

// HandleCommand answers one browser command as a browser would: navigate
// changes the controlled tab, read returns the scripted text (an error for
// an unknown selector), screenshot the image, tabs the tabs; unknown
// actions fail.
func (b *Browser) HandleCommand(_ context.Context, cmd *Command) *Result {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := &b.tabs[0]
	switch cmd.Action {
	case "navigate":
		if cmd.URL == "" {
			return &Result{Error: "navigate: missing url"}
		}
		cur.URL = cmd.URL
		cur.Title = b.titleOf(cmd.URL)
		return &Result{URL: cur.URL, Title: cur.Title}
	case "click":
		b.clicks = append(b.clicks, cmd.Selector)
		return &Result{URL: cur.URL, Title: cur.Title}
	case "type":
		b.values[cmd.Selector] = cmd.Text
		if cmd.PressEnter {
			b.enters = append(b.enters, cmd.Selector)
		}
		return &Result{URL: cur.URL, Title: cur.Title}
	case "read":
		text, found := b.pages[cur.URL].Text[cmd.Selector]
		if !found && cmd.Selector != "" {
			return &Result{Error: "no element matches selector " + cmd.Selector}
		}
		return &Result{URL: cur.URL, Title: cur.Title, Content: text}
	case "screenshot":
		return &Result{URL: cur.URL, Title: cur.Title, Image: base64.StdEncoding.EncodeToString(b.image), ImageMIMEType: "image/png"}
	case "tabs":
		return &Result{Tabs: slices.Clone(b.tabs)}
	default:
		return &Result{Error: "unknown action " + cmd.Action}
	}
}

func (b *Browser) titleOf(url string) string {
	if p, ok := b.pages[url]; ok {
		return p.Title
	}
	return "Page " + url
}
