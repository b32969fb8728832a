//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// slurmTask is a job step's task: a Python process that sends its rollouts to the endpoint
// the launcher gave it, as Gym's emitter would, and writes down the telemetry environment it
// was given.
const slurmTask = `import json, os, sys, urllib.parse, urllib.request
rank = os.environ["SLURM_LOCALID"]
env = {k: os.environ.get(k) for k in ("OTELCOL_GYM_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT",
       "OTEL_EXPORTER_OTLP_PROTOCOL", "OTELCOL_GYM_ENABLED", "OTELCOL_GYM_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")}
with open(os.path.join(os.environ["TASK_OUT"], "env." + rank), "w") as f:
    json.dump(env, f)
if env["OTELCOL_GYM_ENABLED"] == "false":
    sys.exit(0)
n = int(sys.argv[1])
lines = [json.dumps({"event": "resource", "attributes": {"service.name": "nemo-gym/slurm",
         "service.instance.id": "slurm-task-" + rank, "nemo.run.id": "e2e-slurm"}})]
lines += [json.dumps({"event": "rollout.completed", "outcome": "omitted", "dispatch_name": "math"})] * n
headers = {"Content-Type": "application/x-ndjson"}
headers.update(urllib.parse.unquote(h).split("=", 1) for h in env["OTELCOL_GYM_HEADERS"].split(","))
req = urllib.request.Request(env["OTELCOL_GYM_ENDPOINT"] + "/v1/events",
    data=("\n".join(lines) + "\n").encode(), headers=headers)
ans = json.load(urllib.request.urlopen(req, timeout=10))
assert ans["accepted"] == n + 1, ans
`

// TestSlurmLauncher runs deploy/slurm/otelcol-gym-slurm as srun would on one node of a job: three
// tasks at once (SLURM_LOCALID 0, 1, 2). Only the first starts an agent; every task waits for its
// health check, sends its rollouts over the endpoint it was given, with the bearer token it
// was given (the same for every task of the step), and the agent is stopped
// after the last task, gracefully: its collection interval is 4 minutes, so only the final
// export on SIGTERM can bring the rollouts to the gateway and Prometheus, where they must be,
// exactly, once the launcher has returned.
func TestSlurmLauncher(t *testing.T) {
	t.Parallel()
	python := harness.Python(t)
	prom, gwPort := startGatewayToPrometheus(t)

	dir := t.TempDir()
	script := filepath.Join(dir, "task.py")
	require.NoError(t, os.WriteFile(script, []byte(slurmTask), 0o600))
	launcher := filepath.Join(harness.Root, "deploy", "slurm", "otelcol-gym-slurm")
	health := harness.Port(t)
	env := []string{
		"SLURM_JOB_ID=4242", "SLURM_STEP_ID=0", "SLURM_NODEID=1", "SLURM_STEP_TASKS_PER_NODE=2,3(x2)",
		"OTELCOL_GYM_BIN=" + harness.Bin,
		"OTELCOL_GYM_RUN_DIR=" + filepath.Join(dir, "run"),
		fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", gwPort),
		"OTELCOL_GYM_GATEWAY_INSECURE=true",
		"OTELCOL_GYM_COLLECTION_INTERVAL=4m",
		"OTELCOL_GYM_PROCESS_STATS=false",
		"OTELCOL_GYM_EVENT_FILES=" + filepath.Join(dir, "files", "*.events.jsonl"),
		fmt.Sprintf("OTELCOL_GYM_EVENTS_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_HEALTH_ENDPOINT=127.0.0.1:%d", health),
		fmt.Sprintf("OTELCOL_GYM_ZPAGES_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_TELEMETRY_PORT=%d", harness.Port(t)),
		"TASK_OUT=" + dir,
		// The agent's log is read below.
		"OTELCOL_GYM_KEEP_RUN_DIR=1",
	}
	// Node 1 of "2,3(x2)" runs 3 tasks: the first task waits for all three before stopping the agent.
	sent := map[string]int{}
	var tasks []*harness.Process
	for rank := range 3 {
		n := 10*rank + 7
		sent[fmt.Sprintf("slurm-task-%d", rank)] = n
		tasks = append(tasks, harness.StartProcessEnv(t, fmt.Sprintf("task-%d", rank),
			append([]string{fmt.Sprintf("SLURM_LOCALID=%d", rank), fmt.Sprintf("SLURM_PROCID=%d", 3+rank)}, env...),
			"bash", launcher, python, script, fmt.Sprint(n)))
		if rank == 0 {
			time.Sleep(300 * time.Millisecond) // the others start while the agent starts
		}
	}
	for _, p := range tasks {
		select {
		case <-p.Done():
			require.NoError(t, p.Err(), "%s:\n%s", p.Name, p.LogTail(4000))
		case <-time.After(90 * time.Second):
			t.Fatalf("%s did not finish:\n%s", p.Name, p.LogTail(4000))
		}
	}
	// The agent is gone, and what it collected reached Prometheus before the launcher returned.
	_, err := harness.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/", health))
	assert.Error(t, err, "the agent still answers after the launcher returned")
	log, err := os.ReadFile(filepath.Join(dir, "run", "agent.log"))
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(log), "Everything is ready"), "one agent on the node:\n%s", log)
	assert.Contains(t, tasks[0].LogTail(1<<16), "nothing lost", "the first task's summary")
	sock := filepath.Join(dir, "run", "live.sock")
	assert.Contains(t, tasks[0].LogTail(1<<16), "ssh -N -L 8890:"+sock+" ", "how to reach the live page")
	assert.Contains(t, string(log), "gymlive: the live page", "the live page was served:\n%s", log)
	assert.NoFileExists(t, sock, "the agent's socket is gone with it")
	got, err := harness.PromQuery(prom, `sum by (instance) (gym_rollout_completed_total{nemo_run_id="e2e-slurm"})`)
	require.NoError(t, err)
	want := map[string]float64{}
	for k, v := range sent {
		want[fmt.Sprintf(`{instance=%q}`, k)] = float64(v)
	}
	assert.Equal(t, want, got, "Prometheus right after the step: the final export flushed")

	headers := map[string]bool{}
	for rank := range 3 {
		var e map[string]*string
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("env.%d", rank)))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &e))
		for _, k := range []string{"OTELCOL_GYM_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
			if assert.NotNil(t, e[k], "task %d: %s", rank, k) {
				assert.True(t, strings.HasPrefix(*e[k], "http://127.0.0.1:"), "task %d: %s=%s", rank, k, *e[k])
			}
		}
		for _, k := range []string{"OTELCOL_GYM_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"} {
			if assert.NotNil(t, e[k], "task %d: %s", rank, k) {
				assert.Regexp(t, `^authorization=Bearer%20[0-9a-f]{64}$`, *e[k], "task %d: %s", rank, k)
				headers[*e[k]] = true
			}
		}
	}
	assert.Len(t, headers, 1, "one token for the step's tasks and both senders")

	// An agent that cannot start does not stop the job: the task runs, with the emitter off.
	bad := exec.Command("bash", launcher, python, script, "1")
	bad.Env = append(append(os.Environ(), replaceEnv(env, "OTELCOL_GYM_BIN=", "OTELCOL_GYM_BIN=/bin/false")...),
		"SLURM_LOCALID=0", "SLURM_STEP_TASKS_PER_NODE=1", "OTELCOL_GYM_START_TIMEOUT=5",
		"OTELCOL_GYM_RUN_DIR="+filepath.Join(dir, "run-bad"))
	out, err := bad.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "running without it")
	data, err := os.ReadFile(filepath.Join(dir, "env.0"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"OTELCOL_GYM_ENABLED": "false"`)

	// Outside a job it refuses to run.
	out, err = exec.Command("env", "-u", "SLURM_JOB_ID", "bash", launcher, "true").CombinedOutput()
	assert.Error(t, err)
	assert.Contains(t, string(out), "not in a Slurm job step")
}

// replaceEnv returns env with the entry starting with prefix replaced by with.
func replaceEnv(env []string, prefix, with string) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		if strings.HasPrefix(e, prefix) {
			e = with
		}
		out = append(out, e)
	}
	return out
}
