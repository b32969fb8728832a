package transport

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/config/confignet"
)

// StreamConfig is the `stream:` block of a receiver that offers the stream transport (the gym
// receiver, gym_console): a TCP or Unix-domain socket server. One definition, so every receiver
// that takes streams has the same keys, defaults and bounds.
type StreamConfig struct {
	// Transport is tcp (tcp4, tcp6) or unix.
	Transport confignet.TransportType `mapstructure:"transport"`
	// Endpoint is host:port for tcp, the socket's path for unix.
	Endpoint string `mapstructure:"endpoint"`
	// SocketMode is the Unix socket file's permission bits, in octal (default "0600": only the
	// collector's user may connect).
	SocketMode string `mapstructure:"socket_mode"`
	// MaxConnections bounds the connections served at once; one more is closed at once and
	// counted.
	MaxConnections int `mapstructure:"max_connections"`
	// IdleTimeout closes a connection that sends nothing for this long (0: never).
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
}

// Defaults of StreamConfig.
const (
	// Gym's processes keep one connection each; the bound keeps a flood of connections from
	// taking every file descriptor of the collector.
	DefaultMaxConnections = 1024
	// A resource idle this long expires too (expire_after); a live emitter reconnects.
	DefaultStreamIdleTimeout = 5 * time.Minute
	// StreamQuietTimeout: at shutdown a connection is read until it is silent this long (or
	// the drain timeout passes): what a sender had written is applied, not cut.
	StreamQuietTimeout = 250 * time.Millisecond
	// DefaultDrainTimeout bounds how long Shutdown reads what senders still have in flight: a
	// few seconds, enough to finish what was being sent, well inside the grace period an
	// orchestrator gives before SIGKILL (Kubernetes: 30s); a sender that never stops writing
	// cannot hold the shutdown.
	DefaultDrainTimeout = 5 * time.Second
)

// DefaultStreamConfig is the block's defaults with the given Unix socket path.
func DefaultStreamConfig(socketPath string) StreamConfig {
	return StreamConfig{
		Transport:      confignet.TransportTypeUnix,
		Endpoint:       socketPath,
		SocketMode:     "0600",
		MaxConnections: DefaultMaxConnections,
		IdleTimeout:    DefaultStreamIdleTimeout,
	}
}

// Mode is the socket's permission bits.
func (sc *StreamConfig) Mode() (fs.FileMode, error) {
	m, err := strconv.ParseUint(sc.SocketMode, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("stream.socket_mode: %q is not an octal permission such as \"0600\"", sc.SocketMode)
	}
	return fs.FileMode(m), nil
}

// Check names the first bad key of the block and says why. (Not Validate: the receiver's own
// Validate reports it, once.)
func (sc *StreamConfig) Check() error {
	switch sc.Transport {
	case confignet.TransportTypeTCP, confignet.TransportTypeTCP4, confignet.TransportTypeTCP6:
		if _, _, err := net.SplitHostPort(sc.Endpoint); err != nil {
			return fmt.Errorf("stream.endpoint: %q is not host:port for transport %s: %w", sc.Endpoint, sc.Transport, err)
		}
	case confignet.TransportTypeUnix:
		if sc.Endpoint == "" {
			return errors.New("stream.endpoint: the socket's path is required for transport unix")
		}
		if _, err := sc.Mode(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("stream.transport: %q is not tcp, tcp4, tcp6 or unix", sc.Transport)
	}
	if sc.MaxConnections < 1 {
		return fmt.Errorf("stream.max_connections: must be at least 1, got %d", sc.MaxConnections)
	}
	if sc.IdleTimeout < 0 {
		return fmt.Errorf("stream.idle_timeout: must be 0 (never) or positive, got %s", sc.IdleTimeout)
	}
	return nil
}
