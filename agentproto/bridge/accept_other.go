//go:build !unix

package bridge

// temporaryAcceptErrnos are Accept errors that leave the listener usable;
// elsewhere the platform's own Temporary classification applies.
var temporaryAcceptErrnos []error
