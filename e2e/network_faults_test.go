//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // the agents send gzip

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The network between a node agent (deploy/agent.yaml) and a gateway (deploy/gateway.yaml),
// broken on purpose by a TCP proxy of the test between them: a gateway that takes connections
// and never answers, one that answers "busy" (gRPC UNAVAILABLE / RESOURCE_EXHAUSTED with and
// without RetryInfo; HTTP 503 / 429 with and without Retry-After), connections reset in the
// middle of a request or of its answer, and a long outage that fills the persistent queue,
// ended by kill -9 of both ends. Every case ends with Prometheus' raw samples adding up, for
// every Gym process, to exactly what it sent (docs/deployment.md, Network faults).

// faultAgent is a deploy/agent.yaml agent exporting to a proxy, fed by one Gym process of each
// kind: over HTTP, writing an events file, and Gym's SDK over OTLP/HTTP, all in one run.
type faultAgent struct {
	*deployed
	procs    []*gymProcess
	gymPorts []int
	settle   time.Duration // how long Prometheus' totals may take to be exact (waitExact)
}

// agentEnv is the agent's environment for exporting to gateway, with its state in dir.
func agentEnv(t *testing.T, dir, gateway string, gymPort int, otlpHTTP string) []string {
	return []string{
		"OTELCOL_GYM_GATEWAY_ENDPOINT=" + gateway,
		"OTELCOL_GYM_STORAGE_DIR=" + filepath.Join(dir, "state"),
		fmt.Sprintf("OTELCOL_GYM_EVENTS_ENDPOINT=127.0.0.1:%d", gymPort),
		"OTELCOL_GYM_EVENTS_SOCKET=" + filepath.Join(dir, "gym.sock"),
		"OTELCOL_GYM_EVENT_FILES=" + filepath.Join(dir, "gym", "*.events.jsonl"),
		"OTELCOL_GYM_FILES_POLL_INTERVAL=100ms",
		"OTELCOL_GYM_COLLECTION_INTERVAL=300ms",
		"OTELCOL_GYM_PROCESS_STATS=false",
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		"OTELCOL_GYM_OTLP_HTTP_ENDPOINT=" + otlpHTTP,
		"OTELCOL_GYM_NODE_NAME=" + filepath.Base(dir),
	}
}

// startFaultAgent starts an agent named name (its run is e2e-faults-NAME) on agent.yaml and
// overlays, exporting to gateway; env is added last (it wins).
func startFaultAgent(t *testing.T, name, gateway string, overlays, env []string) *faultAgent {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "gym"), 0o700))
	gymPort := harness.Port(t)
	otlpHTTP := fmt.Sprintf("127.0.0.1:%d", harness.Port(t))
	a := &faultAgent{gymPorts: []int{gymPort}, settle: time.Minute}
	a.deployed = startDeployedConfigs(t, "agent-"+name, append([]string{"agent.yaml"}, overlays...),
		append(agentEnv(t, dir, gateway, gymPort, otlpHTTP), env...))
	run := "e2e-faults-" + name
	a.procs = []*gymProcess{
		{instance: name + "-http", run: run},
		{instance: name + "-file", run: run, file: filepath.Join(dir, "gym", "rollouts.events.jsonl")},
		{instance: name + "-sdk", run: run, otlp: "http://" + otlpHTTP, start: pcommon.NewTimestampFromTime(time.Now())},
	}
	return a
}

// round has every Gym process of the agent send a few rollouts.
func (a *faultAgent) round(t *testing.T, n int) {
	t.Helper()
	for i, g := range a.procs {
		g.emit(t, nil, a.gymPorts, n+i)
	}
}

// emitUntil sends rounds every 200 ms until done holds (at most within).
func (a *faultAgent) emitUntil(t *testing.T, what string, within time.Duration, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !done() {
		require.True(t, time.Now().Before(deadline), "%s: still not after %s", what, within)
		a.round(t, 2)
		time.Sleep(200 * time.Millisecond)
	}
}

// counter is one of the collector's own counters (the Prometheus exporter adds _total).
func (d *deployed) counter(t *testing.T, name string) float64 {
	return harness.TelemetryValue(t, d.ports, name+"_total") + harness.TelemetryValue(t, d.ports, name)
}

// healthy reports whether the collector's health check answers 200.
func (d *deployed) healthy() bool {
	_, err := harness.HTTPGet(d.healthURL)
	return err == nil
}

// logCount is how often the collector's log holds sub.
func (d *deployed) logCount(sub string) int { return strings.Count(d.LogTail(1<<24), sub) }

const exportFailed = "Exporting failed. Will retry the request after interval."

// waitExact waits until Prometheus holds exactly what the agent's processes sent, with no
// counter reset in any of their series, and returns how long that took. With sdkPeriodic the
// SDK process exports its (unchanged) counter again before each look, as Gym's SDK does every
// export interval: an export the agent refused (a full queue) is then carried by the next one.
func (a *faultAgent) waitExact(t *testing.T, prom, what string, sdkPeriodic bool) time.Duration {
	t.Helper()
	start := time.Now()
	var tick func()
	if sdkPeriodic {
		tick = func() {
			for _, g := range a.procs {
				if g.otlp != "" {
					g.emit(t, nil, a.gymPorts, 0)
				}
			}
		}
	}
	got := waitTotalsWithin(t, prom, a.name+": "+what, a.procs, tick, a.settle)
	for _, g := range a.procs {
		assert.Zero(t, got[g.promInstance()].resets, "%s: %s: counter resets", what, g.instance)
	}
	return time.Since(start)
}

// otlpHTTPOverlay writes an overlay of agent.yaml that exports with otlp_http to endpoint,
// with the otlp_grpc exporter's settings from the recipe (queue, retries, timeout, gzip).
func otlpHTTPOverlay(t *testing.T, endpoint string) string {
	t.Helper()
	exp := shippedExporter(t, filepath.Join("deploy", "agent.yaml"), "otlp_grpc")
	for _, grpcOnly := range []string{"balancer_name", "tls", "keepalive"} {
		delete(exp, grpcOnly)
	}
	exp["endpoint"] = endpoint
	return exporterOverlay(t, "otlp_http", exp, "otlp_http")
}

// shippedExporter is the settings of the exporter name in a configuration file of the
// repository (file: its path from the repository's root).
func shippedExporter(t *testing.T, file, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(harness.Root, file))
	require.NoError(t, err)
	var shipped struct {
		Exporters map[string]map[string]any `yaml:"exporters"`
	}
	require.NoError(t, yaml.Unmarshal(data, &shipped))
	require.NotNil(t, shipped.Exporters[name], "%s has the exporter %s", file, name)
	return shipped.Exporters[name]
}

// exporterOverlay writes a configuration overlay that sets the exporter name and the metrics
// pipeline's exporters, and returns its path.
func exporterOverlay(t *testing.T, name string, settings map[string]any, pipeline ...string) string {
	t.Helper()
	out, err := yaml.Marshal(map[string]any{
		"exporters": map[string]any{name: settings},
		"service":   map[string]any{"pipelines": map[string]any{"metrics": map[string]any{"exporters": pipeline}}},
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "exporter-overlay.yaml")
	require.NoError(t, os.WriteFile(path, out, 0o600))
	return path
}

// TestNetworkFaults runs one Prometheus and one gateway, and for each fault an agent of its own
// exporting through a fault proxy to the gateway (the long outage has a gateway of its own, as
// it kills it).
func TestNetworkFaults(t *testing.T) {
	t.Parallel()
	prom := harness.StartRemoteWritePrometheus(t)
	gwGRPC, gwHTTP := harness.Port(t), harness.Port(t)
	gwEnv := func(grpcPort, httpPort int) []string {
		return []string{
			fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", grpcPort),
			fmt.Sprintf("OTELCOL_GYM_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", httpPort),
			"OTELCOL_GYM_REMOTE_WRITE_URL=" + prom + "/api/v1/write",
		}
	}
	startDeployed(t, "gateway", "gateway.yaml", gwEnv(gwGRPC, gwHTTP))
	gwGRPCAddr, gwHTTPAddr := fmt.Sprintf("127.0.0.1:%d", gwGRPC), fmt.Sprintf("127.0.0.1:%d", gwHTTP)

	t.Run("hang", func(t *testing.T) {
		t.Parallel()
		faultHang(t, prom, gwGRPCAddr)
	})
	t.Run("busy gRPC", func(t *testing.T) {
		t.Parallel()
		faultBusy(t, prom, gwGRPCAddr, false)
	})
	t.Run("busy HTTP", func(t *testing.T) {
		t.Parallel()
		faultBusy(t, prom, gwHTTPAddr, true)
	})
	t.Run("resets", func(t *testing.T) {
		t.Parallel()
		faultResets(t, prom, gwGRPCAddr)
	})
	t.Run("long outage and kill -9", func(t *testing.T) {
		t.Parallel()
		faultLongOutage(t, prom, gwEnv)
	})
}

// faultHang: the gateway hangs: the connection open stays open but nothing comes back (read and
// discarded), and a new one is accepted and never answered. With a 1 s exporter timeout
// (OTELCOL_GYM_EXPORT_TIMEOUT) every attempt times out and is retried from the queue; the
// agent's keepalive (OTELCOL_GYM_GATEWAY_KEEPALIVE_TIME, _TIMEOUT: 10 s, 1 s here) leaves the
// silent connection and the agent connects again (where a gateway of several would drop out of
// the rotation); it stays healthy and keeps collecting. A retried attempt is no failed send: the
// exporter counts a send as failed only when it gives the request up (max_elapsed_time, 30
// min, or a permanent error), so otelcol_exporter_send_failed_metric_points stays 0 while the
// queue grows. When the gateway answers again (a new connection), every total is exact.
func faultHang(t *testing.T, prom, gateway string) {
	p := newFaultProxy(t, gateway)
	a := startFaultAgent(t, "hang", p.addr, nil, []string{
		"OTELCOL_GYM_EXPORT_TIMEOUT=1s",
		"OTELCOL_GYM_GATEWAY_KEEPALIVE_TIME=10s", // gRPC's least
		"OTELCOL_GYM_GATEWAY_KEEPALIVE_TIMEOUT=1s",
	})
	a.round(t, 5)
	a.waitExact(t, prom, "before the hang", false)

	failed := a.logCount(exportFailed)
	start := time.Now()
	p.stall()
	var queued float64
	a.emitUntil(t, "attempts timing out, the queue growing, a new connection", time.Minute, func() bool {
		queued = harness.TelemetryValue(t, a.ports, "otelcol_exporter_queue_size")
		return a.logCount(exportFailed) >= failed+4 && queued > 0 && p.hung.Load() > 0
	})
	left := time.Since(start)
	log := a.LogTail(1 << 24)
	assert.Contains(t, log, "DeadlineExceeded", "the attempts time out")
	assert.True(t, a.healthy(), "the agent stays healthy")
	assert.Zero(t, a.counter(t, "otelcol_exporter_send_failed_metric_points"), "a retried attempt is no failed send")
	assert.Zero(t, a.counter(t, "otelcol_exporter_enqueue_failed_metric_points"))
	t.Logf("hang: %d attempts timed out, %v requests queued; the agent connected again %s after the gateway hung",
		a.logCount(exportFailed)-failed, queued, left.Round(100*time.Millisecond))

	p.set(modePass, busyAnswer{})
	a.round(t, 3)
	took := a.waitExact(t, prom, "after the hang", false)
	assert.Zero(t, a.counter(t, "otelcol_exporter_send_failed_metric_points"))
	t.Logf("hang: exact totals %s after the gateway answered again", took.Round(100*time.Millisecond))
}

// busyPhase is one kind of "busy" answer and whether the agent retries it.
type busyPhase struct {
	name   string
	answer busyAnswer
}

// faultBusy: the gateway answers every request "busy" (gRPC, or HTTP with otlp_http), first
// without a retry delay, then with one of 5 s. Counted from the first busy answer, the agent's
// two queue consumers make at most one attempt each in the delay's window (the retry honours
// the delay), at most half as many as in the same window without a delay (the exporter's
// backoff from 1 s). A gRPC RESOURCE_EXHAUSTED without RetryInfo is permanent: the request is dropped and
// counted (send_failed), and the next collection carries the totals again. Every total is
// exact when the gateway takes requests again.
func faultBusy(t *testing.T, prom, gateway string, overHTTP bool) {
	const delay = 5 * time.Second
	const consumers = 2 // agent.yaml's sending_queue.num_consumers
	p := newFaultProxy(t, gateway)
	phases := []busyPhase{
		{"UNAVAILABLE", busyAnswer{code: codes.Unavailable}},
		{"UNAVAILABLE with RetryInfo", busyAnswer{code: codes.Unavailable, delay: delay}},
		{"RESOURCE_EXHAUSTED with RetryInfo", busyAnswer{code: codes.ResourceExhausted, delay: delay}},
	}
	name, overlays := "busy-grpc", []string(nil)
	if overHTTP {
		p.serveBusyHTTP(t)
		phases = []busyPhase{
			{"503", busyAnswer{status: http.StatusServiceUnavailable}},
			{"503 with Retry-After", busyAnswer{status: http.StatusServiceUnavailable, delay: delay}},
			{"429 with Retry-After", busyAnswer{status: http.StatusTooManyRequests, delay: delay}},
		}
		name = "busy-http"
		overlays = []string{otlpHTTPOverlay(t, "http://"+p.addr)}
	} else {
		p.serveBusyGRPC(t)
	}
	// The otlp_grpc exporter, unused over HTTP, still needs an address. Gym's spans go to the
	// gateway itself: the recorder's gRPC connection must not reach the proxy's HTTP server.
	a := startFaultAgent(t, name, p.addr, overlays, []string{"OTELCOL_GYM_RECORDER_ENDPOINT=" + gateway})
	a.round(t, 5)
	a.waitExact(t, prom, "before the gateway is busy", false)

	attempts := make([]int, len(phases))
	for i, ph := range phases {
		n := p.answered()
		p.set(modeBusy, ph.answer)
		a.emitUntil(t, ph.name+": a first busy answer", time.Minute, func() bool { return p.answered() > n })
		t0 := p.answersSince(n)[0]
		a.emitUntil(t, ph.name+": the delay's window", time.Minute, func() bool { return time.Since(t0) > delay+300*time.Millisecond })
		for _, at := range p.answersSince(n) {
			if at.Sub(t0) < delay {
				attempts[i]++
			}
		}
		t.Logf("%s: %s: %d attempts in the %s after the first busy answer", name, ph.name, attempts[i], delay)
	}
	for i, ph := range phases[1:] {
		assert.LessOrEqual(t, attempts[i+1], consumers, "%s: the retry waits the delay the gateway asks for", ph.name)
		// Without a delay, one consumer alone retries at least twice in the window (backoff
		// from 1 s, randomized by half, times 1.5).
		assert.GreaterOrEqual(t, attempts[0], 2*attempts[i+1], "%s: far fewer attempts than without a delay (%s)", ph.name, phases[0].name)
	}
	assert.Zero(t, a.counter(t, "otelcol_exporter_send_failed_metric_points"), "busy answers are retried")
	assert.True(t, a.healthy())

	if !overHTTP {
		// Permanent: each request is dropped and counted at once.
		p.set(modeBusy, busyAnswer{code: codes.ResourceExhausted})
		a.emitUntil(t, "RESOURCE_EXHAUSTED without RetryInfo: dropped requests", time.Minute, func() bool {
			return a.counter(t, "otelcol_exporter_send_failed_metric_points") > 0
		})
		t.Logf("%s: RESOURCE_EXHAUSTED without RetryInfo: %v points dropped (send_failed)", name,
			a.counter(t, "otelcol_exporter_send_failed_metric_points"))
	}
	p.set(modePass, busyAnswer{})
	a.round(t, 3)
	took := a.waitExact(t, prom, "after the busy gateway", false)
	t.Logf("%s: exact totals %s after the gateway took requests again", name, took.Round(100*time.Millisecond))
}

// faultResets: connections reset (RST) in the middle of a request (half of its first gRPC
// message relayed) and between a request the gateway took and its answer (the gateway had
// written it to Prometheus; the agent, without an answer, sends it again). The agent retries
// on a new connection; the request written twice is the same samples, so nothing is counted
// twice, and no series resets.
func faultResets(t *testing.T, prom, gateway string) {
	p := newFaultProxy(t, gateway)
	a := startFaultAgent(t, "resets", p.addr, nil, nil)
	a.round(t, 5)
	a.waitExact(t, prom, "before the resets", false)
	for _, c := range []struct {
		name string
		mode proxyMode
	}{
		{"mid-request", modeCutRequest},
		{"before the answer", modeCutResponse},
	} {
		cuts, failed := p.cuts.Load(), a.logCount(exportFailed)
		p.set(c.mode, busyAnswer{})
		a.emitUntil(t, c.name+": three resets", time.Minute, func() bool { return p.cuts.Load() >= cuts+3 })
		// The agent logs a failed attempt after the proxy counted its cut: wait for the third.
		assert.Eventually(t, func() bool { return a.logCount(exportFailed) >= failed+3 }, time.Minute, 50*time.Millisecond,
			"%s: each reset attempt is retried", c.name)
		p.set(modePass, busyAnswer{})
		a.round(t, 3)
		took := a.waitExact(t, prom, "after resets "+c.name, false)
		t.Logf("resets %s: %d cut; exact totals %s after", c.name, p.cuts.Load()-cuts, took.Round(100*time.Millisecond))
	}
	assert.Zero(t, a.counter(t, "otelcol_exporter_send_failed_metric_points"))
}

// faultLongOutage: the gateway is unreachable (every connection reset at once) for as many
// collections as ten minutes at the default 10 s interval (60 at 100 ms) with a queue of 2
// requests: the queue fills and the agent refuses, and counts, the collections it cannot
// queue (enqueue_failed). The data is cumulative, so the newest collection carries everything
// and the totals are still exact when the gateway is back. Then, during a second outage with
// the queue full, the agent and the gateway are both killed (SIGKILL) and restarted, the agent
// on the same storage: the queue and the receiver's checkpoint are restored, the totals are
// exact and no series resets.
func faultLongOutage(t *testing.T, prom string, gwEnv func(int, int) []string) {
	interval := 100 * time.Millisecond
	if os.Getenv("GYM_REAL_OUTAGE") != "" { // the ten minutes themselves, at the default interval
		interval = 10 * time.Second
	}
	gwPort := harness.Port(t)
	gw := startDeployed(t, "gateway-outage", "gateway.yaml", gwEnv(gwPort, harness.Port(t)))
	p := newFaultProxy(t, fmt.Sprintf("127.0.0.1:%d", gwPort))
	a := startFaultAgent(t, "outage", p.addr, nil, []string{
		"OTELCOL_GYM_COLLECTION_INTERVAL=" + interval.String(),
		"OTELCOL_GYM_EXPORT_QUEUE_SIZE=2",
	})
	a.settle = max(time.Minute, 30*interval) // after a real outage: the backoffs at their bounds
	a.round(t, 5)
	a.waitExact(t, prom, "before the outage", false)

	p.set(modeRefuse, busyAnswer{})
	start := time.Now()
	a.emitUntil(t, "60 collections and a full queue", max(time.Minute, 70*interval), func() bool {
		return time.Since(start) >= 60*interval && a.counter(t, "otelcol_exporter_enqueue_failed_metric_points") > 0
	})
	refused := a.counter(t, "otelcol_exporter_enqueue_failed_metric_points")
	t.Logf("outage: %s (%d collections); %v points refused by the full queue (capacity %v)",
		time.Since(start).Round(100*time.Millisecond), int(time.Since(start)/interval), refused,
		harness.TelemetryValue(t, a.ports, "otelcol_exporter_queue_capacity"))
	p.set(modePass, busyAnswer{})
	a.round(t, 3)
	took := a.waitExact(t, prom, "after the outage", true)
	assert.Zero(t, a.counter(t, "otelcol_exporter_send_failed_metric_points"), "the queued requests were retried, none given up")
	t.Logf("outage: exact totals %s after the gateway was reachable again", took.Round(100*time.Millisecond))

	// A second outage; the rollouts stop, so that the receiver's checkpoint (saved at each
	// collection) holds everything the HTTP process was answered for: a kill -9 loses what
	// HTTP senders posted since the last checkpoint, a bound of its own (docs/deployment.md).
	p.set(modeRefuse, busyAnswer{})
	a.emitUntil(t, "a full queue again", time.Minute, func() bool {
		return harness.TelemetryValue(t, a.ports, "otelcol_exporter_queue_size") >= 2
	})
	time.Sleep(5 * interval)
	queued := harness.TelemetryValue(t, a.ports, "otelcol_exporter_queue_size")
	assert.Positive(t, queued, "the queue holds requests when the agent is killed")
	a.kill()
	gw.kill()
	for _, g := range a.procs {
		if g.file != "" {
			g.emit(t, nil, a.gymPorts, 4) // the file grows while the agent is down
		}
	}
	require.NoError(t, gw.start(t), "the gateway after kill -9")
	require.NoError(t, a.start(t), "the agent after kill -9, on the same storage")
	p.set(modePass, busyAnswer{})
	a.round(t, 3)
	took = a.waitExact(t, prom, "after kill -9 of the agent and the gateway", true)
	t.Logf("kill -9 with %v requests queued: exact totals, no resets, %s after the restart", queued, took.Round(100*time.Millisecond))
	assert.Zero(t, a.counter(t, "otelcol_receiver_gym_checkpoint_discards"), "the checkpoint was restored")
}
