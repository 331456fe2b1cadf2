package agentproto

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/agentbridge/agentbridge/agentproto/internal/loopback"
	"github.com/agentbridge/agentbridge/agentproto/internal/sockpath"
)

// Defaults of the bridge's HTTP API address (package httpapi serves it).
const (
	// DefaultHTTPPort is the HTTP API's port when WEBOPERATOR_BRIDGE_PORT
	// is not set.
	DefaultHTTPPort = 8765
	// DefaultHTTPHost is the HTTP API's address when
	// WEBOPERATOR_BRIDGE_HOST is not set.
	DefaultHTTPHost = "127.0.0.1"
)

// Config is the bridge's configuration as the environment gives it (the
// browser passes its environment on to the host it starts).
type Config struct {
	// Token is WEBOPERATOR_API_TOKEN.
	Token string
	// AllowUnauthenticated is WEBOPERATOR_ALLOW_UNAUTHENTICATED_BRIDGE=1
	// (exactly "1").
	AllowUnauthenticated bool
	// SocketPath is WEBOPERATOR_AGENT_SOCKET, else [PlatformSocketPath]().
	SocketPath string
	// HTTPHost is WEBOPERATOR_BRIDGE_HOST, else [DefaultHTTPHost]. Only
	// loopback addresses are accepted.
	HTTPHost string
	// HTTPPort is WEBOPERATOR_BRIDGE_PORT, else [DefaultHTTPPort].
	HTTPPort int
}

// HTTPAddr returns HTTPHost:HTTPPort.
func (c Config) HTTPAddr() string {
	return net.JoinHostPort(c.HTTPHost, strconv.Itoa(c.HTTPPort))
}

// ClientOptions returns new client options with the configured token,
// for [Dial] with c.SocketPath.
func (c Config) ClientOptions() *ClientOptions {
	return &ClientOptions{Token: c.Token}
}

// ConfigFromEnv reads the configuration with getenv (nil means
// os.Getenv). It refuses a malformed port and an HTTP host that is not a
// loopback address or localhost.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Config{
		Token:                getenv(EnvToken),
		AllowUnauthenticated: getenv(EnvAllowUnauthenticated) == "1",
		SocketPath:           getenv(EnvSocket),
		HTTPHost:             getenv(EnvBridgeHost),
		HTTPPort:             DefaultHTTPPort,
	}
	if c.SocketPath == "" {
		c.SocketPath = sockpath.Default()
	}
	if c.HTTPHost == "" {
		c.HTTPHost = DefaultHTTPHost
	}
	if !loopback.Host(c.HTTPHost) {
		return c, fmt.Errorf("agentproto: %s=%q: only loopback addresses may be served", EnvBridgeHost, c.HTTPHost)
	}
	if p := strings.TrimSpace(getenv(EnvBridgePort)); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return c, fmt.Errorf("agentproto: %s=%q is not a port number", EnvBridgePort, p)
		}
		c.HTTPPort = n
	}
	return c, nil
}
