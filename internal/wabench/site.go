// Package wabench measures the server CPU a [webagents.Handler] spends per
// batch against a bare net/http handler (the floor): each server runs in
// a process of its own, the load generator in the benchmark's, and the CPU
// is read by the server process itself (getrusage), so the figures hold
// the HTTP stack, the runtime and the garbage collector, and nothing of
// the client's.
//
// The site is the Node bench site's (kowo-co/betterwright-bench,
// bench/sites/webagents-demo): search, get_product and set_highlight,
// and the batch search → get_product and set_highlight, both with a $ref
// to the search result.
package wabench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge/internal/jsonstr"
	"github.com/agentbridge/agentbridge/webagents"
)

// Batch is the body every client posts.
const Batch = `{"version":"0.1","operations":[` +
	`{"id":"find","action":"search","input":{"query":"keyboard"}},` +
	`{"id":"product","action":"get_product","input":{"productId":{"$ref":"find.results.0.id"}}},` +
	`{"id":"highlight","action":"set_highlight","input":{"productId":{"$ref":"find.results.0.id"}}}]}`

// Path is the workflow endpoint; Page is the page the batch is sent from
// (its Referer), which the actions are scoped to.
const (
	Path = "/api/agent/workflow"
	Page = "/catalog"
)

// manifestJSON is the Node bench site's manifest with its pacing's interval
// at 0 (at 50 ms a batch takes 100 ms and measures the clock, not the CPU).
const manifestJSON = `{"version":"0.1","workflow":{"endpoint":"/api/agent/workflow","maxOperations":16,
"parallel":true,"references":true,"pacing":{"minIntervalMs":0,"maxConcurrency":2}},
"actions":{
 "search":{"description":"Search the product catalog by query string","effect":"read","pathPrefixes":["/catalog"],
  "inputSchema":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]},
  "outputSchema":{"type":"object","properties":{"results":{"type":"array","items":{"type":"object",
   "properties":{"id":{"type":"string"},"name":{"type":"string"},"price":{"type":"number"}}}}}}},
 "get_product":{"description":"Fetch one product by id","effect":"read","pathPrefixes":["/catalog"],
  "inputSchema":{"type":"object","properties":{"productId":{"type":"string"}},"required":["productId"]}},
 "set_highlight":{"description":"Highlight a product on the page (write; refreshes UI)","effect":"write","pathPrefixes":["/catalog"],
  "inputSchema":{"type":"object","properties":{"productId":{"type":"string"}},"required":["productId"]}}}}`

type product struct {
	id, name, category string
	price              float64
	stock              int
	json               []byte // {"id":…,"name":…,"price":…,"category":…}
}

var catalog = func() []product {
	list := []product{
		{id: "kb-1", name: "Wireless Keyboard", price: 49.99, stock: 12, category: "peripherals"},
		{id: "ms-2", name: "Ergonomic Mouse", price: 29.5, stock: 40, category: "peripherals"},
		{id: "hd-3", name: "USB-C Hub", price: 39.0, stock: 8, category: "adapters"},
		{id: "mn-4", name: "27-inch Monitor", price: 249.0, stock: 5, category: "displays"},
		{id: "cb-5", name: "Braided Cable", price: 12.0, stock: 100, category: "adapters"},
	}
	for i := range list {
		p := &list[i]
		b := append([]byte(`{"id":`), jsonstr.Append(nil, p.id, true)...)
		b = append(b, `,"name":`...)
		b = jsonstr.Append(b, p.name, true)
		b = append(b, `,"price":`...)
		b = strconv.AppendFloat(b, p.price, 'f', -1, 64)
		b = append(b, `,"category":`...)
		b = jsonstr.Append(b, p.category, true)
		p.json = append(b, '}')
	}
	return list
}()

// Site returns the bench site's Handler at origin, with store for keyed
// requests (nil: the memory store with room for a benchmark's keys) and
// an idempotency window of 10 s, so that the store holds the keys of the
// last seconds only, as a site's store in its steady state does.
func Site(origin string, store webagents.IdempotencyStore) (*webagents.Handler, error) {
	m, err := webagents.ParseManifest([]byte(manifestJSON), &webagents.ParseOptions{BaseURL: origin + Page})
	if err != nil {
		return nil, err
	}
	if store == nil {
		store = webagents.NewMemoryIdempotencyStore(&webagents.MemoryIdempotencyStoreOptions{
			MaxEntries: 1 << 20, MaxClientEntries: 1 << 20, MaxBytes: 1 << 30, MaxClientBytes: 1 << 30})
	}
	var highlight atomic.Pointer[string]
	return webagents.NewHandler(m, map[string]webagents.ActionHandler{
		"search": webagents.ActionFunc(func(_ context.Context, req *webagents.ActionRequest) (any, error) {
			var in struct {
				Query string `json:"query"`
			}
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			q := strings.ToLower(in.Query)
			out := append(make([]byte, 0, 256), `{"results":[`...)
			n := 0
			for i := range catalog {
				p := &catalog[i]
				if strings.Contains(strings.ToLower(p.name), q) || strings.Contains(p.category, q) || strings.Contains(p.id, q) {
					if n > 0 {
						out = append(out, ',')
					}
					out = append(out, p.json...)
					n++
				}
			}
			return json.RawMessage(append(out, "]}"...)), nil
		}),
		"get_product": webagents.ActionFunc(func(_ context.Context, req *webagents.ActionRequest) (any, error) {
			var in struct {
				ProductID string `json:"productId"`
			}
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			for i := range catalog {
				if catalog[i].id == in.ProductID {
					return json.RawMessage(append(append([]byte(`{"product":`), catalog[i].json...), '}')), nil
				}
			}
			return json.RawMessage(`{"product":null}`), nil
		}),
		"set_highlight": webagents.ActionFunc(func(_ context.Context, req *webagents.ActionRequest) (any, error) {
			var in struct {
				ProductID string `json:"productId"`
			}
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			highlight.Store(&in.ProductID)
			out := append([]byte(`{"ok":true,"highlightId":`), jsonstr.Append(nil, in.ProductID, true)...)
			return json.RawMessage(append(out, '}')), nil
		}),
	}, &webagents.HandlerOptions{
		Origin:            origin,
		IdempotencyStore:  store,
		IdempotencyWindow: 10 * time.Second,
	})
}

// Floor returns the floor: a bare net/http handler that reads the body and
// writes the response the Handler h gives the bench batch, as fixed bytes.
func Floor(origin string, h http.Handler) (http.Handler, error) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, NewRequest(context.Background(), origin, ""))
	if rec.Code != http.StatusOK {
		return nil, &StatusError{Status: rec.Code, Body: rec.Body.String()}
	}
	envelope := rec.Body.Bytes()
	length := strconv.Itoa(len(envelope))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf [4096]byte
		for {
			if _, err := r.Body.Read(buf[:]); err != nil {
				break
			}
		}
		hdr := w.Header()
		hdr.Set("Content-Type", "application/json")
		hdr.Set("Content-Length", length)
		_, _ = w.Write(envelope)
	}), nil
}

// NewRequest returns the bench batch's request to origin, with an
// Idempotency-Key header when key is not "".
func NewRequest(ctx context.Context, origin, key string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, origin+Path, bytes.NewReader([]byte(Batch)))
	if err != nil {
		panic("wabench: " + err.Error()) // a constant URL shape: cannot fail for a valid origin
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Referer", origin+Page)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return req
}

// StatusError is a response other than 200 to a bench batch.
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	return "wabench: status " + strconv.Itoa(e.Status) + ": " + strings.TrimSpace(e.Body)
}
