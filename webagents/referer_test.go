package webagents

import (
	"net/url"
	"testing"
)

// FuzzPlainRefererPath checks pagePath's fast path against url.Parse: when
// it takes a Referer, the path is the one the parse gives.
func FuzzPlainRefererPath(f *testing.F) {
	for _, ref := range []string{"/catalog", "/a/b-c_d.e~f", "//x", "/%41", "/a?q", "/é", "", ":8080/x", "/A/./../b"} {
		f.Add("https://shop.example", ref)
	}
	f.Add("http://[::1]:8080", "/x")
	f.Add("http://127.0.0.1:8765", "/catalog")
	f.Fuzz(func(t *testing.T, origin, rest string) {
		o, err := ParseOrigin(origin)
		if err != nil {
			return
		}
		h := &Handler{origin: o}
		if u, err := url.Parse(o + "/"); err == nil && originOf(u) == o {
			h.plainReferer = true
		}
		ref := o + rest
		path, ok := h.plainRefererPath(ref)
		if !ok {
			return
		}
		u, err := url.Parse(ref)
		if err != nil || originOf(u) != o || u.EscapedPath() != path {
			t.Fatalf("plainRefererPath(%q) = %q; url.Parse: %v %v", ref, path, u, err)
		}
	})
}
