package mcptools

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// KeepToolOrder makes tools/list of s list the named tools in the order of
// the calls and of names: the go-sdk lists tools by name, and an agent
// configured for the reference server expects its catalogue's order.
// [AddBridgeTools], [AddHubTools] and [Sites.AddTools] call it for the tools
// they register, so those come first in that order; tools named in no call
// follow, by name. Pagination is unchanged (each page is reordered within
// itself; the SDK's default page holds 1,000 tools). KeepToolOrder is safe
// for concurrent use.
func KeepToolOrder(s *mcp.Server, names ...string) {
	key := weak.Make(s)
	v, loaded := toolOrders.LoadOrStore(key, &toolOrder{rank: map[string]int{}})
	order := v.(*toolOrder)
	if !loaded {
		// The entry goes with the server; the middleware holds the order,
		// not the server.
		runtime.AddCleanup(s, func(k weak.Pointer[mcp.Server]) { toolOrders.Delete(k) }, key)
		s.AddReceivingMiddleware(order.middleware)
	}
	order.add(names)
}

// toolOrders holds each server's order, by a weak pointer to the server.
var toolOrders sync.Map // weak.Pointer[mcp.Server] → *toolOrder

// toolOrder is the rank of each named tool of one server.
type toolOrder struct {
	mu   sync.Mutex
	rank map[string]int
}

func (o *toolOrder) add(names []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range names {
		if _, ok := o.rank[n]; !ok {
			o.rank[n] = len(o.rank)
		}
	}
}

func (o *toolOrder) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
			o.sort(list.Tools)
		}
		return res, err
	}
}

// sort orders tools (a fresh slice the SDK made for this response) by rank,
// the unranked after them in the order they came.
func (o *toolOrder) sort(tools []*mcp.Tool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	rank := func(t *mcp.Tool) int {
		if r, ok := o.rank[t.Name]; ok {
			return r
		}
		return len(o.rank)
	}
	slices.SortStableFunc(tools, func(a, b *mcp.Tool) int { return rank(a) - rank(b) })
}
