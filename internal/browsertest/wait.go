package browsertest

import (
	"context"
	"time"
)

// WaitExit waits until process pid has exited, or ctx ends. It works for
// any process, not only children of the caller (a native host is
// Chromium's child), by checking every 10 ms.
func WaitExit(ctx context.Context, pid int) error {
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	for ProcessAlive(pid) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
	return nil
}
