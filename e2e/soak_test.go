//go:build linux

package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// TestSoak (make soak; GYM_SOAK=1, SOAK_DURATION, default 5m): an accelerated day of one node
// agent (deploy/agent.yaml: gym receiver with http, files and rollouts, checkpoint in
// file_storage, persistent queue) exporting through a gateway (deploy/gateway.yaml) into
// Debian's Prometheus by remote write, as TestTopology runs them. Thousands of short-lived Gym
// processes come and go over HTTP, each a real short-lived OS process whose pid its resource
// line names, each its own resource that the receiver's expiry (10 s here) must drop, with a
// burst every 30 s that takes the live resources past max_resources; three event files grow
// and rotate (rename, then copy-truncate); Gym runs' main outputs (STEM.jsonl) and failures
// sidecars grow, a new run every 45 s; the agent is killed (kill -9) and restarted, then
// stopped (SIGTERM) and restarted, in the first third, or every SOAK_RESTART_EVERY. Sampled every
// 3 s: the agent's RSS, Go heap, goroutines (pprof), open descriptors, the resources and series
// it holds, its checkpoint's size, and Prometheus' series. Asserted: the second and the last
// third of the run agree (bounds below), resources never pass max_resources (plus the default
// and file resources the limit never refuses), the bound was reached (a resource line was
// refused), and Prometheus' raw samples of gym_rollout_completed_total, summed over every
// process, file and run across the restarts, are exactly the rollouts sent. Figures:
// docs/performance.md, Soak.
func TestSoak(t *testing.T) {
	if os.Getenv("GYM_SOAK") == "" {
		t.Skip("a soak of several minutes: make soak (GYM_SOAK=1, SOAK_DURATION)")
	}
	duration := soakEnvDuration(t, "SOAK_DURATION", 5*time.Minute)
	// By default the agent restarts twice in the warm-up third (at 1/9 and 2/9 of the run), so
	// that the second and the last third, which are compared, are one life: a leak shows as
	// growth there instead of being reset by a restart. SOAK_RESTART_EVERY restarts it all along.
	restartEvery := soakEnvDuration(t, "SOAK_RESTART_EVERY", (duration / 9).Round(time.Second))
	restarts, schedule := 2, fmt.Sprintf("at %s and %s", restartEvery, 2*restartEvery)
	if os.Getenv("SOAK_RESTART_EVERY") != "" {
		restarts, schedule = math.MaxInt, "every "+restartEvery.String()
	}
	const (
		maxResources = 250
		expireAfter  = 10 * time.Second
		interval     = 3 * time.Second
		nFiles       = 3
		// Resources the limit does not refuse: the HTTP default resource that refused lines go
		// to, the unix stream's, one per followed event file (the live ones and a rotated one
		// each) and one per followed run.
		unrefused = 2 + 2*nFiles + soakRunsKept + 1
	)
	s := startSoak(t, maxResources, expireAfter)
	t.Logf("soak: %s, restarts %s, max_resources %d, expire_after %s; agent log %s",
		duration, schedule, maxResources, expireAfter, s.agent.LogPath)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { s.churn(stop) })
	for i := range nFiles {
		wg.Go(func() { s.eventFile(stop, i) })
	}
	wg.Go(func() { s.runs(stop) })

	var samples []soakSample
	start := time.Now()
	life, nextRestart := 1, restartEvery
	tick := time.NewTicker(interval)
	for time.Since(start) < duration {
		<-tick.C
		if el := time.Since(start); life <= restarts && el >= nextRestart && el+interval < duration {
			s.restart(t, life == 1) // the first restart is the kill -9
			life++
			nextRestart += restartEvery
			continue
		}
		samples = append(samples, s.sample(t, time.Since(start), life))
	}
	tick.Stop()
	close(stop)
	wg.Wait()
	final := s.sample(t, time.Since(start), life) // after the load: in the table, not judged

	sent := s.httpSent.Load() + s.fileSent.Load() + s.runSent.Load()
	var got float64
	err := harness.Eventually(2*time.Minute, time.Second, func() error {
		var err error
		if got, err = s.promTotal(`gym_rollout_completed_total{host_name="soak-node"}`); err != nil {
			return err
		}
		if got != float64(sent) {
			return harness.ErrNotYet
		}
		return nil
	})
	s.logTable(t, append(samples, final))
	t.Logf("sent %d rollouts: %d over HTTP by %d processes (%d resource lines refused at max_resources), %d in %d event files (%d rotations), %d in %d runs; Prometheus' raw samples add up to %v",
		sent, s.httpSent.Load(), s.processes.Load(), s.refused.Load(), s.fileSent.Load(), nFiles, s.rotations.Load(), s.runSent.Load(), s.runsStarted.Load(), got)
	require.Empty(t, s.errs(), "errors of the senders")
	require.NoError(t, err, "Prometheus holds %v rollouts over every series, want %d sent", got, sent)

	// Flat: the last third against the second (the first is the warm-up). Each third holds
	// bursts; where a sample falls in a burst moves its peaks, so the medians
	// (the steady level) are held to 1.25 x and the maxima to 1.5 x; goroutines and
	// descriptors, which follow the connections in flight, to their floor (what a leak raises)
	// plus 5, their median plus 10 and their peak plus 20.
	var second, last []soakSample
	for _, x := range samples {
		switch {
		case x.at >= 2*duration/3:
			last = append(last, x)
		case x.at >= duration/3:
			second = append(second, x)
		}
	}
	require.GreaterOrEqual(t, len(second), 3, "samples in the second third")
	require.GreaterOrEqual(t, len(last), 3, "samples in the last third")
	for _, c := range []struct {
		what  string
		of    func(soakSample) float64
		count bool // goroutines, descriptors: bounds by slack, not by factor
	}{
		{"RSS MiB", func(x soakSample) float64 { return float64(x.rss) / (1 << 20) }, false},
		{"live heap MiB", func(x soakSample) float64 { return x.heap / (1 << 20) }, false},
		{"goroutines", func(x soakSample) float64 { return float64(x.goroutines) }, true},
		{"open descriptors", func(x soakSample) float64 { return float64(x.fds) }, true},
		{"resources held", func(x soakSample) float64 { return x.resources }, false},
		{"series held", func(x soakSample) float64 { return x.series }, false},
		{"checkpoint bytes", func(x soakSample) float64 { return x.checkpoint }, false},
		{"Prometheus live series", func(x soakSample) float64 { return float64(x.promLive) }, false},
	} {
		a, b := soakStats(second, c.of), soakStats(last, c.of)
		t.Logf("%-22s second third min/median/max %8.1f %8.1f %8.1f, last third %8.1f %8.1f %8.1f", c.what, a[0], a[1], a[2], b[0], b[1], b[2])
		bound := [3]float64{math.Inf(1), 1.25 * a[1], 1.5 * a[2]}
		if c.count {
			bound = [3]float64{a[0] + 5, a[1] + 10, a[2] + 20}
		}
		for i, stat := range []string{"min", "median", "max"} {
			assert.LessOrEqual(t, b[i], bound[i], "%s grows: %s %.1f in the second third, %.1f in the last (bound %.1f)", c.what, stat, a[i], b[i], bound[i])
		}
	}
	for _, x := range samples {
		assert.LessOrEqual(t, x.resources, float64(maxResources+unrefused), "at %s: resources held over max_resources %d (+%d never refused)", x.at, maxResources, unrefused)
		assert.Zero(t, x.badLines, "at %s: lines rejected (but for too_many_resources) or unknown, rows rejected", x.at)
	}
	assert.Positive(t, s.refused.Load(), "the bursts reached max_resources: a resource line was refused")
	assert.Zero(t, harness.TelemetryValue(t, s.agent.ports, "otelcol_exporter_send_failed_metric_points_total")+
		harness.TelemetryValue(t, s.agent.ports, "otelcol_exporter_enqueue_failed_metric_points_total"),
		"points the agent's exporter gave up on (its last life)")
}

func soakEnvDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, "%s", name)
	require.Positive(t, d, "%s", name)
	return d
}

// soakRunsKept: finished runs whose files stay in the results directory; older ones are
// removed once Prometheus holds them whole (results moved off the node).
const soakRunsKept = 2

type soak struct {
	t       *testing.T
	agent   *deployed
	prom    string
	gymURL  string
	pprof   int
	dir     string
	logs    string
	results string

	// gate: senders over HTTP and file rotations hold it shared; a restart holds it alone, so
	// that no body is in flight when the agent stops (one cut off by a kill could have been
	// applied or not: its total would be unknown) and no file is renamed away unread.
	gate sync.RWMutex

	httpSent, fileSent, runSent atomic.Int64
	processes, refused          atomic.Int64
	rotations, runsStarted      atomic.Int64

	mu     sync.Mutex
	errors []string
}

type soakSample struct {
	at                    time.Duration
	life                  int
	rss                   int64
	heap                  float64
	goroutines, fds       int
	resources, series     float64
	checkpoint            float64
	promLive, promHead    int
	sent, refused         int64
	processErrs, badLines float64
}

func startSoak(t *testing.T, maxResources int, expire time.Duration) *soak {
	t.Helper()
	harness.PrometheusBinary(t)
	prom := harness.StartRemoteWritePrometheus(t)
	dir := t.TempDir()
	s := &soak{t: t, prom: prom, dir: dir, logs: filepath.Join(dir, "gym"), results: filepath.Join(dir, "results"), pprof: harness.Port(t)}
	require.NoError(t, os.MkdirAll(s.logs, 0o700))
	require.NoError(t, os.MkdirAll(s.results, 0o700))
	gwPort := harness.Port(t)
	startDeployed(t, "gateway", "gateway.yaml", []string{
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", gwPort),
		"OTELCOL_GYM_REMOTE_WRITE_URL=" + prom + "/api/v1/write",
	})
	override := filepath.Join(dir, "soak.yaml")
	require.NoError(t, os.WriteFile(override, []byte(harness.Config(t, "soak-override.yaml", harness.Data{X: map[string]any{
		"expire": expire, "idle": 2 * expire, "max": maxResources, "pprof": s.pprof,
	}})), 0o600))
	gymPort := harness.Port(t)
	s.gymURL = fmt.Sprintf("http://127.0.0.1:%d/v1/events", gymPort)
	s.agent = startDeployedConfigs(t, "agent", []string{"agent.yaml", override}, []string{
		fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", gwPort),
		"OTELCOL_GYM_GATEWAY_INSECURE=true",
		"OTELCOL_GYM_STORAGE_DIR=" + filepath.Join(dir, "state"),
		fmt.Sprintf("OTELCOL_GYM_EVENTS_ENDPOINT=127.0.0.1:%d", gymPort),
		"OTELCOL_GYM_EVENTS_SOCKET=" + filepath.Join(dir, "gym.sock"),
		"OTELCOL_GYM_EVENT_FILES=" + filepath.Join(s.logs, "*.events.jsonl"),
		"OTELCOL_GYM_RUN_FILES=" + filepath.Join(s.results, "*.jsonl"),
		"OTELCOL_GYM_FILES_POLL_INTERVAL=100ms",
		"OTELCOL_GYM_COLLECTION_INTERVAL=1s",
		"OTELCOL_GYM_PROCESS_STATS=true",
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		"OTELCOL_GYM_NODE_NAME=soak-node",
	})
	return s
}

func (s *soak) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errors) < 20 {
		s.errors = append(s.errors, fmt.Sprintf(format, args...))
	}
}

func (s *soak) errs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errors...)
}

// waitHeld waits until Prometheus' raw samples of selector add up to want.
func (s *soak) waitHeld(selector string, want int64) {
	var got float64
	err := harness.Eventually(90*time.Second, 250*time.Millisecond, func() error {
		var err error
		if got, err = s.promTotal(selector); err != nil {
			return err
		}
		if got != float64(want) {
			return harness.ErrNotYet
		}
		return nil
	})
	if err != nil {
		s.fail("%s: Prometheus holds %v, want %d (%v)", selector, got, want, err)
	}
}

// promTotal is what the counters of selector counted, over their raw samples and across
// resets, summed over the series.
func (s *soak) promTotal(selector string) (float64, error) {
	series, err := harness.PromMatrix(s.prom, selector+"[2h]")
	if err != nil {
		return 0, err
	}
	var total float64
	for _, x := range series {
		v, _ := counterTotal(x.Samples)
		total += v
	}
	return total, nil
}

// restart stops the agent (SIGTERM, or kill -9) while the files go on growing, and starts it
// again on the same storage. Before a kill, two collections pass after the last HTTP body, so
// that the checkpoint holds every answered body (a crash loses what was accepted since the
// last checkpoint: docs/receiver.md); the files' lines need no such wait.
func (s *soak) restart(t *testing.T, kill bool) {
	t.Helper()
	s.gate.Lock()
	defer s.gate.Unlock()
	if kill {
		s.collections(t, 2)
		s.agent.kill()
		t.Log("agent: kill -9")
	} else {
		require.NoError(t, s.agent.Stop(30*time.Second), "agent: SIGTERM")
		t.Log("agent: SIGTERM")
	}
	time.Sleep(2 * time.Second) // down for a while; the files grow meanwhile
	require.NoError(t, s.agent.start(t), "agent: restart on the same storage")
}

// gymPoints is the data points the gym receiver has handed to the pipeline: its collections
// carry every series it holds, each once.
func (s *soak) gymPoints(t *testing.T) float64 {
	return harness.TelemetryValue(t, s.agent.ports, "otelcol_receiver_accepted_metric_points", "receiver", "gym") +
		harness.TelemetryValue(t, s.agent.ports, "otelcol_receiver_accepted_metric_points_total", "receiver", "gym")
}

// collections waits for n collections of the gym receiver and returns the points of the last:
// the series it holds.
func (s *soak) collections(t *testing.T, n int) float64 {
	t.Helper()
	prev := s.gymPoints(t)
	var last float64
	for range n {
		require.NoError(t, harness.Eventually(30*time.Second, 20*time.Millisecond, func() error {
			v := s.gymPoints(t)
			if v == prev {
				return harness.ErrNotYet
			}
			last, prev = v-prev, v
			return nil
		}), "a collection of the gym receiver")
	}
	return last
}

func (s *soak) sample(t *testing.T, at time.Duration, life int) soakSample {
	t.Helper()
	pid := s.agent.Cmd.Process.Pid
	x := soakSample{at: at.Round(time.Second), life: life, sent: s.httpSent.Load() + s.fileSent.Load() + s.runSent.Load(), refused: s.refused.Load()}
	var err error
	x.rss, err = vmRSS(pid)
	require.NoError(t, err)
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	x.fds = len(entries)
	prof, err := harness.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/goroutine?debug=1", s.pprof))
	require.NoError(t, err)
	first, _, _ := strings.Cut(prof, "\n")
	_, err = fmt.Sscanf(first, "goroutine profile: total %d", &x.goroutines)
	require.NoError(t, err, "goroutine profile: %q", first)
	// The live heap: the runtime's HeapAlloc right after the garbage collection that a heap
	// profile with gc=1 runs (the gauge otelcol_process_runtime_heap_alloc_bytes holds garbage
	// too, and moves with the GC cycle).
	heap, err := harness.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1&debug=1", s.pprof))
	require.NoError(t, err)
	_, after, ok := strings.Cut(heap, "\n# HeapAlloc = ")
	require.True(t, ok, "no HeapAlloc in the heap profile")
	_, err = fmt.Sscanf(after, "%f", &x.heap)
	require.NoError(t, err)
	x.series = s.collections(t, 2)
	// One scrape for every value: a line rejected between two scrapes would skew their sums.
	text, err := harness.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.agent.ports.Telemetry))
	require.NoError(t, err)
	x.resources = harness.TextValue(text, "otelcol_receiver_gym_resources")
	x.checkpoint = harness.TextValue(text, "otelcol_receiver_gym_checkpoint_size")
	x.processErrs = harness.TextValue(text, "otelcol_receiver_gym_process_errors")
	x.badLines = harness.TextValue(text, "otelcol_receiver_gym_lines_rejected") -
		harness.TextValue(text, "otelcol_receiver_gym_lines_rejected", "reason", "too_many_resources") +
		harness.TextValue(text, "otelcol_receiver_gym_lines_unknown") +
		harness.TextValue(text, "otelcol_receiver_gym_rollout_rows_rejected")
	// Series with a sample in the last 5 s (collections every second): those the agent still
	// exports. A range selector, not a function of one, whose result would drop the names.
	live, err := harness.PromMatrix(s.prom, `{__name__=~"gym_.+",host_name="soak-node"}[5s]`)
	require.NoError(t, err)
	x.promLive = len(live)
	x.promHead = int(harness.MetricsValue(t, s.prom+"/metrics", "prometheus_tsdb_head_series"))
	return x
}

// soakStats is the min, median and max of f over xs.
func soakStats(xs []soakSample, f func(soakSample) float64) [3]float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	return [3]float64{v[0], v[len(v)/2], v[len(v)-1]}
}

func (s *soak) logTable(t *testing.T, samples []soakSample) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%6s %4s %8s %9s %10s %4s %9s %7s %10s %9s %9s %10s %8s %8s\n", "t", "life", "RSS MiB", "live heap", "goroutines", "fds",
		"resources", "series", "ckpt KiB", "prom live", "prom head", "sent", "refused", "proc err")
	for _, x := range samples {
		fmt.Fprintf(&b, "%6s %4d %8.1f %9.1f %10d %4d %9.0f %7.0f %10.1f %9d %9d %10d %8d %8.0f\n", x.at, x.life, float64(x.rss)/(1<<20), x.heap/(1<<20), x.goroutines, x.fds,
			x.resources, x.series, x.checkpoint/1024, x.promLive, x.promHead, x.sent, x.refused, x.processErrs)
	}
	t.Log("samples:\n" + b.String())
}
