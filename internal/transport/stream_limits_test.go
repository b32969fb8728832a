package transport

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// trickle writes one line every interval on c until a write fails; it returns the number of
// lines written whole.
func trickle(c net.Conn, interval time.Duration, written *atomic.Int64) {
	line := []byte(retry("trickle") + "\n")
	for {
		if _, err := c.Write(line); err != nil {
			return
		}
		written.Add(1)
		time.Sleep(interval)
	}
}

// Shutdown under clients that never stop writing (a line every 100 ms) ends at the drain
// deadline, and every line a client had written whole before its connection was closed is
// counted. (Before the deadline existed, Shutdown waited for as long as they wrote.)
func TestStreamShutdownDrainDeadline(t *testing.T) {
	agg := newTestAggregator(t)
	path := filepath.Join(t.TempDir(), "gym.sock")
	const drain = time.Second
	s := newEventsStreamServer(agg, StreamOptions{
		Network: "unix", Endpoint: path, SocketMode: 0o600, MaxLineBytes: 1 << 16,
		QuietTimeout: 250 * time.Millisecond, DrainTimeout: drain,
	}, nil, zap.NewNop())
	require.NoError(t, s.Start(context.Background()))

	const clients = 4
	var written atomic.Int64
	var wg sync.WaitGroup
	conns := make([]net.Conn, clients)
	for i := range clients {
		c, err := net.Dial("unix", path)
		require.NoError(t, err)
		conns[i] = c
		wg.Go(func() { trickle(c, 100*time.Millisecond, &written) })
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close() // lets a Shutdown that never ends return, so the test fails instead of hanging
		}
		wg.Wait()
	}()
	require.Eventually(t, func() bool { return written.Load() >= 20 }, 5*time.Second, 10*time.Millisecond)

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(drain + 5*time.Second):
		t.Fatalf("Shutdown still running %s after it began, with drain deadline %s", time.Since(start), drain)
	}
	took := time.Since(start)
	wg.Wait() // each client's next write fails: its connection is closed
	t.Logf("Shutdown took %s (drain deadline %s); %d lines written", took, drain, written.Load())
	assert.Equal(t, written.Load(), providers(agg.Collect(aggregate.Scope{}))["trickle"], "every line written whole before the close is counted")
}

// Past stream.max_connections a new connection is closed at once and counted; the open ones
// go on, and room comes back when one closes.
func TestStreamMaxConnections(t *testing.T) {
	agg := newTestAggregator(t)
	var refused atomic.Int64
	core, logs := observer.New(zapcore.InfoLevel)
	s := newEventsStreamServer(agg, StreamOptions{
		Network: "tcp", Endpoint: "127.0.0.1:0", MaxLineBytes: 1 << 16, QuietTimeout: 100 * time.Millisecond,
		MaxConnections: 3, OnRefused: func() { refused.Add(1) },
	}, nil, zap.New(core))
	require.NoError(t, s.Start(context.Background()))
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })

	var open []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", s.Addr().String())
		require.NoError(t, err)
		open = append(open, c)
	}
	require.Eventually(t, func() bool { return s.Open() == 3 }, 5*time.Second, 5*time.Millisecond)
	for range 5 {
		c, err := net.Dial("tcp", s.Addr().String())
		require.NoError(t, err)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		assert.Error(t, err, "a connection over the cap is closed")
		assert.False(t, isTimeout(err), "closed, not left waiting: %v", err)
		_ = c.Close()
	}
	assert.Equal(t, int64(5), refused.Load())
	assert.Equal(t, 3, s.Open())
	named := logs.FilterMessage("stream: connection refused: stream.max_connections are open").All()
	assert.Len(t, named, 5, "each refusal logged (5 a minute at most)")
	assert.Contains(t, named[0].ContextMap()["peer"], "127.0.0.1:", "with its peer")
	for _, c := range open {
		_, err := c.Write([]byte(retry("open") + "\n"))
		require.NoError(t, err)
	}
	require.NoError(t, open[0].Close())
	require.Eventually(t, func() bool { return s.Open() == 2 }, 5*time.Second, 5*time.Millisecond)
	c, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	_, err = c.Write([]byte(retry("open") + "\n"))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return providers(agg.Collect(aggregate.Scope{}))["open"] == 4 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, int64(5), refused.Load())
}

// A connection that sends nothing for stream.idle_timeout is closed and counted; a partial
// line it had left is rejected, its complete lines are counted; a busy one stays.
func TestStreamIdleTimeout(t *testing.T) {
	agg := newTestAggregator(t)
	var idle atomic.Int64
	got := followtest.NewCounts()
	var mu sync.Mutex
	s := newEventsStreamServer(agg, StreamOptions{
		Network: "tcp", Endpoint: "127.0.0.1:0", MaxLineBytes: 1 << 16, QuietTimeout: 100 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond, OnIdleClosed: func() { idle.Add(1) },
	}, func(st *ingest.Stats) { mu.Lock(); got.Record(st); mu.Unlock() }, zap.NewNop())
	require.NoError(t, s.Start(context.Background()))
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })

	quiet, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	_, err = quiet.Write([]byte(retry("quiet") + "\n" + `{"event":"sandbox.cr`))
	require.NoError(t, err)
	busy, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	var written atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { trickle(busy, 50*time.Millisecond, &written) })

	_ = quiet.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = quiet.Read(make([]byte, 1))
	require.Error(t, err)
	require.False(t, isTimeout(err), "the idle connection is closed by the receiver")
	assert.Equal(t, int64(1), idle.Load())
	assert.Equal(t, 1, s.Open(), "the busy connection stays")
	require.NoError(t, busy.Close())
	wg.Wait()
	require.Eventually(t, func() bool { return s.Open() == 0 }, 5*time.Second, 5*time.Millisecond)
	p := providers(agg.Collect(aggregate.Scope{}))
	assert.Equal(t, int64(1), p["quiet"])
	assert.Equal(t, written.Load(), p["trickle"])
	mu.Lock()
	assert.Equal(t, int64(1), got.Rejected[ReasonPartialLine])
	mu.Unlock()
}

// Lines rejected on a connection are logged with its peer (the counts say only how many).
func TestStreamRejectedLinesNameThePeer(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	s := newEventsStreamServer(newTestAggregator(t), StreamOptions{
		Network: "tcp", Endpoint: "127.0.0.1:0", MaxLineBytes: 1 << 16, QuietTimeout: 100 * time.Millisecond,
	}, nil, zap.New(core))
	require.NoError(t, s.Start(context.Background()))
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	c, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	_, err = c.Write([]byte(retry("p") + "\n{not json\n"))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return logs.FilterMessage("stream: lines rejected").Len() == 1 }, 5*time.Second, 5*time.Millisecond)
	e := logs.FilterMessage("stream: lines rejected").All()[0]
	assert.Equal(t, c.LocalAddr().String(), e.ContextMap()["peer"])
	assert.Equal(t, map[string]int64{"invalid_json": 1}, e.ContextMap()["reasons"])
}
