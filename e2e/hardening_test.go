//go:build linux

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// Hardening through the real binary: a bounded shutdown under clients that never stop
// writing, and the stream connection cap under a flood of idle connections.

// startHardening starts the collector on "hardening.yaml".
func startHardening(t *testing.T, sink *harness.OTLPSink, x map[string]any) (*harness.Collector, harness.Ports) {
	t.Helper()
	for _, k := range []string{"stream", "gym"} {
		if _, ok := x[k]; !ok {
			x[k] = ""
		}
	}
	return harness.StartCollector(t, func(p harness.Ports) []string {
		return []string{harness.Config(t, "hardening.yaml", harness.Data{P: p, Sink: sink.URL(), X: x})}
	})
}

// TestShutdownUnderTricklingClients: stream clients that write a line every 100 ms and never
// stop once kept the collector in shutdown for as long as they wrote. Now SIGTERM ends it
// within drain_timeout (plus the last export), and every line a client had written whole
// before the collector closed its connection is in the last export.
func TestShutdownUnderTricklingClients(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	sock := filepath.Join(t.TempDir(), "gym.sock")
	const drain = 2 * time.Second
	col, _ := startHardening(t, sink, map[string]any{"sock": sock, "gym": fmt.Sprintf("    drain_timeout: %s", drain)})

	const clients = 4
	var written atomic.Int64
	var wg sync.WaitGroup
	for i := range clients {
		c, err := harness.DialUnix(sock)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Write([]byte(lines("trickle", 0, 0, true)))
		require.NoError(t, err)
		wg.Go(func() {
			for j := 0; ; j++ {
				if _, err := c.Write([]byte(lines("trickle", i*1_000_000+j, 1, false))); err != nil {
					return // the collector closed the connection
				}
				written.Add(1)
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	waitFor(t, "lines exported while the clients write", func() bool { return latestCompleted(sink.Exports(), service("trickle")) >= 20 })

	start := time.Now()
	err := col.Stop(drain + 20*time.Second)
	took := time.Since(start)
	wg.Wait()
	require.NoError(t, err, "the collector stops gracefully while its clients still write")
	t.Logf("SIGTERM to exit: %s (drain_timeout %s); %d lines written", took.Round(time.Millisecond), drain, written.Load())
	// The clients never stop writing: a shutdown that waited for them would not have ended
	// within col.stop's bound (drain_timeout + 20 s) and returned nil above.
	assert.Equal(t, float64(written.Load()), latestCompleted(sink.Exports(), service("trickle")), "every line written whole is in the last export")
	require.Empty(t, sink.Errors())
}

// TestStreamConnectionCap: a flood of idle connections, more than the collector has file
// descriptors (it runs under a limit of 512), once made the HTTP receiver, the health check
// and the self-metrics stop answering. With stream.max_connections the connections past the
// cap are closed at once and counted, and everything else goes on answering.
func TestStreamConnectionCap(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	sock := filepath.Join(t.TempDir(), "gym.sock")
	const capConns, flood = 100, 1500
	col, ports := harness.StartCollectorCommand(t, func(p harness.Ports) []string {
		return []string{harness.Config(t, "hardening.yaml", harness.Data{P: p, Sink: sink.URL(), X: map[string]any{
			"sock": sock, "stream": fmt.Sprintf("      max_connections: %d", capConns), "gym": "",
		}})}
	}, []string{"sh", "-c", `ulimit -n 512 && exec "$0" "$@"`, harness.Bin})

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range flood {
		c, err := harness.DialUnix(sock)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	var refused float64
	waitFor(t, "the connections past the cap counted", func() bool {
		refused = harness.TelemetryValue(t, ports, "otelcol_receiver_gym_stream_connections_refused")
		return refused >= flood-capConns
	})
	t.Logf("%d connections opened, %v refused", flood, refused)
	assert.Equal(t, float64(flood-capConns), refused)

	_, err := harness.HTTPGet(col.HealthURL)
	assert.NoError(t, err, "the health check answers")
	status, ans := col.PostEvents(t, lines("beside-flood", 0, 10, true))
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, 11, ans.Accepted)
	// The connections within the cap still work.
	for _, c := range conns[:3] {
		_, err := c.Write([]byte(lines("in-cap", 0, 5, true)))
		require.NoError(t, err)
	}
	waitCompleted(t, sink, "lines on connections within the cap", service("in-cap"), 15)
	waitCompleted(t, sink, "lines over HTTP beside the flood", service("beside-flood"), 10)
	require.NoError(t, col.Stop(30*time.Second))
}
