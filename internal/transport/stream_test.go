package transport

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
)

func startStream(t *testing.T, agg *aggregate.Aggregator, network, endpoint string) *StreamServer {
	t.Helper()
	s := newEventsStreamServer(agg, StreamOptions{
		Network: network, Endpoint: endpoint, SocketMode: 0o600,
		MaxLineBytes: 1 << 16, QuietTimeout: 200 * time.Millisecond,
	}, nil, zap.NewNop())
	require.NoError(t, s.Start(context.Background()))
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}

// Each connection is one stream with its own resource; lines sent before Shutdown are all
// counted, even those still unread when it began.
func TestStreamTCPConnectionsAndDrain(t *testing.T) {
	agg := newTestAggregator(t)
	s := startStream(t, agg, "tcp", "127.0.0.1:0")
	const conns, lines = 20, 500
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", s.Addr().String())
			if !assert.NoError(t, err) {
				return
			}
			var b strings.Builder
			fmt.Fprintf(&b, `{"event":"resource","attributes":{"service.name":"p%d"}}`+"\n", i%5)
			for range lines {
				b.WriteString(retry("docker") + "\n")
			}
			_, err = c.Write([]byte(b.String()))
			assert.NoError(t, err)
			// Keep the connection open: Shutdown must still read what was sent.
		}()
	}
	wg.Wait()
	require.NoError(t, s.Shutdown(context.Background()))
	md := agg.Collect(aggregate.Scope{})
	assert.Equal(t, 5, md.ResourceMetrics().Len(), "one resource per announced process")
	assert.Equal(t, map[string]int64{"docker": conns * lines}, providers(md))
}

func TestStreamUnixSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gym.sock")

	// A stale socket file left by a crashed collector is replaced.
	stale, err := net.Listen("unix", path)
	require.NoError(t, err)
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, stale.Close())
	_, err = os.Lstat(path)
	require.NoError(t, err, "the stale socket file is there")

	agg := newTestAggregator(t)
	s := startStream(t, agg, "unix", path)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	_, err = c.Write([]byte(retry("modal") + "\n" + retry("modal")[:12]))
	require.NoError(t, err)
	require.NoError(t, c.Close())

	// A second collector does not steal a live socket.
	other := newEventsStreamServer(agg, StreamOptions{Network: "unix", Endpoint: path, SocketMode: 0o600, MaxLineBytes: 1 << 16}, nil, zap.NewNop())
	err = other.Start(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another process is listening")

	require.Eventually(t, func() bool { return providers(agg.Collect(aggregate.Scope{}))["modal"] == 1 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, s.Shutdown(context.Background()))
	_, err = os.Lstat(path)
	assert.True(t, os.IsNotExist(err), "the socket file is removed at shutdown")
}

func TestStreamRefusesToReplaceAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not-a-socket")
	require.NoError(t, os.WriteFile(path, []byte("keep me"), 0o600))
	s := newEventsStreamServer(newTestAggregator(t), StreamOptions{Network: "unix", Endpoint: path, SocketMode: 0o600, MaxLineBytes: 1 << 16}, nil, zap.NewNop())
	err := s.Start(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a socket")
	b, _ := os.ReadFile(path)
	assert.Equal(t, "keep me", string(b))
}

// 1,000 connections at once, each its own stream.
func TestStreamManyConnections(t *testing.T) {
	agg := newTestAggregator(t)
	s := startStream(t, agg, "tcp", "127.0.0.1:0")
	const n = 1000
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", s.Addr().String())
		require.NoError(t, err)
		conns = append(conns, c)
	}
	for _, c := range conns {
		_, err := c.Write([]byte(retry("p") + "\n"))
		require.NoError(t, err)
	}
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
	require.Eventually(t, func() bool { return providers(agg.Collect(aggregate.Scope{}))["p"] == n }, 10*time.Second, 20*time.Millisecond)
}
