package fakeext

import (
	"encoding/base64"
	"fmt"
	"sync"
)

// Browser is a scripted browser for OnCommand: it keeps a list of tabs
// (the first controlled), pages by URL, and the values typed into
// selectors. Its methods are safe for concurrent use.
type Browser struct {
	mu     sync.Mutex
	tabs   []Tab
	Pages  map[string]Page   // by URL; unknown URLs get a title "Page <url>"
	Values map[string]string // selector → typed value
	Clicks []string          // selectors clicked, in order
	Image  []byte            // screenshot bytes; default a tiny PNG header
}

// Page is the content of a scripted URL.
type Page struct {
	Title string
	Text  map[string]string // selector ("" for body) → innerText
}

// NewBrowser returns a browser with one blank tab.
func NewBrowser() *Browser {
	return &Browser{
		tabs:   []Tab{{Index: 0, URL: "about:blank", Title: "", Active: true}},
		Pages:  map[string]Page{},
		Values: map[string]string{},
		Image:  []byte("\x89PNG\r\n\x1a\nfake"),
	}
}

// Handle answers one command; use it as Options.OnCommand.
func (b *Browser) Handle(cmd Command) *Result {
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
		b.Clicks = append(b.Clicks, cmd.Selector)
		return &Result{URL: cur.URL, Title: cur.Title}
	case "type":
		b.Values[cmd.Selector] = cmd.Text
		return &Result{URL: cur.URL, Title: cur.Title}
	case "read":
		p, ok := b.Pages[cur.URL]
		text, found := p.Text[cmd.Selector]
		if !ok || !found {
			if cmd.Selector != "" {
				return &Result{Error: fmt.Sprintf("no element matches selector %s", cmd.Selector)}
			}
		}
		return &Result{URL: cur.URL, Title: cur.Title, Content: text}
	case "screenshot":
		return &Result{URL: cur.URL, Title: cur.Title, Image: base64.StdEncoding.EncodeToString(b.Image), ImageMIMEType: "image/png"}
	case "tabs":
		return &Result{Tabs: append([]Tab(nil), b.tabs...)}
	default:
		return &Result{Error: "unknown action " + cmd.Action}
	}
}

// OpenTab adds a background tab.
func (b *Browser) OpenTab(url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tabs = append(b.tabs, Tab{Index: len(b.tabs), URL: url, Title: b.titleOf(url)})
}

func (b *Browser) titleOf(url string) string {
	if p, ok := b.Pages[url]; ok {
		return p.Title
	}
	return "Page " + url
}
