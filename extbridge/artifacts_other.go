//go:build !unix

package extbridge

// openNonblock is 0 where FIFOs cannot block an open.
const openNonblock = 0
