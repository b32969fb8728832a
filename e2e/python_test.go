//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The Python emitter (python/otelcol_gym) through the real binary: testdata/gym_sim.py runs
// three Gym-shaped processes, one per transport (a server over HTTP, a rollout driver over a
// Unix socket, a sandbox worker over TCP), and what the OTLP sink receives is checked
// against the values the script's calls imply, computed by hand.

// pyPoint is one data point: its attributes (as strings), its value (sums and gauges), or
// its count and sum (histograms).
type pyPoint struct {
	attrs      string
	value      float64
	count      uint64
	sum        float64
	histogram  bool
	resourcePI bool // the resource names process.pid
}

// pyPoints returns the points of metric name under the resources with service.name svc.
func pyPoints(md pmetric.Metrics, svc, name string) []pyPoint {
	var out []pyPoint
	for resource, m := range metricsNamed(md, service(svc), name) {
		_, pid := resource.Get("process.pid")
		for _, dp := range numberPoints(m).All() {
			out = append(out, pyPoint{attrs: attrString(dp.Attributes()), value: numberOf(dp), resourcePI: pid})
		}
		for _, dp := range histogramPoints(m).All() {
			out = append(out, pyPoint{attrs: attrString(dp.Attributes()), count: dp.Count(), sum: dp.Sum(), histogram: true, resourcePI: pid})
		}
	}
	return out
}

// runGymSim runs a Gym simulation script of testdata with the repository's Python emitter and
// env, and returns its stdout; the script must succeed and write nothing on stderr (nothing
// raised or logged in the Gym processes).
func runGymSim(t *testing.T, python, script string, env ...string) []byte {
	t.Helper()
	cmd := exec.Command(python, filepath.Join("testdata", script))
	cmd.Env = append(append(os.Environ(), "PYTHONPATH="+filepath.Join(harness.Root, "python")), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s: %s\n%s", script, out, stderr.String())
	require.Empty(t, stderr.String(), "%s: nothing raised or logged in the Gym processes", script)
	return out
}

// emitterStats decodes an emitter's counts (the JSON object a script prints at its end): it
// flushed, and dropped, lost or left nothing in its queue, and had nothing invalid or rejected.
func emitterStats(t *testing.T, what string, js []byte) map[string]float64 {
	t.Helper()
	var st map[string]float64
	require.NoError(t, json.Unmarshal(js, &st), "%s: %s", what, js)
	assert.Equal(t, 1.0, st["flushed"], "%s: %s", what, js)
	for _, k := range []string{"dropped", "invalid", "lost", "rejected", "in_queue"} {
		assert.Zero(t, st[k], "%s %s: %s", what, k, js)
	}
	return st
}

func attrString(m pcommon.Map) string {
	raw := m.AsRaw()
	keys := slices.Sorted(maps.Keys(raw))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, raw[k])
	}
	return strings.Join(parts, ",")
}

// values maps the attributes of each point to its value (a histogram: "count/sum").
func values(ps []pyPoint) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		if p.histogram {
			out[p.attrs] = fmt.Sprintf("%d/%g", p.count, p.sum)
		} else {
			out[p.attrs] = fmt.Sprintf("%g", p.value)
		}
	}
	return out
}

// latestOf returns the newest export that has a resource with service.name svc.
func latestOf(exports []pmetric.Metrics, svc string) pmetric.Metrics {
	for i := len(exports) - 1; i >= 0; i-- {
		for _, rm := range exports[i].ResourceMetrics().All() {
			if service(svc)(rm.Resource().Attributes()) {
				return exports[i]
			}
		}
	}
	return pmetric.NewMetrics()
}

func TestPythonEmitter(t *testing.T) {
	t.Parallel()
	python := harness.Python(t)
	sink := harness.NewOTLPSink(t)
	sock := filepath.Join(t.TempDir(), "gym.sock")
	var tcpAddr string
	col, ports := harness.StartCollector(t, func(p harness.Ports) []string {
		tcpAddr = fmt.Sprintf("127.0.0.1:%d", harness.Port(t))
		return []string{harness.Config(t, "python.yaml", harness.Data{P: p, Sink: sink.URL(), X: map[string]any{"sock": sock, "tcp": tcpAddr}})}
	})

	out := runGymSim(t, python, "gym_sim.py",
		"GYM_HTTP="+fmt.Sprintf("http://127.0.0.1:%d", ports.Gym),
		"GYM_UNIX=unix://"+sock,
		"GYM_TCP=tcp://"+tcpAddr,
	)

	// Each process's emitter: everything sent, nothing dropped, invalid or lost.
	pids := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		role, js, ok := strings.Cut(line, " ")
		require.True(t, ok, line)
		st := emitterStats(t, role, []byte(js))
		assert.Positive(t, st["sent"], "%s: %s", role, js)
		pids[role] = st["pid"]
	}
	require.Len(t, pids, 3)

	type want struct {
		svc, metric string
		values      map[string]string
	}
	const drv, srv, sbx = "nemo-gym/driver", "nemo-gym/math", "nemo-gym/sandbox"
	fk := "nemo.gym.failure_class=agent_request_failed,nemo.gym.failure_kind="
	wants := []want{
		// The driver: outcomes, rewards (NaN unscored), health, sizes, writes, counts.
		{drv, "gym.rollout.completed_total", map[string]string{
			"nemo.gym.rollout.dispatch.name=math,nemo.gym.rollout.outcome=scored":                                                           "6",
			fk + "transport_timeout,nemo.gym.failure_type=TimeoutError,nemo.gym.rollout.dispatch.name=math,nemo.gym.rollout.outcome=failed": "2",
			fk + "unregistered,nemo.gym.failure_type=ValueError,nemo.gym.rollout.dispatch.name=math,nemo.gym.rollout.outcome=failed":        "1",
			"nemo.gym.rollout.dispatch.name=math,nemo.gym.rollout.outcome=omitted":                                                          "1",
		}},
		{drv, "gym.rollout.rewarded_total", map[string]string{
			"nemo.gym.rollout.dispatch.name=math,nemo.gym.rollout.masked=false,nemo.gym.rollout.reward.range=full":      "2",
			"nemo.gym.rollout.dispatch.name=math,nemo.gym.rollout.masked=false,nemo.gym.rollout.reward.range=zero":      "1",
			"nemo.gym.rollout.dispatch.name=math,nemo.gym.rollout.masked=true,nemo.gym.rollout.reward.range=partial":    "1",
			"nemo.gym.rollout.dispatch.name=math,nemo.gym.rollout.masked=false,nemo.gym.rollout.reward.range=above_one": "1",
		}},
		{drv, "gym.rollout.health_verdict_total", map[string]string{
			"nemo.gym.health.verdict=healthy,nemo.gym.rollout.outcome=scored":    "4",
			"nemo.gym.health.verdict=unhealthy,nemo.gym.rollout.outcome=scored":  "2",
			"nemo.gym.health.verdict=unobserved,nemo.gym.rollout.outcome=failed": "2",
		}},
		{drv, "gym.rollout.health_flagged_total", map[string]string{
			"nemo.gym.health.check=agent_turn_hollow,nemo.gym.rollout.outcome=scored": "2",
			"nemo.gym.health.check=model_call_failed,nemo.gym.rollout.outcome=scored": "1",
			"nemo.gym.health.check=unregistered,nemo.gym.rollout.outcome=scored":      "1",
		}},
		{drv, "gym.driver.rollout.input_items", map[string]string{"": "10/55"}},
		{drv, "gym.driver.rollout.output_items", map[string]string{"": "10/110"}},
		{drv, "gym.driver.rollout.turns", map[string]string{"": "10/23"}},
		{drv, "gym.driver.rollout.tool_calls", map[string]string{"": "10/45"}},
		{drv, "gym.driver.output_write_duration_ms", map[string]string{"": "10/15"}},
		{drv, "gym.driver.output_write_bytes", map[string]string{"": "10/55000"}},
		{drv, "gym.driver.materialize_duration_ms", map[string]string{"": "1/12.5"}},
		{drv, "gym.driver.rollouts.offered_total", map[string]string{"": "10"}},
		{drv, "gym.driver.rollouts.resident", map[string]string{"": "0"}},
		{drv, "gym.driver.rollouts.active", map[string]string{"": "0"}},
		// The server: requests by status, cancellations, pool, startup stages.
		{srv, "gym.server.responses_total", map[string]string{"http.response.status_code=200": "10", "http.response.status_code=500": "2"}},
		{srv, "gym.server.requests.unhandled_exceptions_total", map[string]string{"": "2"}},
		{srv, "gym.server.requests.cancelled_total", map[string]string{"http.route=/run,nemo.gym.request.phase=before_response": "1"}},
		{srv, "gym.server.requests.in_flight", map[string]string{"": "0"}},
		{srv, "gym.http.client.requests.in_flight", map[string]string{"": "0"}},
		{srv, "gym.http.connection_pool.connect_total", map[string]string{"nemo.gym.http.destination.server.name=policy_model": "4"}},
		{srv, "gym.http.connection_pool.connect_duration_ms", map[string]string{
			"nemo.gym.http.connection_pool.connect_outcome=ok,nemo.gym.http.destination.server.name=policy_model":     "3/3.75",
			"nemo.gym.http.connection_pool.connect_outcome=failed,nemo.gym.http.destination.server.name=policy_model": "1/1.25",
		}},
		{srv, "gym.http.connection_pool.queue_duration_ms", map[string]string{
			"nemo.gym.http.connection_pool.queue_constraint=per_host,nemo.gym.http.connection_pool.queue_outcome=ok,nemo.gym.http.destination.server.name=policy_model":     "1/0.5",
			"nemo.gym.http.connection_pool.queue_constraint=total,nemo.gym.http.connection_pool.queue_outcome=abandoned,nemo.gym.http.destination.server.name=policy_model": "1/3",
		}},
		{srv, "gym.server.startup_stage_duration_ms", map[string]string{
			"nemo.gym.server.name=math,nemo.gym.server.type=resources_servers,nemo.gym.server.worker=false,nemo.gym.startup.stage=import":  "1/120",
			"nemo.gym.server.name=math,nemo.gym.server.type=resources_servers,nemo.gym.server.worker=false,nemo.gym.startup.stage=config":  "1/30.5",
			"nemo.gym.server.name=math,nemo.gym.server.type=resources_servers,nemo.gym.server.worker=false,nemo.gym.startup.stage=uvicorn": "1/250",
		}},
		// The sandbox worker.
		{sbx, "gym.sandbox.active", map[string]string{"nemo.gym.sandbox.provider=docker": "1"}},
		{sbx, "gym.sandbox.startup_duration_ms", map[string]string{"nemo.gym.sandbox.provider=docker": "3/7500"}},
		{sbx, "gym.sandbox.exec_duration_ms", map[string]string{"nemo.gym.sandbox.provider=docker": "5/500"}},
		{sbx, "gym.sandbox.create_retry_total", map[string]string{"nemo.gym.sandbox.provider=docker": "2"}},
	}
	err := harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		exports := sink.Exports()
		for _, w := range wants {
			got := values(pyPoints(latestOf(exports, w.svc), w.svc, w.metric))
			if !maps.Equal(got, w.values) {
				return fmt.Errorf("%s %s: got %v, want %v", w.svc, w.metric, got, w.values)
			}
		}
		return nil
	})
	require.NoError(t, err)

	// The sampled readings: their values depend on timing, their presence and bounds do not.
	exports := sink.Exports()
	for _, svc := range []string{srv, drv} {
		md := latestOf(exports, svc)
		loop := map[string]string{srv: "server", drv: "driver"}[svc]
		lag := pyPoints(md, svc, "gym.event_loop.lag_ms")
		require.Len(t, lag, 1, svc)
		assert.Equal(t, "nemo.gym.event_loop="+loop, lag[0].attrs)
		assert.GreaterOrEqual(t, lag[0].count, uint64(2), "%s: one lag sample per interval", svc)
		assert.True(t, lag[0].resourcePI, "the resource names process.pid")
		tasks := pyPoints(md, svc, "gym.event_loop.tasks")
		require.Len(t, tasks, 1, svc)
		assert.GreaterOrEqual(t, tasks[0].value, 1.0, "%s: the sampler's own task at least", svc)
		assert.Len(t, pyPoints(md, svc, "gym.gc.count"), 3, "%s: gc.count by generation", svc)
		assert.Len(t, pyPoints(md, svc, "gym.gc.collections_total"), 3, svc)
	}
	md := latestOf(exports, srv)
	gen2 := values(pyPoints(md, srv, "gym.gc.collections_total"))["nemo.gym.gc.generation=2"]
	assert.NotEqual(t, "0", gen2, "the server's gc.collect() is a generation-2 collection")
	pauses := values(pyPoints(md, srv, "gym.gc.pause_duration_ms"))
	assert.Contains(t, pauses, "nemo.gym.gc.generation=2", "its pause was recorded")

	// Every instrument of the schema that events feed is there, from one process or another
	// (those of Gym's newer releases: TestPythonEmitterGymToday).
	seen := map[string]bool{}
	for _, svc := range []string{srv, drv, sbx} {
		for _, rm := range latestOf(exports, svc).ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					seen[m.Name()] = true
				}
			}
		}
	}
	for _, in := range schema.Instruments {
		if in.Source == "events" && !gymTodayGroups[in.Group] {
			assert.True(t, seen[in.Name], "%s: nothing from the Python processes", in.Name)
		}
	}
	require.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))
}

// gymTodayGroups are the schema's groups of the instruments of Gym's newer releases that
// events feed, which TestPythonEmitterGymToday's process sends.
var gymTodayGroups = map[string]bool{"Concurrency limits": true, "Model calls": true, "Memory of server process trees": true, "nemo-lens": true}
