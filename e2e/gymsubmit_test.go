//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// serveMetricsText serves a Prometheus text capture at /metrics on a loopback port.
func serveMetricsText(t *testing.T, capture string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "gym-submit", capture))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(data)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// metricResources maps each metric name the sink received to the resource attributes it came
// with (the last seen).
func metricResources(exports []pmetric.Metrics) map[string]pcommon.Map {
	out := map[string]pcommon.Map{}
	for _, md := range exports {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					out[m.Name()] = rm.Resource().Attributes()
				}
			}
		}
	}
	return out
}

// Gym's `gym eval submit` starts `<otel.binary> --config <job dir>/otel/collector.yaml` with
// the otelcol-contrib configuration it rendered; deploy/otelcol-gym-submit as that binary runs
// otelcol-gym on deploy/gym-submit.yaml and Gym's configuration: it scrapes vLLM,
// dcgm-exporter and node_exporter (captures served on loopback), receives OTLP, follows the
// job's run files, sends OTLP/HTTP with Gym's identity and token, writes JSON lines under
// <job dir>/otel/, and stops on Gym's own `pkill -f '^<binary> --config <file>'`.
// gymSubmitToken is the ingest token Gym's rendered configuration reads from OTEL_TOKEN.
const gymSubmitToken = "ingest-token-123"

// gymSubmitJob is otelcol-gym run as Gym's job collector: deploy/otelcol-gym-submit on the
// configuration Gym renders (testdata/gym-submit/collector.yaml.tmpl), in a job directory
// holding a Gym run's files, scraping the vLLM, dcgm-exporter and node_exporter captures served
// on loopback, exporting to backend.
type gymSubmitJob struct {
	p           *harness.Process
	dir, config string
	wrapper     string
	ports       harness.Ports // Gym: the events port; Telemetry: the collector's own metrics
}

// startGymSubmit starts it and waits for Gym's health check; more are configurations merged
// after Gym's (paths), given to the wrapper as further --config flags.
func startGymSubmit(t *testing.T, backend string, more ...string) *gymSubmitJob {
	t.Helper()
	harness.UseCollector()
	vllm, dcgm, node := serveMetricsText(t, "vllm.prom"), serveMetricsText(t, "dcgm.prom"), serveMetricsText(t, "node.prom")
	// The job directory as Gym lays it out: the run's files at its top, otel/ for the collector.
	j := &gymSubmitJob{dir: t.TempDir(), ports: harness.NewPorts(t), wrapper: filepath.Join(harness.Root, "deploy", "otelcol-gym-submit")}
	require.NoError(t, os.Mkdir(filepath.Join(j.dir, "otel"), 0o755))
	run := filepath.Join(harness.Root, "testdata", "rollouts", "run1")
	entries, err := os.ReadDir(run)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(run, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(j.dir, e.Name()), data, 0o644))
	}
	tmpl, err := os.ReadFile(filepath.Join("testdata", "gym-submit", "collector.yaml.tmpl"))
	require.NoError(t, err)
	j.config = filepath.Join(j.dir, "otel", "collector.yaml")
	require.NoError(t, os.WriteFile(j.config, []byte(harness.Render(t, string(tmpl), map[string]any{
		"Health": j.ports.Health, "VLLM": vllm, "DCGM": dcgm, "Node": node,
		"OTLPGRPC": j.ports.OTLPGRPC, "OTLPHTTP": j.ports.OTLPHTTP, "Backend": backend, "JobDir": j.dir,
	})), 0o644))
	args := []string{"bash", j.wrapper, "--config", j.config}
	for _, c := range more {
		args = append(args, "--config", c)
	}
	j.p = harness.StartProcessEnv(t, "otelcol-gym-submit", []string{
		"OTELCOL_GYM_BIN=" + harness.Bin,
		"OTELCOL_GYM_GYMRUN=" + gymrunBin,
		"OTEL_TOKEN=" + gymSubmitToken,
		"SLURM_JOB_ID=4242",
		"OTELCOL_GYM_COLLECTION_INTERVAL=1s",
		fmt.Sprintf("OTELCOL_GYM_SUBMIT_EVENTS_PORT=%d", j.ports.Gym),
		fmt.Sprintf("OTELCOL_GYM_SUBMIT_TELEMETRY_PORT=%d", j.ports.Telemetry),
		fmt.Sprintf("OTELCOL_GYM_SUBMIT_LIVE_PORT=%d", j.ports.Live),
	}, args...)
	// Gym's health check: curl -sf http://localhost:<port>/health.
	require.NoError(t, j.p.WaitReady(fmt.Sprintf("http://localhost:%d/health", j.ports.Health), 60*time.Second))
	return j
}

// Gym's `gym eval submit` starts `<otel.binary> --config <job dir>/otel/collector.yaml` with
// the otelcol-contrib configuration it rendered; deploy/otelcol-gym-submit as that binary runs
// otelcol-gym on deploy/gym-submit.yaml and Gym's configuration: it scrapes vLLM,
// dcgm-exporter and node_exporter (captures served on loopback), receives OTLP, follows the
// job's run files, sends OTLP/HTTP with Gym's identity and token, writes JSON lines under
// <job dir>/otel/, and stops on Gym's own `pkill -f '^<binary> --config <file>'`.
func TestGymSubmitDropIn(t *testing.T) {
	t.Parallel()
	sink := &harness.OTLPBackend{}
	var authMu sync.Mutex
	var auth []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authMu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		authMu.Unlock()
		sink.ServeHTTP(w, r)
	}))
	t.Cleanup(backend.Close)
	j := startGymSubmit(t, backend.URL)
	p, job, config, wrapper, httpPort, token := j.p, j.dir, j.config, j.wrapper, j.ports.OTLPHTTP, gymSubmitToken

	// Gym's pkill pattern matches one process: the collector, which the wrapper started under
	// the name and first arguments Gym started; not the wrapper (its interpreter comes first).
	gymPattern := regexp.MustCompile("^" + regexp.QuoteMeta(wrapper) + " --config " + regexp.QuoteMeta(config))
	collectors := processesMatching(t, gymPattern)
	require.Len(t, collectors, 1, "Gym's pkill pattern finds the collector, once")
	assert.NotEqual(t, p.Cmd.Process.Pid, collectors[0], "and not the wrapper")
	log, err := os.ReadFile(p.LogPath)
	require.NoError(t, err)
	for _, left := range []string{"connectors", "processors.transform/identity", "processors.transform/metric_names", "service"} {
		assert.Contains(t, string(log), "left out of Gym's configuration: "+left+" (", "named on stderr")
	}

	// A span from Gym's SDK, over OTLP/HTTP as Gym configures it.
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/driver")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName("gym.rollout")
	sp.SetTraceID([16]byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 1})
	sp.SetSpanID([8]byte{9, 9, 9, 9, 9, 9, 9, 1})
	now := time.Now()
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	sp.Attributes().PutStr("nemo.gym.rollout.id", "rollout-submit-7")
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	require.NoError(t, err)
	postOK(t, fmt.Sprintf("http://127.0.0.1:%d/v1/traces", httpPort), body)

	want := []string{
		"vllm:num_requests_running", "vllm:time_to_first_token_seconds", "vllm:prompt_tokens_total",
		"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "node_cpu_seconds_total", "node_load1",
		"gym.rollout.completed_total",
	}
	var got map[string]pcommon.Map
	require.NoError(t, harness.Eventually(60*time.Second, 250*time.Millisecond, func() error {
		got = metricResources(sink.Exports())
		for _, name := range want {
			if _, ok := got[name]; !ok {
				return fmt.Errorf("%s not received yet", name)
			}
		}
		if len(sink.Spans()) == 0 {
			return harness.ErrNotYet
		}
		return nil
	}))
	for _, name := range want {
		res := got[name].AsRaw()
		assert.Equal(t, "my-eval-service", res["service.name"], "%s: Gym's routing service.name", name)
		assert.Equal(t, "gym-job-20260921T100000Z-abc123", res["run_id"], name)
		assert.Equal(t, "scicode", res["benchmark"], name)
		assert.Equal(t, "4242", res["slurm_job_id"], "%s: converted to a string, as Gym does", name)
		assert.Equal(t, token, res["Authorization"], "%s: the token as a resource attribute, as Gym's routing proxy needs", name)
	}
	assert.Equal(t, "gym-vllm/policy", got["vllm:num_requests_running"].AsRaw()["service.name.override"], "the scrape job as display name")
	assert.Equal(t, "dcgm", got["DCGM_FI_DEV_GPU_UTIL"].AsRaw()["service.name.override"])
	assert.Equal(t, "nemo-gym/rollout_collection", got["gym.rollout.completed_total"].AsRaw()["service.name.override"])
	span, ok := sink.Spans()["gym.rollout"]
	require.True(t, ok)
	v, _ := span.Attributes().Get("nemo.gym.rollout.id")
	assert.Equal(t, "rollout-submit-7", v.Str())
	authMu.Lock()
	for _, a := range auth {
		assert.Equal(t, "Bearer "+token, a)
	}
	authMu.Unlock()

	// The run files' totals arrive exactly: the same sum as the golden file of the run.
	expected, err := golden.ReadMetrics(filepath.Join(harness.Root, "testdata", "rollouts", "run1.expected.yaml"))
	require.NoError(t, err)
	wantCompleted, ok := sumOf(expected, "gym.rollout.completed_total", func(pcommon.Map) bool { return true })
	require.True(t, ok)
	require.NoError(t, harness.Eventually(30*time.Second, 250*time.Millisecond, func() error {
		if n := latestSum(sink.Exports(), "gym.rollout.completed_total"); n != wantCompleted {
			return fmt.Errorf("gym.rollout.completed_total %v, want %v", n, wantCompleted)
		}
		return nil
	}))

	// Gym stops its collector with `pkill -TERM -f <pattern>` after the driver exits; the files
	// are complete then, and the wrapper writes their summary before it exits.
	for _, pid := range processesMatching(t, gymPattern) {
		require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	}
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the collector did not stop on SIGTERM")
	}
	require.NoError(t, p.Err(), "a clean exit")
	// The summary counts what the collector exported from the same files.
	attempts := summaryAttempts(t, filepath.Join(job, "otel", "summary.json"), p)
	assert.Equal(t, wantCompleted, attempts, "summary.json's attempts are the rollouts the collector exported")

	metricsFile := strings.Join(jsonLines(t, filepath.Join(job, "otel", "metrics.jsonl")), "\n")
	for _, name := range want {
		assert.Contains(t, metricsFile, `"name":"`+name+`"`, "metrics.jsonl holds %s", name)
	}
	assert.Contains(t, strings.Join(jsonLines(t, filepath.Join(job, "otel", "traces.jsonl")), "\n"), "rollout-submit-7")
	gymOwn, err := os.ReadFile(filepath.Join(job, "otel", "collector.gym.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(gymOwn), "transform/identity", "Gym's own configuration is kept beside")
}

// latestSum is the sum over every point of metric name in the latest export that has it.
func latestSum(exports []pmetric.Metrics, name string) float64 {
	for i := len(exports) - 1; i >= 0; i-- {
		if n, ok := sumOf(exports[i], name, func(pcommon.Map) bool { return true }); ok {
			return n
		}
	}
	return -1
}

// processesMatching are the processes whose command line (its arguments joined by spaces)
// matches pattern, as `pkill -f` finds them.
func processesMatching(t *testing.T, pattern *regexp.Regexp) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		if pattern.MatchString(strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// summaryAttempts reads a job's summary.json (gymrun.summary/v1), written by the process p of
// a recipe, and returns its attempts over every benchmark.
func summaryAttempts(t *testing.T, path string, p *harness.Process) float64 {
	t.Helper()
	var summary struct {
		Schema     string `json:"schema"`
		Benchmarks map[string]struct {
			Attempts float64 `json:"attempts"`
		} `json:"benchmarks"`
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err, "%s wrote the run's summary:\n%s", p.Name, p.LogTail(4000))
	require.NoError(t, json.Unmarshal(data, &summary))
	assert.Equal(t, "gymrun.summary/v1", summary.Schema)
	attempts := 0.0
	for _, b := range summary.Benchmarks {
		attempts += b.Attempts
	}
	return attempts
}
