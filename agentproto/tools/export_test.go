package tools

// Limits that are facts rather than options, for the tests.
const (
	MaxArgumentsSize   = maxArgumentsSize
	MaxStructuredDepth = maxStructuredDepth
)
