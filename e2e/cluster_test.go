//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// One Gym run on two nodes through the shipped recipes: two node agents (deploy/agent.yaml), one
// gateway (deploy/gateway.yaml), which is where the run's spans meet and its flight recorder
// runs, and behind it a real Prometheus and a real VictoriaMetrics (each remote write goes to
// both), and an OTLP trace and log backend.

const clusterRun = "e2e-cluster"

// remoteWriteTee answers a remote write once every backend has taken it (the first failure's
// status otherwise), so that one gateway writes the same samples into several backends.
func remoteWriteTee(t *testing.T, backends ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, b := range backends {
			req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, b+"/api/v1/write", bytes.NewReader(body))
			req.Header = r.Header.Clone()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				http.Error(w, fmt.Sprintf("%s: %s", b, msg), resp.StatusCode)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api/v1/write"
}

// gymLogs is one OTLP export of n log records of a Gym process of run (nemo-lens's logging
// bridge).
func gymLogs(t *testing.T, run, server string, n int) []byte {
	t.Helper()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "nemo-gym/"+server)
	rl.Resource().Attributes().PutStr("nemo.run.id", run)
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i := range n {
		lr := lrs.AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.Body().SetStr(fmt.Sprintf("%s: step %d", server, i))
	}
	body, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	require.NoError(t, err)
	return body
}

// clusterNode is a node of the run: its agent, where Gym's SDK sends to it and a Gym process
// that sends events to it.
type clusterNode struct {
	*deployed
	otlp    string // http://127.0.0.1:PORT
	gymPort int
	proc    *gymProcess
}

func startClusterAgent(t *testing.T, name, gateway string) *clusterNode {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "gym"), 0o700))
	otlpHTTP, gymPort := fmt.Sprintf("127.0.0.1:%d", harness.Port(t)), harness.Port(t)
	d := startDeployed(t, "agent-"+name, "agent.yaml", agentEnv(t, dir, gateway, gymPort, otlpHTTP))
	return &clusterNode{deployed: d, otlp: "http://" + otlpHTTP, gymPort: gymPort,
		proc: &gymProcess{instance: name + "-gym", run: clusterRun}}
}

func (n *clusterNode) spans(t *testing.T, spans ...string) {
	postOK(t, n.otlp+"/v1/traces", gymRunSpans(t, clusterRun, 0, spans...))
}

// TestClusterRecorder: a run on two nodes. Its rollouts' spans come from both nodes' Gym
// processes: busy alternates its agent (node A) and its model server (node B) every 300 ms;
// quiet-a goes quiet on A after a sandbox command; quiet-b starts on A and goes quiet on B in
// a verification; done finishes (its gym.rollout span comes from A after a model call on B).
// Every span and log record sent to either agent is accepted (none refused) and reaches the
// trace/log backend; Prometheus and VictoriaMetrics show the run's exact in-flight (3) and
// stalled (2) counts, one recorder's series. Then the gateway is killed (SIGKILL) for longer
// than stall_after while busy goes on: started again on its storage, it goes on with the same
// counts, and busy never stalls.
func TestClusterRecorder(t *testing.T) {
	t.Parallel()
	prom := harness.StartRemoteWritePrometheus(t)
	vm := harness.StartVictoriaMetrics(t)
	backend := &harness.OTLPBackend{}
	traceSrv := httptest.NewServer(backend)
	t.Cleanup(traceSrv.Close)

	const stallAfter = 12 * time.Second
	gwPort := harness.Port(t)
	gwEnv := []string{
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", gwPort),
		"OTELCOL_GYM_REMOTE_WRITE_URL=" + remoteWriteTee(t, prom, vm),
		"OTELCOL_GYM_STORAGE_DIR=" + filepath.Join(t.TempDir(), "gateway"),
		"OTELCOL_GYM_STALL_AFTER=" + stallAfter.String(),
		"OTELCOL_GYM_COLLECTION_INTERVAL=1s",
		"OTELCOL_GYM_NODE_NAME=recorder-1",
		"OTELCOL_GYM_TRACES_EXPORTERS=[otlp_http/backend]",
		"OTELCOL_GYM_LOGS_EXPORTERS=[otlp_http/backend]",
		"OTELCOL_GYM_OTLP_BACKEND_ENDPOINT=" + traceSrv.URL,
	}
	gw := startDeployed(t, "gateway", "gateway.yaml", gwEnv)
	gateway := fmt.Sprintf("127.0.0.1:%d", gwPort)
	a, b := startClusterAgent(t, "node-a", gateway), startClusterAgent(t, "node-b", gateway)

	var mu sync.Mutex
	sent := 0 // spans
	send := func(n *clusterNode, spans ...string) {
		mu.Lock()
		sent += len(spans)
		mu.Unlock()
		n.spans(t, spans...)
	}
	send(a, "quiet-a/gym.agent.responses/math_agent", "quiet-b/gym.agent.responses/math_agent", "done/gym.agent.responses/math_agent")
	send(b, "done/gym.model.chat_completions/policy_model")
	// The two agents batch and send on timers of their own: a span sent to B after one sent to
	// A may reach the gateway first. A rollout's spans are in order only when its earlier ones
	// were recorded before the next is sent (quiet-b stalls in its verification, not in the
	// agent call before it).
	require.NoError(t, harness.Eventually(60*time.Second, 100*time.Millisecond, func() error {
		if gw.counter(t, "otelcol_receiver_accepted_spans") < 4 {
			return harness.ErrNotYet
		}
		return nil
	}), "the first spans at the gateway")
	send(a, "done/gym.rollout/math_agent", "quiet-a/gym.sandbox.exec/sandbox")
	send(b, "quiet-b/gym.verify/math_resources")
	logs := 0
	for i, n := range []*clusterNode{a, b} {
		postOK(t, n.otlp+"/v1/logs", gymLogs(t, clusterRun, "math_agent", 5))
		logs += 5
		n.proc.emit(t, nil, []int{n.gymPort}, 4+i) // completed rollouts: the run's events on each node
	}

	stop, done := make(chan struct{}), make(chan struct{})
	go func() { // busy: a span every 300 ms, its nodes in turn
		defer close(done)
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				if i%2 == 0 {
					send(a, "busy/gym.agent.responses/math_agent")
				} else {
					send(b, "busy/gym.model.chat_completions/policy_model")
				}
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()

	inFlight := fmt.Sprintf(`sum by (nemo_run_id, host_name) (gym_rollout_in_flight{nemo_run_id=%q})`, clusterRun)
	stalled := fmt.Sprintf(`sum by (nemo_run_id, host_name) (gym_rollout_stalled{nemo_run_id=%q})`, clusterRun)
	want := func(v float64) map[string]float64 {
		return map[string]float64{fmt.Sprintf(`{host_name="recorder-1",nemo_run_id=%q}`, clusterRun): v}
	}
	for _, db := range []string{prom, vm} {
		waitVector(t, db, stalled, want(2))
		waitVector(t, db, inFlight, want(3))
	}

	checkClusterPage(t, gw, 3, 2, a.proc.sent+b.proc.sent)
	busyStalled := fmt.Sprintf(`max_over_time(gym_rollout_stalled{nemo_run_id=%q, nemo_gym_rollout_stage=~"agent|model_call"}[10m])`, clusterRun)
	stallsByStage := fmt.Sprintf(`sum by (nemo_gym_rollout_stage) (gym_rollout_stalls_total{nemo_run_id=%q})`, clusterRun)
	quietStalls := map[string]float64{`{nemo_gym_rollout_stage="sandbox"}`: 1, `{nemo_gym_rollout_stage="verify"}`: 1}
	for _, db := range []string{prom, vm} { // busy never stalled while the gateway was up
		got, err := harness.PromQuery(db, busyStalled)
		require.NoError(t, err)
		for k, v := range got {
			assert.Zero(t, v, "%s: busy stalled before the restart: %s", db, k)
		}
		got, err = harness.PromQuery(db, stallsByStage)
		require.NoError(t, err)
		assert.Equal(t, quietStalls, got, "%s: one stall each for the quiet ones", db)
	}

	// The gateway is killed, and stays down longer than stall_after; busy goes on meanwhile
	// (the agents queue its spans). Started again on the same storage and port, it restores
	// the rollouts: its first collection already has the same counts (busy in flight, not
	// stalled: the outage is not counted as its silence), and so does every later one.
	gw.kill()
	time.Sleep(stallAfter + 3*time.Second)
	restarted := time.Now()
	gw = startDeployed(t, "gateway", "gateway.yaml", gwEnv)
	require.Contains(t, gw.LogTail(1<<20), "restored the rollouts kept before the restart")
	checkFirstCollection(t, gw, 3, 2)

	// The agents' queues reach the gateway again only when their retries do: gRPC's reconnect
	// backoff and the exporter's retry backoff both grew during the outage (and while gRPC
	// backs off, an attempt fails at once even though the gateway is back), so this takes
	// from a second to about as long as the outage. Until then busy's silence grows on the
	// restarted gateway, rightly: had it lasted stall_after, busy is stalled, then resumes.
	require.NoError(t, harness.Eventually(120*time.Second, 100*time.Millisecond, func() error {
		if gw.counter(t, "otelcol_receiver_accepted_spans") == 0 {
			return harness.ErrNotYet
		}
		return nil
	}), "the agents' queued spans at the restarted gateway")
	redelivered := time.Since(restarted)
	prompt := redelivered < stallAfter/2 // busy's restored silence (about a second) plus this, far from stall_after
	t.Logf("the agents' spans reached the restarted gateway %s after its start", redelivered.Round(time.Millisecond))
	time.Sleep(stallAfter + 2*time.Second) // long enough for busy to stall, were its silence counted from before the outage

	for _, db := range []string{prom, vm} {
		waitVector(t, db, stalled, want(2))
		waitVector(t, db, inFlight, want(3))
	}
	checkClusterPage(t, gw, 3, 2, a.proc.sent+b.proc.sent)
	close(stop)
	<-done

	// The quiet ones' stalls were not counted again after the restart; busy stalled only if
	// the agents' spans came back too late for it (at most once: it resumed with them).
	busyStalls := 0.0
	for _, db := range []string{prom, vm} {
		got, err := harness.PromQuery(db, stallsByStage)
		require.NoError(t, err)
		n := got[`{nemo_gym_rollout_stage="agent"}`] + got[`{nemo_gym_rollout_stage="model_call"}`]
		delete(got, `{nemo_gym_rollout_stage="agent"}`)
		delete(got, `{nemo_gym_rollout_stage="model_call"}`)
		assert.Equal(t, quietStalls, got, "%s: one stall each for the quiet ones, none counted again after the restart", db)
		if prompt {
			assert.Zero(t, n, "%s: busy stalled though the agents' spans came back %s after the restart", db, redelivered)
		} else {
			assert.LessOrEqual(t, n, 1.0, "%s: busy's stalls after a late redelivery (%s)", db, redelivered)
		}
		busyStalls = n
	}
	t.Logf("busy's stalls on the restarted gateway: %v", busyStalls)

	// Nothing Gym sent was refused, and all of it reached the trace/log backend.
	for _, n := range []*clusterNode{a, b} {
		assert.Zero(t, n.counter(t, "otelcol_receiver_refused_spans"), n.name)
		assert.Zero(t, n.counter(t, "otelcol_receiver_refused_log_records"), n.name)
		assert.Positive(t, n.counter(t, "otelcol_receiver_accepted_spans"), n.name)
	}
	mu.Lock()
	total := sent
	mu.Unlock()
	require.NoError(t, harness.Eventually(60*time.Second, 200*time.Millisecond, func() error {
		if backend.SpanCount() < total {
			return harness.ErrNotYet
		}
		return nil
	}), "spans at the backend: %d of %d", backend.SpanCount(), total)
	events := backend.LogEvents()
	assert.Equal(t, logs, events[""], "Gym's log records, each once")
	assert.Equal(t, 2+int(busyStalls), events["gym.rollout.stalled"], "the recorder's records of the stalls: %v", events)
	assert.Equal(t, int(busyStalls), events["gym.rollout.resumed"], "busy's resumption after a stall: %v", events)
	assert.Empty(t, backend.Errors())
	assert.NotContains(t, strings.ToLower(gw.LogTail(1<<20)), "could not be saved")
}

// checkFirstCollection waits for the first collection of a restarted gateway's recorder on its
// live page (the page of a new process shows no rollout in flight before it) and checks its
// counts: those the recorder restored, unchanged. Its collection interval is far shorter than
// stall_after, so a rollout busy before the outage cannot have stalled on the restarted
// gateway's clock by then: a stall there counts the outage as silence.
func checkFirstCollection(t *testing.T, gw *deployed, inFlight, stalled int) {
	t.Helper()
	url := "http://" + envOf(gw.env, "OTELCOL_GYM_LIVE_ENDPOINT") + "/api/v1/runs"
	var got []liveRunCounts
	require.NoError(t, harness.Eventually(60*time.Second, 100*time.Millisecond, func() error {
		var page struct{ Runs []liveRunCounts }
		liveGet(t, url, &page)
		got = page.Runs
		for _, r := range got {
			if r.ID == clusterRun && (r.InFlight > 0 || r.Stalled > 0) {
				return nil
			}
		}
		return harness.ErrNotYet
	}), "the restarted gateway's first collection: %+v", got)
	t.Logf("the restarted gateway's first collection: %+v", got)
	for _, r := range got {
		if r.ID == clusterRun {
			assert.Equal(t, [2]int{inFlight, stalled}, [2]int{r.InFlight, r.Stalled}, "in flight and stalled at the restarted gateway's first collection")
		}
	}
}

type liveRunCounts struct {
	ID       string `json:"id"`
	Total    int    `json:"completed_total"`
	InFlight int    `json:"in_flight"`
	Stalled  int    `json:"stalled"`
}

// checkClusterPage waits until the gateway's live page shows the whole run: its rollouts in
// flight and stalled (the recorder's) and its completed rollouts from both nodes.
func checkClusterPage(t *testing.T, gw *deployed, inFlight, stalled, completed int) {
	t.Helper()
	url := "http://" + envOf(gw.env, "OTELCOL_GYM_LIVE_ENDPOINT") + "/api/v1/runs"
	var got string
	require.NoError(t, harness.Eventually(60*time.Second, 300*time.Millisecond, func() error {
		var page struct {
			Runs []struct {
				ID       string `json:"id"`
				Total    int    `json:"completed_total"`
				InFlight int    `json:"in_flight"`
				Stalled  int    `json:"stalled"`
			} `json:"runs"`
		}
		liveGet(t, url, &page)
		got = fmt.Sprintf("%+v", page.Runs)
		for _, r := range page.Runs {
			if r.ID == clusterRun && r.InFlight == inFlight && r.Stalled == stalled && r.Total == completed {
				return nil
			}
		}
		return harness.ErrNotYet
	}), "the gateway's page: %s", got)
}

// envOf is the last value of key in env ("" when unset).
func envOf(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
