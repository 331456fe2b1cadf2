package shop

import (
	"fmt"

	"github.com/agentbridge/agentbridge/webagents"
)

// manifestTemplate is the shop's manifest; the pacing is filled in.
const manifestTemplate = `{
  "version": "0.1",
  "workflow": {
    "endpoint": "/api/agent/workflow",
    "maxOperations": 16,
    "parallel": %t,
    "references": true,
    "pacing": {"minIntervalMs": %d, "maxConcurrency": %d}
  },
  "actions": {
    "catalog.search": {
      "description": "Search the catalog by words in the product name. productId is set when exactly one product matches.",
      "effect": "read",
      "inputSchema": {"type": "object", "additionalProperties": false, "required": ["query"],
        "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 200}}}
    },
    "catalog.product": {
      "description": "Get one product by productId.",
      "effect": "read",
      "inputSchema": {"type": "object", "additionalProperties": false, "required": ["productId"],
        "properties": {"productId": {"type": "string", "maxLength": 64}}}
    },
    "account.signUp": {
      "description": "Create an account and sign this session in. Passwords are 8 to 128 characters.",
      "effect": "write",
      "inputSchema": {"type": "object", "additionalProperties": false, "required": ["email", "password"],
        "properties": {"email": {"type": "string", "maxLength": 254}, "password": {"type": "string", "minLength": 8, "maxLength": 128}}}
    },
    "account.signIn": {
      "description": "Sign this session in.",
      "effect": "write",
      "inputSchema": {"type": "object", "additionalProperties": false, "required": ["email", "password"],
        "properties": {"email": {"type": "string", "maxLength": 254}, "password": {"type": "string", "maxLength": 128}}}
    },
    "account.signOut": {
      "description": "Sign this session out.",
      "effect": "write",
      "inputSchema": {"type": "object", "additionalProperties": false}
    },
    "account.me": {
      "description": "Whether this session is signed in, and as whom.",
      "effect": "read",
      "inputSchema": {"type": "object", "additionalProperties": false}
    },
    "cart.add": {
      "pathPrefixes": ["/products", "/cart", "/orders"],
      "description": "Add a productId to the signed-in user's cart (quantity 1 to 99, default 1).",
      "effect": "write",
      "inputSchema": {"type": "object", "additionalProperties": false, "required": ["productId"],
        "properties": {"productId": {"type": "string", "maxLength": 64}, "quantity": {"type": "integer", "minimum": 1, "maximum": 99}}}
    },
    "cart.remove": {
      "pathPrefixes": ["/products", "/cart", "/orders"],
      "description": "Remove a productId from the signed-in user's cart.",
      "effect": "write",
      "inputSchema": {"type": "object", "additionalProperties": false, "required": ["productId"],
        "properties": {"productId": {"type": "string", "maxLength": 64}}}
    },
    "cart.state": {
      "pathPrefixes": ["/products", "/cart", "/orders"],
      "description": "The signed-in user's cart, for verification.",
      "effect": "read",
      "inputSchema": {"type": "object", "additionalProperties": false}
    },
    "order.place": {
      "pathPrefixes": ["/products", "/cart", "/orders"],
      "description": "Place an order for everything in the cart. This cannot be undone.",
      "effect": "irreversible",
      "inputSchema": {"type": "object", "additionalProperties": false}
    },
    "order.list": {
      "pathPrefixes": ["/products", "/cart", "/orders"],
      "description": "The signed-in user's orders, newest first.",
      "effect": "read",
      "inputSchema": {"type": "object", "additionalProperties": false}
    }
  }
}`

func buildManifest(p webagents.Pacing) (*webagents.Manifest, error) {
	doc := fmt.Sprintf(manifestTemplate, p.MaxConcurrency > 1, p.MinIntervalMs, p.MaxConcurrency)
	return webagents.ParseManifest([]byte(doc), nil)
}
