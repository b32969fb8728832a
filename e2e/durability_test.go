//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// Durability through the real binary: the gym receiver's checkpoints in file_storage across a
// kill -9 and a SIGTERM (with the exporter down) in the middle of a file, a restart with
// sandboxes in flight, and a Gym process restart inside one collection seen by Prometheus.

// durableOpts: the files transport over logs/*.jsonl and HTTP, with the receiver's storage in
// a file_storage extension whose directory is storage.
func durableOpts(logs, storage string) func(harness.Ports) transportsOpts {
	return func(p harness.Ports) transportsOpts {
		return transportsOpts{
			storage: storage,
			gym: fmt.Sprintf(`    storage: file_storage
    http:
      endpoint: 127.0.0.1:%d
    files:
      include: [%s]
      start_at: beginning
      poll_interval: 20ms`, p.Gym, filepath.Join(logs, "*.jsonl")),
		}
	}
}

// increaseOf is what Prometheus' increase() over every export (in order) of the named counter
// gives for the matching resources, without extrapolation: per series, each rise counts, and a
// value below the one before (a reset) counts whole. The series start at zero.
func increaseOf(exports []pmetric.Metrics, name string, match func(pcommon.Map) bool) float64 {
	last := map[string]float64{}
	var total float64
	for _, md := range exports {
		for resource, m := range metricsNamed(md, match, name) {
			if m.Type() != pmetric.MetricTypeSum {
				continue
			}
			for _, dp := range m.Sum().DataPoints().All() {
				key := fmt.Sprint(resource.AsRaw(), dp.Attributes().AsRaw())
				v := numberOf(dp)
				if prev := last[key]; v >= prev {
					total += v - prev
				} else {
					total += v
				}
				last[key] = v
			}
		}
	}
	return total
}

// fileWriter appends batches of rollout lines to a file in the background, like a Gym run.
type fileWriter struct {
	done    chan struct{}
	written int
}

func writeLines(t *testing.T, path string, from, batches, per int, every time.Duration) *fileWriter {
	t.Helper()
	w := &fileWriter{done: make(chan struct{})}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	go func() {
		defer close(w.done)
		defer f.Close()
		n := from
		for range batches {
			if _, err := f.WriteString(lines("", n, per, false)); err != nil {
				return
			}
			n += per
			w.written += per
			time.Sleep(every)
		}
	}()
	return w
}

// logsAndStorage makes a directory of logs and one of storage for a test's collector; path
// is the run file in logs (not created).
func logsAndStorage(t *testing.T) (logs, storage, path string) {
	t.Helper()
	dir := t.TempDir()
	logs, storage = filepath.Join(dir, "logs"), filepath.Join(dir, "storage")
	require.NoError(t, os.Mkdir(logs, 0o700))
	require.NoError(t, os.Mkdir(storage, 0o700))
	return logs, storage, filepath.Join(logs, "run.jsonl")
}

// TestKill9MidFile: a file grows while the collector is killed with SIGKILL in the middle of
// it, then restarted on the same storage: every line is counted exactly once over both lives,
// as increase() would compute it from everything exported, and the restarted collector's
// totals go on from the first life's (no reset, no line lost or repeated).
func TestKill9MidFile(t *testing.T) {
	t.Parallel()
	logs, storage, path := logsAndStorage(t)
	res := attrIs("log.file.path", path)

	sink1 := harness.NewOTLPSink(t)
	col, _ := startTransports(t, sink1, durableOpts(logs, storage))
	w := writeLines(t, path, 0, 60, 250, 20*time.Millisecond) // 15,000 lines over ~1.5 s
	require.NoError(t, harness.Eventually(30*time.Second, 5*time.Millisecond, func() error {
		if latestCompleted(sink1.Exports(), res) < 5000 {
			return harness.ErrNotYet
		}
		return nil
	}))
	require.NoError(t, syscall.Kill(col.Cmd.Process.Pid, syscall.SIGKILL)) // mid-file
	<-col.Done()
	atKill := latestCompleted(sink1.Exports(), res)
	<-w.done
	total := w.written
	w2 := writeLines(t, path, total, 20, 250, 10*time.Millisecond) // and it goes on growing
	<-w2.done
	total += w2.written

	sink2 := harness.NewOTLPSink(t)
	col, _ = startTransports(t, sink2, durableOpts(logs, storage))
	waitCompleted(t, sink2, "after the restart", res, float64(total))
	sink2.WaitMore(t, 3)
	require.NoError(t, col.Stop(30*time.Second))
	t.Logf("%d lines; %v counted when killed", total, atKill)
	assert.Greater(t, atKill, 0.0)
	assert.Less(t, atKill, float64(total), "killed mid-file")
	assert.Equal(t, float64(total), latestCompleted(sink2.Exports(), res), "every line once")
	both := append(sink1.Exports(), sink2.Exports()...)
	assert.Equal(t, float64(total), increaseOf(both, "gym.rollout.completed_total", res),
		"increase() over both lives: every line once, no reset")
	first, _ := completed(sink2.Exports()[0], res)
	assert.GreaterOrEqual(t, first, atKill, "the second life starts from the first one's totals")
	assert.Equal(t, startOf(sink1.Exports()[len(sink1.Exports())-1], res), startOf(sink2.Exports()[0], res), "the same start time")
}

// TestSIGTERMMidFileExporterDown: the collector is stopped gracefully while the backend is
// down, so the last export fails: the checkpoint saved at shutdown keeps what was read, and
// the restarted collector exports it. Every line once over both lives; gym.sandbox.active,
// built from +1/-1 deltas over HTTP across the restart, reads right.
func TestSIGTERMMidFileExporterDown(t *testing.T) {
	t.Parallel()
	logs, storage, path := logsAndStorage(t)
	res := attrIs("log.file.path", path)
	gym := service("nemo-gym/sandboxes")
	resource := `{"event":"resource","attributes":{"service.name":"nemo-gym/sandboxes","service.instance.id":"s0"}}` + "\n"
	sandbox := func(delta int) string {
		return fmt.Sprintf(`{"event":"sandbox.active","provider":"docker","delta":%d}`+"\n", delta)
	}

	sink1 := harness.NewOTLPSink(t)
	col, _ := startTransports(t, sink1, durableOpts(logs, storage))
	status, _ := col.PostEvents(t, resource+sandbox(1)+sandbox(1)+sandbox(1))
	require.Equal(t, http.StatusOK, status)
	w := writeLines(t, path, 0, 40, 250, 20*time.Millisecond)
	require.NoError(t, harness.Eventually(30*time.Second, 5*time.Millisecond, func() error {
		if latestCompleted(sink1.Exports(), res) < 3000 {
			return harness.ErrNotYet
		}
		return nil
	}))
	sink1.Down()
	status, _ = col.PostEvents(t, resource+sandbox(-1)) // accepted, never exported by this life
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, col.Stop(30*time.Second)) // mid-file, the last export fails
	<-w.done
	total := w.written
	sink1.Up()

	sink2 := harness.NewOTLPSink(t)
	col, _ = startTransports(t, sink2, durableOpts(logs, storage))
	status, _ = col.PostEvents(t, resource+sandbox(-1))
	require.Equal(t, http.StatusOK, status)
	waitCompleted(t, sink2, "after the restart", res, float64(total))
	require.NoError(t, harness.Eventually(10*time.Second, 50*time.Millisecond, func() error {
		if v, _ := sumOf(sink2.Exports()[sink2.Count()-1], "gym.sandbox.active", gym); v != 1 {
			return harness.ErrNotYet
		}
		return nil
	}))
	require.NoError(t, col.Stop(30*time.Second))
	both := append(sink1.Exports(), sink2.Exports()...)
	assert.Equal(t, float64(total), increaseOf(both, "gym.rollout.completed_total", res), "every line once over both lives")
	active, _ := sumOf(sink2.Exports()[sink2.Count()-1], "gym.sandbox.active", gym)
	assert.Equal(t, 1.0, active, "3 sandboxes started, 2 ended (one before the restart, one after)")
	for i, md := range sink2.Exports() {
		if v, ok := sumOf(md, "gym.sandbox.active", gym); ok {
			assert.GreaterOrEqual(t, v, 1.0, "export %d: never a reset to a negative count", i)
		}
	}
}

// promSamples returns the raw samples of a range selector, per series, oldest first.
func promSamples(base, selector string) (map[string][]float64, error) {
	series, err := harness.PromMatrix(base, selector)
	if err != nil {
		return nil, err
	}
	out := map[string][]float64{}
	for _, s := range series {
		keys := make([]string, 0, len(s.Labels))
		for k, v := range s.Labels {
			keys = append(keys, k+"="+v)
		}
		sort.Strings(keys)
		out[strings.Join(keys, ",")] = append(out[strings.Join(keys, ",")], s.Samples...)
	}
	return out, nil
}

// TestProcessRestartInOneCollectionPrometheus: a Gym process reports its last rollouts and
// dies, and its successor (same service instance, a new pid) reports its first, all within
// one collection. Prometheus scrapes the prometheus exporter and knows only job/instance: the
// old process's last total must reach it before the new one's first, so that increase() over
// the restart counts both. The collection interval is longer than the scrape interval, so a
// scrape falls between two collections.
func TestProcessRestartInOneCollectionPrometheus(t *testing.T) {
	t.Parallel()
	harness.PrometheusBinary(t)
	// Gym's ids as sent: with instance_per_process (the default) a new pid is a new instance.
	col, ports := harness.StartDefaultCollector(t, "receivers:\n  gym:\n    collection_interval: 4s\n", idsAsSent)
	prom := harness.StartPrometheus(t, fmt.Sprintf("127.0.0.1:%d", ports.Prometheus))
	post := func(body string) {
		status, ans := col.PostEvents(t, body)
		require.Equal(t, http.StatusOK, status)
		require.Zero(t, ans.Rejected, "%+v", ans)
	}
	const instance = "restart-one-collection"
	query := fmt.Sprintf(`gym_rollout_completed_total{instance=%q}`, instance)
	wait := func(what string, want float64) {
		t.Helper()
		t.Logf("waiting for %s", what)
		waitVector(t, prom, "sum("+query+")", map[string]float64{"{}": want})
	}
	post(restartBody(instance, 1001, 10, 4))
	wait("the old process's first report", 4)
	// Within one collection: the old process's last 6 rollouts, then the new process's 5. The
	// posts go right after a collection (the receiver's accepted points move once per
	// collection), and the test fails, rather than passing without its case, when a collection
	// came between them.
	collections := func() float64 {
		return harness.TelemetryValue(t, ports, "otelcol_receiver_accepted_metric_points") +
			harness.TelemetryValue(t, ports, "otelcol_receiver_accepted_metric_points_total")
	}
	before := collections()
	require.NoError(t, harness.Eventually(10*time.Second, 20*time.Millisecond, func() error {
		if collections() == before {
			return harness.ErrNotYet
		}
		return nil
	}), "a collection")
	after := collections()
	post(restartBody(instance, 1001, 30, 6))
	post(restartBody(instance, 1002, 5, 5))
	require.Equal(t, after, collections(), "no collection between the old process's last report and the new one's first")
	wait("the new process", 5)
	time.Sleep(2 * time.Second) // a few more scrapes

	samples, err := promSamples(prom, query+"[10m]")
	require.NoError(t, err)
	require.Len(t, samples, 1, "one Prometheus series for the instance: %v", samples)
	for _, vs := range samples {
		// increase() from the first sample, without extrapolation: rises, and a reset counts
		// whole. The old process went from 4 to 10, the new one to 5: 6 + 5.
		var inc float64
		for i := 1; i < len(vs); i++ {
			if vs[i] >= vs[i-1] {
				inc += vs[i] - vs[i-1]
			} else {
				inc += vs[i]
			}
		}
		assert.Contains(t, vs, 10.0, "Prometheus saw the old process's last total: %v", vs)
		assert.Equal(t, 11.0, inc, "increase() over the restart: samples %v", vs)
	}
}

// TestMeasureCheckpointBeforeAnswer (make reliability; GYM_RELIABILITY=1): the latency of
// one sender's posts of 10 lines through the real binary with file_storage, with and without
// checkpoint_before_answer, while the receiver holds 1,000 or 100,000 series; side by side in
// one run. Figures in docs/performance.md; nothing is asserted about time.
func TestMeasureCheckpointBeforeAnswer(t *testing.T) {
	if os.Getenv("GYM_RELIABILITY") == "" {
		t.Skip("a measurement: make reliability (GYM_RELIABILITY=1)")
	}
	for _, series := range []int{1_000, 100_000} {
		for _, durable := range []bool{false, true} {
			storage := t.TempDir()
			sink := harness.NewOTLPSink(t)
			col, _ := startTransports(t, sink, func(p harness.Ports) transportsOpts {
				return transportsOpts{
					storage: storage,
					gym:     fmt.Sprintf("    storage: file_storage\n    checkpoint_before_answer: %v\n    expire_after: 1h\n    http:\n      endpoint: 127.0.0.1:%d", durable, p.Gym),
				}
			})
			const per = 1000
			for p := 0; p < series/per; p++ {
				var b strings.Builder
				fmt.Fprintf(&b, `{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"r%d"}}`+"\n", p)
				for i := range per {
					fmt.Fprintf(&b, `{"event":"sandbox.create_retry","provider":"provider-%d"}`+"\n", i)
				}
				status, _ := col.PostEvents(t, b.String())
				require.Equal(t, http.StatusOK, status)
			}
			body := `{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"r0"}}` + "\n" +
				strings.Repeat(`{"event":"sandbox.create_retry","provider":"provider-1"}`+"\n", 9)
			const posts = 200
			start := time.Now()
			for range posts {
				status, _ := col.PostEvents(t, body)
				require.Equal(t, http.StatusOK, status)
			}
			took := time.Since(start)
			require.NoError(t, col.Stop(30*time.Second))
			var size int64
			_ = filepath.Walk(storage, func(_ string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() {
					size += fi.Size()
				}
				return nil
			})
			t.Logf("series=%d checkpoint_before_answer=%v: %.3f ms per post (%d posts), storage files %d bytes",
				series, durable, float64(took.Microseconds())/1000/posts, posts, size)
		}
	}
}
