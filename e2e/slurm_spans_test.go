//go:build linux

package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// slurmSpansTask is a task of a Gym run on Slurm that sends spans and log records as Gym's SDK
// does: OTLP/HTTP (JSON here) to OTEL_EXPORTER_OTLP_ENDPOINT with OTEL_EXPORTER_OTLP_HEADERS.
// Its arguments are the rollouts' spans, "id/name/server".
const slurmSpansTask = `import json, os, sys, time, urllib.parse, urllib.request
base = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]
headers = {"Content-Type": "application/json"}
headers.update(urllib.parse.unquote(h).split("=", 1) for h in os.environ["OTEL_EXPORTER_OTLP_HEADERS"].split(","))
def s(v): return {"stringValue": v}
resource = {"attributes": [{"key": "service.name", "value": s("nemo-gym/slurm")},
                           {"key": "nemo.run.id", "value": s(os.environ["RUN_ID"])}]}
def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers=headers)
    assert urllib.request.urlopen(req, timeout=10).status == 200
now = time.time_ns()
for i, arg in enumerate(sys.argv[1:]):
    rid, name, server = arg.split("/")
    span = {"traceId": "%032x" % (hash(rid) & (1 << 128) - 1 or 1), "spanId": "%016x" % (now + i),
            "name": name, "kind": 1, "startTimeUnixNano": str(now - 10**9), "endTimeUnixNano": str(now),
            "attributes": [{"key": "nemo.gym.rollout.id", "value": s(rid)},
                           {"key": "nemo.gym.server.name", "value": s(server)}]}
    post("/v1/traces", {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "nemo_gym.telemetry"}, "spans": [span]}]}]})
time.sleep(float(os.environ.get("TASK_SLEEP", "0")))  # while the agent's recorder looks
records = [{"timeUnixNano": str(now), "severityNumber": 9, "body": s("step %d" % i)} for i in range(3)]
post("/v1/logs", {"resourceLogs": [{"resource": resource, "scopeLogs": [{"scope": {"name": "nemo_gym"}, "logRecords": records}]}]})
`

// TestSlurmSpans: a Gym run on two nodes of a Slurm job step, each node's task run by the
// launcher with its step agent, sends its spans and log records to its agent, as Gym's SDK does
// with the environment the launcher gives it. Both agents take them (nothing refused; the step
// summaries count them, nothing lost) and send them to the gateway (deploy/gateway.yaml), whose
// flight recorder counts the run's rollouts from both nodes: in Prometheus, the two that went
// quiet are in flight and stalled, the finished one is not; the spans and logs reach the
// gateway's OTLP backend.
func TestSlurmSpans(t *testing.T) {
	t.Parallel()
	const run = "e2e-slurm-spans"
	prom := harness.StartRemoteWritePrometheus(t)
	backend := &harness.OTLPBackend{}
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)
	gwPort := harness.Port(t)
	startDeployed(t, "gateway", "gateway.yaml", []string{
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", gwPort),
		"OTELCOL_GYM_REMOTE_WRITE_URL=" + prom + "/api/v1/write",
		"OTELCOL_GYM_STALL_AFTER=2s",
		"OTELCOL_GYM_COLLECTION_INTERVAL=500ms",
		"OTELCOL_GYM_NODE_NAME=gateway-1",
		"OTELCOL_GYM_TRACES_EXPORTERS=[otlp_http/backend]",
		"OTELCOL_GYM_LOGS_EXPORTERS=[otlp_http/backend]",
		"OTELCOL_GYM_OTLP_BACKEND_ENDPOINT=" + srv.URL,
	})

	nodes := [][]string{
		{"quiet/gym.agent.responses/math_agent", "done/gym.agent.responses/math_agent", "done/gym.rollout/math_agent", "quiet/gym.sandbox.exec/sandbox"},
		{"done/gym.model.chat_completions/policy_model", "quiet-b/gym.model.chat_completions/policy_model"},
	}
	_, tasks := runSpansStep(t, run, nodes, fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", gwPort), "OTELCOL_GYM_GATEWAY_INSECURE=true")
	assert.Contains(t, tasks[0].LogTail(1<<16), "the whole run's live page, on the gateway: ssh -N -L 8890:127.0.0.1:8890 127.0.0.1,", "node 0 says where the whole run is")
	assert.NotContains(t, tasks[1].LogTail(1<<16), "the whole run's live page", "once per step")

	want := func(v float64) map[string]float64 {
		return map[string]float64{fmt.Sprintf(`{host_name="gateway-1",nemo_run_id=%q}`, run): v}
	}
	waitVector(t, prom, fmt.Sprintf(`sum by (nemo_run_id, host_name) (gym_rollout_stalled{nemo_run_id=%q})`, run), want(2))
	waitVector(t, prom, fmt.Sprintf(`sum by (nemo_run_id, host_name) (gym_rollout_in_flight{nemo_run_id=%q})`, run), want(2))
	require.NoError(t, harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		if backend.SpanCount() < 6 || backend.LogEvents()[""] < 6 {
			return harness.ErrNotYet
		}
		return nil
	}))
	assert.Equal(t, 6, backend.SpanCount(), "every span once")
	assert.Equal(t, 6, backend.LogEvents()[""], "every log record once")
}

// runSpansStep runs a job step of one task per node (nodes[i]: node i's spans) through the
// launcher with env, and checks each node's summary: its spans and log records taken, nothing
// lost. It returns the step's directory and its tasks.
func runSpansStep(t *testing.T, run string, nodes [][]string, env ...string) (string, []*harness.Process) {
	t.Helper()
	python, dir := harness.Python(t), t.TempDir()
	script := filepath.Join(dir, "spans.py")
	require.NoError(t, os.WriteFile(script, []byte(slurmSpansTask), 0o600))
	var tasks []*harness.Process
	for node, spans := range nodes {
		nodeEnv := slurmStepEnv(4343, filepath.Join(dir, fmt.Sprint(node)), append([]string{
			fmt.Sprintf("SLURM_NODEID=%d", node), "SLURM_LOCALID=0", "SLURM_PROCID=0", "SLURM_STEP_TASKS_PER_NODE=1",
			fmt.Sprintf("OTELCOL_GYM_NODE_NAME=node-%d", node), "RUN_ID=" + run, "SLURM_SUBMIT_DIR=" + dir}, env...)...)
		harness.UseCollector()
		tasks = append(tasks, harness.StartProcessEnv(t, fmt.Sprintf("node-%d", node), nodeEnv,
			append([]string{"bash", filepath.Join(harness.Root, "deploy", "slurm", "otelcol-gym-slurm"), python, script}, spans...)...))
	}
	for i, p := range tasks {
		require.Zero(t, exitCode(t, p), "%s:\n%s", p.Name, p.LogTail(8000))
		sum := summaryOf(t, p)
		assert.Equal(t, "nothing lost", sum.verdict, p.Name)
		assert.Equal(t, len(nodes[i]), sum.spans, "%s: the spans its agent took", p.Name)
		assert.Equal(t, 3, sum.records, "%s: the log records its agent took", p.Name)
		assert.Zero(t, sum.signalsLost, p.Name)
	}
	return dir, tasks
}

// TestSlurmSpansDirect: with no gateway (OTELCOL_GYM_EXPORT_TO=remote_write), the agent of the
// step's first node runs the flight recorder, which reports into the remote-write backend under
// its node's name, and Gym's spans and logs go to files in the directory the job was submitted
// from.
func TestSlurmSpansDirect(t *testing.T) {
	t.Parallel()
	const run = "e2e-slurm-spans-direct"
	prom := harness.StartRemoteWritePrometheus(t)
	dir, _ := runSpansStep(t, run, [][]string{{"quiet/gym.sandbox.exec/sandbox", "done/gym.verify/math_agent", "done/gym.rollout/math_agent"}},
		"OTELCOL_GYM_EXPORT_TO=remote_write", "OTELCOL_GYM_REMOTE_WRITE_URL="+prom+"/api/v1/write",
		"OTELCOL_GYM_STALL_AFTER=1s", "OTELCOL_GYM_COLLECTION_INTERVAL=300ms", "TASK_SLEEP=2")
	waitVector(t, prom, fmt.Sprintf(`sum by (host_name) (gym_rollout_in_flight{nemo_run_id=%q})`, run), map[string]float64{`{host_name="node-0"}`: 1})
	waitVector(t, prom, fmt.Sprintf(`sum by (host_name) (gym_rollout_stalled{nemo_run_id=%q})`, run), map[string]float64{`{host_name="node-0"}`: 1})
	host, err := os.Hostname()
	require.NoError(t, err)
	host, _, _ = strings.Cut(host, ".")
	files := filepath.Join(dir, "otelcol-gym.4343.0")
	traces := strings.Join(jsonLines(t, filepath.Join(files, "traces."+host+".jsonl")), "\n")
	assert.Equal(t, 3, strings.Count(traces, `"key":"nemo.gym.rollout.id"`), "every span once: %s", traces)
	assert.NotEmpty(t, jsonLines(t, filepath.Join(files, "logs."+host+".jsonl")))
}
