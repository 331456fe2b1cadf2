package webagents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// CheckReport is the checker's verdict on a live site.
type CheckReport struct {
	// URL is the page URL that was checked.
	URL string `json:"url"`
	// Valid is true when there are no problems (warnings are allowed).
	Valid bool `json:"valid"`
	// Problems break the rules; Warnings are quirks worth fixing.
	Problems []Problem `json:"problems"`
	Warnings []Problem `json:"warnings"`
	// Documents lists each request the checker made.
	Documents []DocumentReport `json:"documents"`
	// Endpoint is the resolved endpoint URL, when a manifest was found.
	Endpoint string `json:"endpoint,omitempty"`
	// ActionsInScope are the names of the actions in scope for URL's path.
	ActionsInScope []string `json:"actionsInScope"`
}

// DocumentReport is one request of the checker.
type DocumentReport struct {
	Method      string `json:"method"`
	URL         string `json:"url"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType,omitempty"`
	Error       string `json:"error,omitempty"`
}

func (r *CheckReport) problem(path, format string, args ...any) {
	r.Problems = append(r.Problems, Problem{path, fmt.Sprintf(format, args...)})
}

func (r *CheckReport) warning(path, format string, args ...any) {
	r.Warnings = append(r.Warnings, Problem{path, fmt.Sprintf(format, args...)})
}

// Check smoke-tests a live site without running any action: it never sends
// a POST. It fetches both discovery paths with GET and HEAD and checks that
// both are served with status 200 and the right MIME types (HEAD matching
// GET), that the markdown holds exactly one fenced manifest, that both
// manifests are valid and equal as parsed JSON, that the endpoint resolves
// to the URL's origin, and which actions are in scope for the URL's path
// (none is a warning). It returns an error only for a URL that is not
// http(s) or when ctx ends.
//
// When ctx has no deadline, Check is bounded by c.CheckTimeout
// ([DefaultCheckTimeout]); requests that do not finish in time are reported
// as problems.
func (c *Client) Check(ctx context.Context, pageURL string) (*CheckReport, error) {
	page, err := parsePageURL(pageURL)
	if err != nil {
		return nil, err
	}
	caller := ctx
	ctx, cancel := withDefaultTimeout(ctx, c.CheckTimeout, DefaultCheckTimeout)
	defer cancel()
	origin := originOf(page)
	hc := c.sameOriginClient(origin)
	rep := &CheckReport{URL: page.String(), Problems: []Problem{}, Warnings: []Problem{}, ActionsInScope: []string{}}
	docs := []struct {
		path, mediaType string
	}{{MarkdownPath, "text/markdown"}, {WellKnownPath, "application/json"}}
	var manifests [2]*Manifest
	var raws [2][]byte
	for i, doc := range docs {
		target := origin + doc.path
		get, err := c.fetch(ctx, hc, http.MethodGet, target, maxUTF8Bytes(MaxDocumentChars))
		if caller.Err() != nil {
			return nil, caller.Err()
		}
		if err != nil {
			err = ended(ctx, err)
		}
		rep.record(http.MethodGet, target, get, err)
		head, herr := c.fetch(ctx, hc, http.MethodHead, target, 0)
		if caller.Err() != nil {
			return nil, caller.Err()
		}
		if herr != nil {
			herr = ended(ctx, herr)
		}
		rep.record(http.MethodHead, target, head, herr)
		where := "GET " + doc.path
		if err != nil {
			rep.problem(where, "request failed: %v", fetchErrorText(err))
			continue
		}
		if get.Redirected {
			rep.warning(where, "redirected to %s; serve the document at its path", truncate(get.FinalURL, 200))
		}
		if get.Status != http.StatusOK {
			rep.problem(where, "status %d; the document must be served with 200", get.Status)
			continue
		}
		checkMediaType(rep, where, get.ContentType, doc.mediaType)
		if herr != nil {
			rep.problem("HEAD "+doc.path, "request failed: %v", fetchErrorText(herr))
		} else {
			if head.Status != get.Status {
				rep.problem("HEAD "+doc.path, "status %d differs from GET's %d", head.Status, get.Status)
			}
			if head.ContentType != get.ContentType {
				rep.problem("HEAD "+doc.path, "Content-Type %q differs from GET's %q", truncate(head.ContentType, 80), truncate(get.ContentType, 80))
			}
			if cl := head.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(get.Body)) && !get.TooLarge {
				rep.warning("HEAD "+doc.path, "Content-Length %s differs from the GET body's %d bytes", truncate(cl, 20), len(get.Body))
			}
		}
		if get.TooLarge {
			rep.problem(where, "document exceeds %d characters", MaxDocumentChars)
			continue
		}
		raw, warnings, err := extractManifest(get.Body, true)
		if err == nil && doc.path == WellKnownPath && !bytes.HasPrefix(bytes.TrimSpace(get.Body), []byte("{")) {
			err = &ValidationError{Problems: []Problem{{Path: "document", Message: "must be raw JSON"}}}
		}
		if err == nil && doc.path == MarkdownPath && bytes.HasPrefix(bytes.TrimSpace(get.Body), []byte("{")) {
			rep.warning(where, "is raw JSON; a markdown document with one ```webagents block is expected here")
		}
		var m *Manifest
		if err == nil {
			m, err = parseManifest(raw, &ParseOptions{BaseURL: page.String(), Strict: true}, warnings)
		}
		var ve *ValidationError
		switch {
		case errors.As(err, &ve):
			for _, p := range ve.Problems {
				rep.problem(doc.path+" "+p.Path, "%s", p.Message)
			}
			continue
		case errors.Is(err, ErrNoManifest):
			rep.problem(where, "holds no manifest: neither raw JSON nor one ```webagents fenced block")
			continue
		case err != nil:
			rep.problem(where, "%v", err)
			continue
		}
		for _, w := range m.Warnings {
			rep.warning(doc.path+" "+w.Path, "%s", w.Message)
		}
		manifests[i], raws[i] = m, raw
	}
	if manifests[0] != nil && manifests[1] != nil && !sameJSON(raws[0], raws[1]) {
		rep.problem(WellKnownPath, "the manifest differs from the one in %s (compared as parsed JSON)", MarkdownPath)
	}
	m := manifests[0]
	if m == nil {
		m = manifests[1]
	}
	if m != nil {
		if u, err := resolveEndpoint(page, m.Workflow.Endpoint); err == nil {
			rep.Endpoint = u.String()
		}
		for _, a := range m.ActionsFor(page.EscapedPath()) {
			rep.ActionsInScope = append(rep.ActionsInScope, a.Name)
		}
		if len(rep.ActionsInScope) == 0 {
			rep.warning("$.actions", "no action is in scope for %s", truncate(page.EscapedPath(), 200))
		}
	}
	rep.Valid = len(rep.Problems) == 0
	return rep, nil
}

func (r *CheckReport) record(method, target string, f *fetched, err error) {
	d := DocumentReport{Method: method, URL: target}
	if err != nil {
		d.Error = fetchErrorText(err)
	} else {
		d.Status, d.ContentType = f.Status, f.ContentType
	}
	r.Documents = append(r.Documents, d)
}

func fetchErrorText(err error) string {
	switch {
	case errors.Is(err, ErrUnsafeRedirect):
		return "redirected to another origin (unsafe)"
	case errors.Is(err, ErrTooManyRedirects):
		return "more than " + strconv.Itoa(MaxRedirects) + " redirects"
	}
	return truncate(err.Error(), 200)
}

func checkMediaType(rep *CheckReport, where, contentType, want string) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != want {
		rep.problem(where, "Content-Type is %q; want %s", truncate(contentType, 80), want)
		return
	}
	cs, ok := params["charset"]
	switch {
	case ok && !strings.EqualFold(cs, "utf-8"):
		rep.problem(where, "charset is %q; want utf-8", truncate(cs, 40))
	case !ok && want == "text/markdown":
		rep.warning(where, "Content-Type has no charset; send text/markdown; charset=utf-8")
	}
}

// sameJSON compares two JSON documents as parsed values, the way a
// JavaScript client would (numbers as float64).
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
