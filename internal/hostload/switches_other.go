//go:build !unix

package hostload

import "os"

// voluntarySwitches is unknown on this system.
func voluntarySwitches(*os.ProcessState) int64 { return -1 }
