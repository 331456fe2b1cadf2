//go:build windows

package agentproto

import (
	"github.com/agentbridge/agentbridge/agentproto/internal/sockpath"
	"golang.org/x/sys/windows"
)

// The Windows ownership helpers the peer check shares with package
// bridge's listener, in internal/sockpath.
func currentUserSID() (*windows.SID, error) { return sockpath.CurrentUserSID() }

func openNoFollow(path string, access uint32) (windows.Handle, error) {
	return sockpath.OpenNoFollow(path, access)
}

func fileOwner(path string) (*windows.SID, error) { return sockpath.FileOwner(path) }
