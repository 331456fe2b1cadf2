package webagents

import "net/http"

// NewHTTPClient returns the HTTP client a [Client] uses when its HTTPClient
// is nil, with jar (nil: no cookies) as its cookie jar. Its transport is the
// one such clients share: the standard transport with response headers
// capped at [MaxResponseHeaderBytes], 1xx informational responses (such as
// 103 Early Hints) included. Give it to Client.HTTPClient to keep cookies
// without losing those limits.
func NewHTTPClient(jar http.CookieJar) *http.Client {
	return &http.Client{Transport: defaultTransport(), Jar: jar}
}
