package httpapi_test

import "github.com/agentbridge/agentbridge/agentproto/internal/testbridge"

// The bridges the tests start, shared with the other packages' tests.
var (
	newBridge    = testbridge.New
	strictBridge = testbridge.Strict
)

type errorString = testbridge.ErrorString
