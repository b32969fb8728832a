//go:build linux

package e2e

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The stream and file transports through the real binary: what an otlp_http
// exporter delivers for lines sent over TCP, a Unix socket and followed files; the SIGTERM
// test that loses nothing on any transport; file offsets kept by file_storage across a
// restart.

// transportsOpts are the parts of "transports.yaml" a test gives.
type transportsOpts struct {
	gym     string // lines under `gym:`, indented by 4
	storage string // when set, the directory of a file_storage extension (the gym lines name it)
}

// startTransports starts a collector on "transports.yaml"; opts is called for each set of
// ports tried (a test that picks more ports in it keeps the last ones).
func startTransports(t *testing.T, sink *harness.OTLPSink, opts func(p harness.Ports) transportsOpts) (*harness.Collector, harness.Ports) {
	t.Helper()
	return harness.StartCollector(t, func(p harness.Ports) []string {
		o := opts(p)
		ext, serviceExt := "", ""
		if o.storage != "" {
			ext, serviceExt = "  file_storage:\n    directory: "+o.storage, ", file_storage"
		}
		return []string{harness.Config(t, "transports.yaml", harness.Data{P: p, Sink: sink.URL(), X: map[string]any{
			"gym": o.gym, "extensions": ext, "service_extensions": serviceExt,
		}})}
	})
}

// TestStreamTCP: lines over TCP connections, one stream each. A resource line names the
// process of the lines after it on its connection; many connections at once; a process that
// reconnects continues its counters; lines before any resource line go to the default
// resource gym.source=tcp; a line over max_line_bytes and a partial last line are rejected
// alone and counted, and the lines around them count.
func TestStreamTCP(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	var addr string
	col, ports := startTransports(t, sink, func(p harness.Ports) transportsOpts {
		addr = fmt.Sprintf("127.0.0.1:%d", harness.Port(t))
		return transportsOpts{gym: `    max_line_bytes: 1024
    stream:
      transport: tcp
      endpoint: ` + addr}
	})

	// One connection, then the same process again on a new connection: its series go on.
	harness.SendStream(t, "tcp", addr, lines("tcp-a", 0, 1000, true))
	waitCompleted(t, sink, "tcp-a, first connection", service("tcp-a"), 1000)
	harness.SendStream(t, "tcp", addr, lines("tcp-a", 1000, 500, true))
	waitCompleted(t, sink, "tcp-a, after reconnecting", service("tcp-a"), 1500)

	// 200 connections at once, 50 lines each, one resource.
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() { harness.SendStream(t, "tcp", addr, lines("tcp-many", i*50, 50, true)) })
	}
	wg.Wait()
	waitCompleted(t, sink, "tcp-many, 200 connections", service("tcp-many"), 200*50)

	// The default resource; a line over max_line_bytes (1024) and a partial last line.
	long := `{"event":"rollout.completed","outcome":"omitted","dispatch_name":"` + strings.Repeat("x", 2000) + `"}` + "\n"
	harness.SendStream(t, "tcp", addr, lines("", 0, 3, false)+long+lines("", 3, 4, false)+
		`{"event":"rollout.completed","outcome":"omitted","dispatch_name":"cut`)
	waitCompleted(t, sink, "default resource", attrIs("gym.source", "tcp"), 7)
	err := harness.Eventually(10*time.Second, 100*time.Millisecond, func() error {
		tooLong := harness.TelemetryValue(t, ports, "otelcol_receiver_gym_lines_rejected", "reason", "too_long")
		partial := harness.TelemetryValue(t, ports, "otelcol_receiver_gym_lines_rejected", "reason", "partial_line")
		if tooLong != 1 || partial != 1 {
			return fmt.Errorf("lines rejected: too_long %v, partial_line %v; want 1 and 1", tooLong, partial)
		}
		return nil
	})
	require.NoError(t, err)

	md := sink.Exports()[sink.Count()-1]
	res := resourcesOf(md)
	assert.ElementsMatch(t, []string{`{service.name="tcp-a"}`, `{service.name="tcp-many"}`, `{gym.source="tcp"}`}, res,
		"one resource per process, whatever the connections")
	require.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))
}

// resourcesOf lists the resources of an export, in the dump notation.
func resourcesOf(md pmetric.Metrics) []string {
	var out []string
	for _, rm := range md.ResourceMetrics().All() {
		out = append(out, formatAttrs(rm.Resource().Attributes()))
	}
	return out
}

// TestStreamUnix: the Unix socket is created with mode 0600, serves lines like TCP, is
// removed at shutdown, and a stale socket file left by a collector that was killed is
// replaced at the next start.
func TestStreamUnix(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	sock := filepath.Join(t.TempDir(), "gym.sock")
	opts := func(harness.Ports) transportsOpts {
		return transportsOpts{gym: `    stream:
      transport: unix
      endpoint: ` + sock}
	}
	col, _ := startTransports(t, sink, opts)

	fi, err := os.Lstat(sock)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&fs.ModeSocket, "%s is a socket", sock)
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm(), "socket mode")

	harness.SendStream(t, "unix", sock, lines("unix-a", 0, 800, true))
	waitCompleted(t, sink, "unix-a", service("unix-a"), 800)
	harness.SendStream(t, "unix", sock, lines("", 0, 5, false))
	waitCompleted(t, sink, "default resource", attrIs("gym.source", "unix"), 5)

	require.NoError(t, col.Stop(30*time.Second))
	_, err = os.Lstat(sock)
	assert.ErrorIs(t, err, fs.ErrNotExist, "the socket file is removed at shutdown")

	// A collector killed with SIGKILL leaves its socket file; the next one replaces it.
	col, _ = startTransports(t, sink, opts)
	require.NoError(t, col.Cmd.Process.Kill())
	<-col.Done()
	_, err = os.Lstat(sock)
	require.NoError(t, err, "a killed collector leaves its socket file")
	col, _ = startTransports(t, sink, opts)
	harness.SendStream(t, "unix", sock, lines("unix-b", 0, 10, true))
	waitCompleted(t, sink, "unix-b, after a stale socket", service("unix-b"), 10)
	fi, err = os.Lstat(sock)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm(), "socket mode after replacing a stale socket")
	require.NoError(t, col.Stop(30*time.Second))
	require.Empty(t, sink.Errors())
}

// TestFilesFollowAndRotate: start_at end skips what a file held at start-up; a file that
// appears is read from its beginning and followed as it grows; rotation by rename (lines the
// reader had not read yet when the file was renamed away, then a new file under the old
// name) and copy-truncate (after the reader read the file) lose nothing.
func TestFilesFollowAndRotate(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	dir := t.TempDir()
	old := filepath.Join(dir, "old.jsonl")
	harness.AppendFile(t, old, lines("", 0, 10, false)) // before start: skipped (start_at end)
	col, _ := startTransports(t, sink, func(harness.Ports) transportsOpts {
		return transportsOpts{gym: `    files:
      include: [` + filepath.Join(dir, "*.jsonl") + `]
      start_at: end
      poll_interval: 100ms`}
	})
	oldRes := attrIs("log.file.path", old)
	harness.AppendFile(t, old, lines("", 10, 5, false))
	waitCompleted(t, sink, "old.jsonl: only the lines written after start", oldRes, 5)

	app := filepath.Join(dir, "app.jsonl")
	w, err := os.OpenFile(app, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	require.NoError(t, err)
	defer func() { w.Close() }() // the writer open last
	write := func(s string) {
		_, err := w.WriteString(s)
		require.NoError(t, err)
	}
	write(lines("file-app", 0, 100, true))
	waitCompleted(t, sink, "app.jsonl, new file", service("file-app"), 100)
	write(lines("file-app", 100, 100, false))
	waitCompleted(t, sink, "app.jsonl, grown", service("file-app"), 200)

	// Rotation by rename, out of the globs: the writer writes a few more lines and rotates at
	// once, before the reader saw them; then it opens a new file (with its resource line)
	// under the old name. The renamed file is read to its end.
	write(lines("file-app", 200, 50, false))
	require.NoError(t, os.Rename(app, app+".1"))
	require.NoError(t, w.Close())
	w, err = os.OpenFile(app, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	write(lines("file-app", 250, 70, true))
	waitCompleted(t, sink, "app.jsonl, rotated by rename", service("file-app"), 320)

	// Copy-truncate: the file is copied away and emptied, and written again from the start.
	require.NoError(t, w.Truncate(0))
	_, err = w.Seek(0, 0)
	require.NoError(t, err)
	write(lines("file-app", 320, 30, true))
	waitCompleted(t, sink, "app.jsonl, copy-truncated", service("file-app"), 350)

	// Nothing counted twice later on.
	sink.WaitMore(t, 3)
	assert.Equal(t, 350.0, latestCompleted(sink.Exports(), service("file-app")))
	assert.Equal(t, 5.0, latestCompleted(sink.Exports(), oldRes))
	require.NoError(t, col.Stop(30*time.Second))
	require.Empty(t, sink.Errors())
}

// TestSIGTERMNoLoss: N lines over each transport (HTTP bodies, TCP and Unix connections, one
// of them still open, and a file), SIGTERM right after the last write, and all N of each are
// counted in the last export the sink received.
func TestSIGTERMNoLoss(t *testing.T) {
	t.Parallel()
	const n = 20000
	sink := harness.NewOTLPSink(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "gym.sock")
	events := filepath.Join(dir, "events.jsonl")
	// Two receivers, as the stream block takes one transport: gym serves HTTP, the Unix
	// socket and the files, gym/tcp the TCP stream.
	var tcpAddr string
	col, _ := harness.StartCollector(t, func(p harness.Ports) []string {
		tcpAddr = fmt.Sprintf("127.0.0.1:%d", harness.Port(t))
		return []string{harness.Config(t, "sigterm.yaml", harness.Data{P: p, Sink: sink.URL(), Dir: dir, X: map[string]any{
			"tcp": tcpAddr, "sock": sock,
		}})}
	})

	var wg sync.WaitGroup
	const bodies = 10
	for i := range bodies {
		wg.Go(func() {
			status, ans := col.PostEvents(t, lines("sigterm-http", i*n/bodies, n/bodies, true))
			assert.Equal(t, http.StatusOK, status)
			assert.Equal(t, n/bodies+1, ans.Accepted)
		})
	}
	wg.Go(func() { harness.SendStream(t, "tcp", tcpAddr, lines("sigterm-tcp", 0, n, true)) })
	// The Unix connection stays open through the shutdown.
	unixConn, err := harness.DialUnix(sock)
	require.NoError(t, err)
	defer unixConn.Close()
	wg.Go(func() {
		_, err := unixConn.Write([]byte(lines("sigterm-unix", 0, n, true)))
		assert.NoError(t, err)
	})
	wg.Go(func() { harness.AppendFile(t, events, lines("sigterm-file", 0, n, true)) })
	wg.Wait()
	before := sink.Exports()
	stopStart := time.Now()
	require.NoError(t, col.Stop(60*time.Second))
	t.Logf("the collector stopped %s after SIGTERM", time.Since(stopStart).Round(time.Millisecond))
	assert.Contains(t, col.LogTail(1<<20), "Shutdown complete")
	var seen []string
	for _, name := range []string{"sigterm-http", "sigterm-tcp", "sigterm-unix", "sigterm-file"} {
		seen = append(seen, fmt.Sprintf("%s %v", name, max(0, latestCompleted(before, service(name)))))
	}
	t.Logf("exported before SIGTERM: %s", strings.Join(seen, ", "))

	// Each receiver sends its last export when it shuts down: the last export that holds a
	// transport's resource is its receiver's last.
	exports := sink.Exports()
	for _, name := range []string{"sigterm-http", "sigterm-tcp", "sigterm-unix", "sigterm-file"} {
		assert.Equal(t, float64(n), latestCompleted(exports, service(name)), "%s: lines counted in the last export", name)
	}
	require.Empty(t, sink.Errors())
}

// filesStorageOpts: the files transport over logs/*.jsonl with offsets in a file_storage
// extension whose directory is storage.
func filesStorageOpts(logs, storage string) func(harness.Ports) transportsOpts {
	return storedOpts(storage, `    files:
      include: [`+filepath.Join(logs, "*.jsonl")+`]
      start_at: end
      poll_interval: 100ms
      storage: file_storage`)
}

// storedOpts: the lines under `gym:` (which name no port), with a file_storage extension whose
// directory is storage.
func storedOpts(storage, gym string) func(harness.Ports) transportsOpts {
	return func(harness.Ports) transportsOpts { return transportsOpts{storage: storage, gym: gym} }
}

// TestFilesStorageAcrossRestart: with files.storage (the older spelling of the receiver's
// storage) naming a file_storage extension, a collector restarted on the same storage
// directory resumes each file where it stopped: lines written while it was down are counted
// once (a partial line left at shutdown included, once finished), a file created meanwhile is
// read from its beginning, nothing is counted twice. The aggregation state is restored too:
// the second run's series go on from the first run's totals, with the same start times.
func TestFilesStorageAcrossRestart(t *testing.T) {
	t.Parallel()
	logs, storage, _ := logsAndStorage(t)
	opts := filesStorageOpts(logs, storage)
	a, b := filepath.Join(logs, "a.jsonl"), filepath.Join(logs, "b.jsonl")
	resA, resB := attrIs("log.file.path", a), attrIs("log.file.path", b)

	// Run 1: a.jsonl appears and grows; a partial line is left at its end at shutdown.
	sink1 := harness.NewOTLPSink(t)
	col, _ := startTransports(t, sink1, opts)
	harness.AppendFile(t, a, lines("", 0, 100, false))
	waitCompleted(t, sink1, "run 1, a.jsonl", resA, 100)
	harness.AppendFile(t, a, lines("", 100, 50, false))
	waitCompleted(t, sink1, "run 1, a.jsonl grown", resA, 150)
	next := lines("", 150, 70, false)
	cut := strings.Index(next, "dispatch_name")
	harness.AppendFile(t, a, next[:cut])
	require.NoError(t, col.Stop(30*time.Second))
	run1 := sink1.Exports()
	run1A := latestCompleted(run1, resA)
	assert.Equal(t, 150.0, run1A, "run 1: a.jsonl in the last export")
	run1Start := startOf(run1[len(run1)-1], resA)

	// While it is down: the partial line is finished, a.jsonl grows, b.jsonl appears.
	harness.AppendFile(t, a, next[cut:])
	harness.AppendFile(t, b, lines("", 0, 30, false))

	// Run 2, on the same storage.
	sink2 := harness.NewOTLPSink(t)
	col, _ = startTransports(t, sink2, opts)
	waitCompleted(t, sink2, "run 2, a.jsonl: the lines written while down", resA, 220)
	waitCompleted(t, sink2, "run 2, b.jsonl: created while down, read whole", resB, 30)
	// A few more collections: nothing comes in late, nothing twice.
	sink2.WaitMore(t, 3)
	require.NoError(t, col.Stop(30*time.Second))
	run2 := sink2.Exports()
	run2A, run2B := latestCompleted(run2, resA), latestCompleted(run2, resB)
	assert.Equal(t, 220.0, run2A, "a.jsonl: every line counted once over both runs")
	assert.Equal(t, 30.0, run2B)
	run2Start := startOf(run2[len(run2)-1], resA)
	assert.Equal(t, uint64(run1Start), uint64(run2Start), "the series go on: no reset")
	require.Empty(t, sink1.Errors())
	require.Empty(t, sink2.Errors())
}

// startOf is the start time of the first gym.rollout.completed_total point of the matching
// resources.
func startOf(md pmetric.Metrics, match func(pcommon.Map) bool) pcommon.Timestamp {
	for _, rm := range md.ResourceMetrics().All() {
		if !match(rm.Resource().Attributes()) {
			continue
		}
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() == "gym.rollout.completed_total" && m.Sum().DataPoints().Len() > 0 {
					return m.Sum().DataPoints().At(0).StartTimestamp()
				}
			}
		}
	}
	return 0
}

// TestFilesStorageKeepsResource: a Gym process that writes a file names itself once, in the
// resource line at the top; events-v1 puts every later line of the file under that resource.
// A collector restarted with storage resumes the file after its last counted line, and the
// lines written while it was down must still go under the file's resource, not the file's
// default resource (gym.source=file, log.file.path=...). The restored totals go on: 10 + 10.
func TestFilesStorageKeepsResource(t *testing.T) {
	t.Parallel()
	logs, storage, _ := logsAndStorage(t)
	opts := filesStorageOpts(logs, storage)
	path := filepath.Join(logs, "math.jsonl")

	sink1 := harness.NewOTLPSink(t)
	col, _ := startTransports(t, sink1, opts)
	harness.AppendFile(t, path, lines("file-math", 0, 10, true))
	waitCompleted(t, sink1, "run 1", service("file-math"), 10)
	require.NoError(t, col.Stop(30*time.Second))

	harness.AppendFile(t, path, lines("file-math", 10, 10, false)) // while the collector is down

	sink2 := harness.NewOTLPSink(t)
	col, _ = startTransports(t, sink2, opts)
	// Wait for the 10 lines to be counted somewhere (on top of run 1's 10), then say where.
	var underResource, underDefault float64
	err := harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		exports := sink2.Exports()
		underResource = max(0, latestCompleted(exports, service("file-math")))
		underDefault = max(0, latestCompleted(exports, attrIs("log.file.path", path)))
		if underResource+underDefault < 20 {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, col.Stop(30*time.Second))
	require.NoError(t, err, "run 2: the 10 lines written while down are counted")
	assert.Equal(t, 20.0, underResource+underDefault, "run 2: counted once, on top of run 1's")
	assert.Equal(t, 20.0, underResource,
		"run 2: the lines after the restart belong to the resource the file named (%v of them went to the default resource {gym.source=\"file\" log.file.path=%q})", underDefault, path)
}
