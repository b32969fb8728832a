//go:build unix

package transport

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// Under umask 000 a socket bound at its path would be 0777 until the chmod to socket_mode:
// anyone could connect in that moment. The socket must never be seen at its path with more
// than socket_mode, from the moment it exists there. A watcher stats the path as fast as it
// can over many starts (the old bind-then-chmod was caught in most of them).
func TestStreamUnixSocketNeverWiderThanSocketMode(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	dir := t.TempDir()
	path := filepath.Join(dir, "gym.sock")
	var seen, wider atomic.Int64
	var widest atomic.Uint32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if fi, err := os.Lstat(path); err == nil {
				seen.Add(1)
				if perm := fi.Mode().Perm(); perm&^0o600 != 0 {
					wider.Add(1)
					widest.Store(uint32(perm))
				}
			}
		}
	})
	const starts = 200
	for range starts {
		s := newEventsStreamServer(newTestAggregator(t), StreamOptions{Network: "unix", Endpoint: path, SocketMode: 0o600, MaxLineBytes: 1 << 16}, nil, zap.NewNop())
		require.NoError(t, s.Start(context.Background()))
		fi, err := os.Lstat(path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		require.NoError(t, s.Shutdown(context.Background()))
	}
	close(stop)
	wg.Wait()
	require.Positive(t, seen.Load(), "the watcher saw the socket")
	assert.Zero(t, wider.Load(), "the socket was seen at its path with mode %o", widest.Load())
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left, "no socket and no private directory is left behind")
}
