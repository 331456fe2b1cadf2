// Package loopback tells loopback host names, for the HTTP API's Host
// check and for the configuration's HTTP host.
package loopback

import (
	"net"
	"strings"
)

// Host reports whether a Host header names this machine by a loopback
// name or address.
func Host(host string) bool {
	if host == "" {
		return false
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}
