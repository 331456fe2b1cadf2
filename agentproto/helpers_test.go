package agentproto_test

import "github.com/agentbridge/agentbridge/agentproto/internal/testbridge"

// The bridges the tests start, shared with the other packages' tests.
var (
	newBridge       = testbridge.New
	recordingBridge = testbridge.Recording
)
