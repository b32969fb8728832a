//go:build linux

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The launcher's steps side by side on one node, its end-of-step summary and exit status, its
// direct exports, and Gym's run files: deploy/slurm/otelcol-gym-slurm run as srun would, with
// the SLURM_* variables of fake job steps, the real binary, a real gateway and backends.

// slurmJobTask is a task of a fake job step: it writes down the telemetry environment it was
// given and sends argv[1] rollouts to the agent's endpoint (with the headers of
// OTELCOL_GYM_HEADERS, as Gym's emitter does), under a run and an instance named
// after its job and rank, as Gym's emitter would; it exits with $TASK_EXIT (default 0).
// Arguments after the count are Gym's (the launcher may read --output). The task of rank
// $TASK_NO_TOKEN_RANK sends without the header, three times, each answered 401 (a sender that
// drops what is refused, as Gym's emitter does); the task of rank $TASK_BAD_LINE_RANK adds one
// line that is not JSON, which the receiver rejects.
const slurmJobTask = `import json, os, sys, urllib.error, urllib.parse, urllib.request
job, rank = os.environ["SLURM_JOB_ID"], os.environ["SLURM_LOCALID"]
env = {k: os.environ.get(k) for k in ("OTELCOL_GYM_ENDPOINT", "OTELCOL_GYM_ENABLED")}
with open(os.path.join(os.environ["TASK_OUT"], "env.%s.%s" % (job, rank)), "w") as f:
    json.dump(env, f)
n = int(sys.argv[1])
if n > 0:
    lines = [json.dumps({"event": "resource", "attributes": {"service.name": "nemo-gym/slurm",
             "service.instance.id": "job-%s-task-%s" % (job, rank), "nemo.run.id": "e2e-slurm-" + job}})]
    lines += [json.dumps({"event": "rollout.completed", "outcome": "omitted", "dispatch_name": "math"})] * n
    if rank == os.environ.get("TASK_BAD_LINE_RANK"):
        lines.append("not json")
    headers = {"Content-Type": "application/x-ndjson"}
    headers.update(urllib.parse.unquote(h).split("=", 1) for h in os.environ["OTELCOL_GYM_HEADERS"].split(","))
    posts = 1
    if rank == os.environ.get("TASK_NO_TOKEN_RANK"):
        del headers["authorization"]
        posts = 3
    for _ in range(posts):
        req = urllib.request.Request(env["OTELCOL_GYM_ENDPOINT"] + "/v1/events",
            data=("\n".join(lines) + "\n").encode(), headers=headers)
        try:
            ans = json.load(urllib.request.urlopen(req, timeout=10))
        except urllib.error.HTTPError as e:
            assert e.code == 401 and "authorization" not in headers, e
            continue
        assert "authorization" in headers, ans
        assert ans["accepted"] == n + 1, ans
sys.exit(int(os.environ.get("TASK_EXIT", "0")))
`

// slurmStepEnv is the environment of the tasks of one fake job step on one node, with more
// appended (a later entry wins). The launcher picks the agent's ports, in a range of its own
// so that they never meet harness.Port's.
func slurmStepEnv(job int, dir string, more ...string) []string {
	return append([]string{
		fmt.Sprintf("SLURM_JOB_ID=%d", job), "SLURM_STEP_ID=0", "SLURM_NODEID=0",
		"OTELCOL_GYM_BIN=" + harness.Bin,
		"OTELCOL_GYM_GYMRUN=" + gymrunBin,
		"OTELCOL_GYM_RUN_DIR=" + filepath.Join(dir, "run"),
		"SLURM_SUBMIT_DIR=" + dir,
		"OTELCOL_GYM_PORT_RANGE=32000-32767",
		// Only the final export, at the step's end, can deliver.
		"OTELCOL_GYM_COLLECTION_INTERVAL=4m",
		"OTELCOL_GYM_PROCESS_STATS=false",
		"TASK_OUT=" + dir,
	}, more...)
}

// slurmTaskDir is python3, a directory of the test's and the Slurm task script written in it.
func slurmTaskDir(t *testing.T) (python, dir, script string) {
	t.Helper()
	python = harness.Python(t)
	dir = t.TempDir()
	return python, dir, writeSlurmTask(t, dir)
}

// writeSlurmTask writes slurmJobTask into dir and returns its path.
func writeSlurmTask(t *testing.T, dir string) string {
	t.Helper()
	script := filepath.Join(dir, "task.py")
	require.NoError(t, os.WriteFile(script, []byte(slurmJobTask), 0o600))
	return script
}

// startSlurmTasks starts every task of a step on one node at once through the launcher: task
// i (SLURM_LOCALID=i) sends counts[i] rollouts, followed by args.
func startSlurmTasks(t *testing.T, name string, env []string, python, script string, counts []int, args ...string) []*harness.Process {
	t.Helper()
	harness.UseCollector()
	launcher := filepath.Join(harness.Root, "deploy", "slurm", "otelcol-gym-slurm")
	var tasks []*harness.Process
	for rank, n := range counts {
		taskEnv := append([]string{fmt.Sprintf("SLURM_LOCALID=%d", rank), fmt.Sprintf("SLURM_PROCID=%d", rank),
			fmt.Sprintf("SLURM_STEP_TASKS_PER_NODE=%d", len(counts))}, env...)
		tasks = append(tasks, harness.StartProcessEnv(t, fmt.Sprintf("%s-task-%d", name, rank), taskEnv,
			append([]string{"bash", launcher, python, script, strconv.Itoa(n)}, args...)...))
	}
	return tasks
}

// exitCode waits for a task and returns its exit status.
func exitCode(t *testing.T, p *harness.Process) int {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(120 * time.Second):
		t.Fatalf("%s did not finish:\n%s", p.Name, p.LogTail(8000))
	}
	var exit *exec.ExitError
	if errors.As(p.Err(), &exit) {
		return exit.ExitCode()
	}
	require.NoError(t, p.Err(), p.Name)
	return 0
}

// summaryRe is the launcher's end-of-step summary line.
var summaryRe = regexp.MustCompile(`otelcol-gym-slurm: summary \(([^)]*)\): (\d+) points received, (\d+) sent, (\d+) failed to send, (\d+) not queued, (\d+) requests left in the queue, (\d+) points refused by receivers, (\d+) requests refused by authentication, (\d+) requests or connections refused by the gym receiver, (\d+) event lines rejected, (\d+) run-file rows rejected, (\d+) spans and (\d+) log records received, (\d+) lost: (.*)`)

// stepSummary is what the summary of a task's output says.
type stepSummary struct {
	where                                       string
	received, sent, failed, unqueued, left, ref int
	// Requests refused by the authenticator and by the gym receiver, lines and rows rejected.
	auth, gymRefused, rejected, rowsRejected int
	spans, records, signalsLost              int // Gym's spans and log records
	verdict                                  string
}

func summaryOf(t *testing.T, p *harness.Process) stepSummary {
	t.Helper()
	out := p.LogTail(1 << 16)
	all := summaryRe.FindAllStringSubmatch(out, -1)
	require.Len(t, all, 1, "one summary in the output of %s:\n%s", p.Name, out)
	m := all[0]
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	return stepSummary{where: m[1], received: n(2), sent: n(3), failed: n(4), unqueued: n(5), left: n(6), ref: n(7),
		auth: n(8), gymRefused: n(9), rejected: n(10), rowsRejected: n(11),
		spans: n(12), records: n(13), signalsLost: n(14), verdict: m[15]}
}

// taskEndpoint is the OTELCOL_GYM_ENDPOINT a task was given ("" for none).
func taskEndpoint(t *testing.T, dir string, job, rank int) string {
	t.Helper()
	var e map[string]*string
	data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("env.%d.%d", job, rank)))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &e))
	if e["OTELCOL_GYM_ENDPOINT"] == nil {
		return ""
	}
	return *e["OTELCOL_GYM_ENDPOINT"]
}

// TestSlurmTwoJobsOneNode: two jobs' steps start on one node at the same moment, each with
// two tasks, every port left to the launcher and the gateway's TLS setting left at its
// default. Each step gets an agent of its own (nothing shared: not a port, not the telemetry
// or zpages endpoints), each task the endpoint of its step's agent, and through one gateway
// Prometheus holds every task's total exactly once both launchers have returned.
func TestSlurmTwoJobsOneNode(t *testing.T) {
	t.Parallel()
	python, dir, script := slurmTaskDir(t)
	prom, gwPort := startGatewayToPrometheus(t)
	jobs := []struct {
		id     int
		counts []int
	}{{5101, []int{7, 11}}, {5102, []int{13, 17}}}
	tasks := map[int][]*harness.Process{}
	for _, j := range jobs {
		jobDir := filepath.Join(dir, strconv.Itoa(j.id))
		require.NoError(t, os.Mkdir(jobDir, 0o700))
		tasks[j.id] = startSlurmTasks(t, fmt.Sprintf("job-%d", j.id), slurmStepEnv(j.id, jobDir,
			fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", gwPort),
			"OTELCOL_GYM_KEEP_RUN_DIR=1"), python, script, j.counts)
	}
	endpoints := map[string]int{}
	for _, j := range jobs {
		jobDir := filepath.Join(dir, strconv.Itoa(j.id))
		for _, p := range tasks[j.id] {
			require.Equal(t, 0, exitCode(t, p), "%s:\n%s", p.Name, p.LogTail(8000))
			assert.NotContains(t, p.LogTail(1<<16), "running without it", p.Name)
		}
		s := summaryOf(t, tasks[j.id][0])
		assert.Equal(t, "nothing lost", s.verdict, "job %d", j.id)
		assert.Equal(t, s.received, s.sent, "job %d: every point received was sent", j.id)
		assert.Positive(t, s.sent, "job %d", j.id)

		got, err := harness.PromQuery(prom, fmt.Sprintf(`sum by (instance) (gym_rollout_completed_total{nemo_run_id="e2e-slurm-%d"})`, j.id))
		require.NoError(t, err)
		want := map[string]float64{}
		for rank, n := range j.counts {
			want[fmt.Sprintf(`{instance="job-%d-task-%d"}`, j.id, rank)] = float64(n)
		}
		assert.Equal(t, want, got, "job %d in Prometheus right after its step", j.id)

		// Both tasks of a step were given its agent; no other step's.
		e0, e1 := taskEndpoint(t, jobDir, j.id, 0), taskEndpoint(t, jobDir, j.id, 1)
		assert.True(t, strings.HasPrefix(e0, "http://127.0.0.1:"), "job %d: %q", j.id, e0)
		assert.Equal(t, e0, e1, "job %d: one agent per step and node", j.id)
		endpoints[e0]++

		log, err := os.ReadFile(filepath.Join(jobDir, "run", "agent.log"))
		require.NoError(t, err, "OTELCOL_GYM_KEEP_RUN_DIR=1 keeps the step's directory")
		assert.Equal(t, 1, strings.Count(string(log), "Everything is ready"), "job %d: one agent:\n%s", j.id, log)
		assert.NotContains(t, string(log), "address already in use", "job %d", j.id)
	}
	assert.Len(t, endpoints, 2, "each step its own agent: %v", endpoints)
}

// TestSlurmLossIsLoud: an agent that cannot deliver says so at the end of the step, with the
// counts, and the step exits 75 unless OTELCOL_GYM_FAIL_ON_LOSS=false; the job's own failure
// wins. Loss comes from TLS toward a plaintext gateway, and from a gateway that is down.
func TestSlurmLossIsLoud(t *testing.T) {
	t.Parallel()
	python := harness.Python(t)
	gwPort := harness.Port(t)
	startDeployed(t, "gateway", "gateway.yaml", []string{
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", gwPort),
		fmt.Sprintf("OTELCOL_GYM_REMOTE_WRITE_URL=http://127.0.0.1:%d/api/v1/write", harness.Port(t)),
	})
	down := harness.Port(t) // nothing listens there
	dir := t.TempDir()
	script := writeSlurmTask(t, dir)
	cases := []struct {
		name     string
		env      []string
		wantExit int
	}{
		{"TLS toward the plaintext gateway", []string{fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", gwPort),
			"OTELCOL_GYM_GATEWAY_INSECURE=false"}, 75},
		{"the same, OTELCOL_GYM_FAIL_ON_LOSS=false", []string{fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", gwPort),
			"OTELCOL_GYM_GATEWAY_INSECURE=false", "OTELCOL_GYM_FAIL_ON_LOSS=false"}, 0},
		{"the gateway down", []string{fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", down)}, 75},
		{"the gateway down and the job failing", []string{fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", down),
			"TASK_EXIT=3"}, 3},
	}
	tasks := make([]*harness.Process, len(cases))
	for i, c := range cases {
		caseDir := filepath.Join(dir, strconv.Itoa(i))
		require.NoError(t, os.Mkdir(caseDir, 0o700))
		tasks[i] = startSlurmTasks(t, fmt.Sprintf("case-%d", i), slurmStepEnv(5200+i, caseDir, c.env...),
			python, script, []int{5})[0]
	}
	for i, c := range cases {
		p := tasks[i]
		assert.Equal(t, c.wantExit, exitCode(t, p), "%s:\n%s", c.name, p.LogTail(8000))
		s := summaryOf(t, p)
		assert.True(t, strings.HasPrefix(s.verdict, "LOST"), "%s: %q", c.name, s.verdict)
		assert.Positive(t, s.received, c.name)
		assert.Equal(t, 0, s.sent, c.name)
		assert.Equal(t, s.received, s.failed, "%s: every point received failed to send", c.name)
		if c.wantExit == 75 {
			assert.Contains(t, p.LogTail(1<<16), "exiting 75", c.name)
		}
		assert.NoDirExists(t, filepath.Join(dir, strconv.Itoa(i), "run"), "%s: the step's directory is removed", c.name)
	}

	// A setting it cannot read stops the launcher before the job, with a clear error.
	for _, bad := range []string{"OTELCOL_GYM_FAIL_ON_LOSS=maybe", "OTELCOL_GYM_EXPORT_TO=kafka", "OTELCOL_GYM_KEEP_RUN_DIR=2"} {
		cmd := exec.Command("bash", filepath.Join(harness.Root, "deploy", "slurm", "otelcol-gym-slurm"), python, script, "0")
		cmd.Env = append(append(os.Environ(), slurmStepEnv(5299, dir)...), "SLURM_LOCALID=0", bad)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s: %s", bad, out)
		assert.Equal(t, 2, exit.ExitCode(), bad)
		assert.Contains(t, string(out), strings.SplitN(bad, "=", 2)[0]+"=", bad)
		assert.NoFileExists(t, filepath.Join(dir, "env.5299.0"), "%s: the job did not run", bad)
	}
}

// TestSlurmRefusalsAreLoud: data that the step's agent refused is lost as surely as data it
// failed to send. A task that posts without the step's bearer token (each request answered
// 401) and a task with a line the receiver rejects make the step's summary count them and end
// in LOST, and the step exit 75, although every point the agent took was delivered; a task
// with the token and nothing rejected, beside them, is delivered whole.
func TestSlurmRefusalsAreLoud(t *testing.T) {
	t.Parallel()
	python, dir, script := slurmTaskDir(t)
	sink := harness.NewOTLPSink(t)
	const job = 5801
	tasks := startSlurmTasks(t, "refused", slurmStepEnv(job, dir,
		"OTELCOL_GYM_EXPORT_TO=otlp", "OTELCOL_GYM_EXPORT_OTLP_ENDPOINT="+sink.URL(),
		"TASK_NO_TOKEN_RANK=1", "TASK_BAD_LINE_RANK=2"), python, script, []int{5, 4, 6})
	// The other tasks' own work succeeded: their exit status is their command's.
	for _, p := range tasks[1:] {
		require.Equal(t, 0, exitCode(t, p), "%s:\n%s", p.Name, p.LogTail(8000))
	}
	first := tasks[0]
	require.Equal(t, 75, exitCode(t, first), first.LogTail(8000))
	out := first.LogTail(1 << 16)
	assert.Contains(t, out, "exiting 75")
	s := summaryOf(t, first)
	assert.Equal(t, 3, s.auth, "the three requests without the token: %+v", s)
	assert.Equal(t, 1, s.rejected, "the line that is not JSON: %+v", s)
	assert.Zero(t, s.gymRefused, "%+v", s)
	assert.Zero(t, s.rowsRejected, "%+v", s)
	assert.Zero(t, s.ref+s.failed+s.unqueued+s.left, "what the agent took, it delivered: %+v", s)
	assert.Positive(t, s.sent)
	assert.Equal(t, "LOST: 3 requests refused by authentication (sent without the step's token),1 event lines rejected", s.verdict)
	// The end of the agent's log follows, with the refusals' peer.
	assert.Contains(t, out, "bearertokenauth: a request was refused")
	assert.Equal(t, 5.0, latestCompleted(sink.Exports(), attrIs("service.instance.id", fmt.Sprintf("job-%d-task-0", job))))
	assert.Equal(t, 6.0, latestCompleted(sink.Exports(), attrIs("service.instance.id", fmt.Sprintf("job-%d-task-2", job))))
	assert.Equal(t, -1.0, latestCompleted(sink.Exports(), attrIs("service.instance.id", fmt.Sprintf("job-%d-task-1", job))),
		"nothing of the task without the token")
	assert.Empty(t, sink.Errors())
}

// TestSlurmDirectRemoteWrite: OTELCOL_GYM_EXPORT_TO=remote_write, no gateway: each step's
// agent writes to Prometheus' remote-write receiver itself, and Prometheus holds every task's
// total right after the step, with the gateway's labels.
func TestSlurmDirectRemoteWrite(t *testing.T) {
	t.Parallel()
	python, dir, script := slurmTaskDir(t)
	prom := harness.StartRemoteWritePrometheus(t)
	const job = 5301
	tasks := startSlurmTasks(t, "direct-rw", slurmStepEnv(job, dir,
		"OTELCOL_GYM_EXPORT_TO=remote_write", "OTELCOL_GYM_REMOTE_WRITE_URL="+prom+"/api/v1/write",
		"OTELCOL_GYM_NODE_NAME=direct-node"), python, script, []int{9, 4})
	for _, p := range tasks {
		require.Equal(t, 0, exitCode(t, p), "%s:\n%s", p.Name, p.LogTail(8000))
	}
	s := summaryOf(t, tasks[0])
	assert.Equal(t, "nothing lost", s.verdict)
	assert.Contains(t, s.where, "export to remote_write")
	got, err := harness.PromQuery(prom, fmt.Sprintf(`sum by (instance, host_name) (gym_rollout_completed_total{nemo_run_id="e2e-slurm-%d"})`, job))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{
		fmt.Sprintf(`{host_name="direct-node",instance="job-%d-task-0"}`, job): 9,
		fmt.Sprintf(`{host_name="direct-node",instance="job-%d-task-1"}`, job): 4,
	}, got)
}

// TestSlurmDirectOTLP: OTELCOL_GYM_EXPORT_TO=otlp, no gateway: the agent sends OTLP/HTTP to
// the test's sink, which has every task's total when the step ends; the step's directory is
// gone then.
func TestSlurmDirectOTLP(t *testing.T) {
	t.Parallel()
	python, dir, script := slurmTaskDir(t)
	sink := harness.NewOTLPSink(t)
	const job = 5401
	counts := []int{6, 15, 2}
	tasks := startSlurmTasks(t, "direct-otlp", slurmStepEnv(job, dir,
		"OTELCOL_GYM_EXPORT_TO=otlp", "OTELCOL_GYM_EXPORT_OTLP_ENDPOINT="+sink.URL()), python, script, counts)
	for _, p := range tasks {
		require.Equal(t, 0, exitCode(t, p), "%s:\n%s", p.Name, p.LogTail(8000))
	}
	s := summaryOf(t, tasks[0])
	assert.Equal(t, "nothing lost", s.verdict)
	assert.Contains(t, s.where, "export to otlp")
	for rank, n := range counts {
		instance := fmt.Sprintf("job-%d-task-%d", job, rank)
		assert.Equal(t, float64(n), latestCompleted(sink.Exports(), attrIs("service.instance.id", instance)), instance)
	}
	assert.Empty(t, sink.Errors())
	assert.NoDirExists(t, filepath.Join(dir, "run"), "the step's directory is removed at its end")
}

// startGatewayToSink starts deploy/gateway.yaml, with more --config flags, exporting to the
// test's sink instead of a remote-write backend, and returns its OTLP gRPC port.
func startGatewayToSink(t *testing.T, sink *harness.OTLPSink, configs ...string) int {
	t.Helper()
	harness.UseCollector()
	gwPort, health := harness.Port(t), harness.Port(t)
	args := append([]string{harness.Bin, "--config", filepath.Join(harness.Root, "deploy", "gateway.yaml")}, configs...)
	gw := harness.StartProcessEnv(t, "gateway", []string{
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", gwPort),
		fmt.Sprintf("OTELCOL_GYM_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_HEALTH_ENDPOINT=127.0.0.1:%d", health),
		fmt.Sprintf("OTELCOL_GYM_ZPAGES_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_TELEMETRY_PORT=%d", harness.Port(t)),
	}, append(args,
		"--config", "yaml:exporters::otlp_http::endpoint: "+sink.URL(),
		"--config", "yaml:service::pipelines::metrics::exporters: [otlp_http]")...)
	require.NoError(t, gw.WaitReady(fmt.Sprintf("http://127.0.0.1:%d/", health), 60*time.Second))
	return gwPort
}

// slurmFixedPorts fixes every endpoint of an agent to a port of harness.Port's, as a site that
// needs known ports would.
func slurmFixedPorts(t *testing.T) []string {
	return []string{
		fmt.Sprintf("OTELCOL_GYM_EVENTS_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_HEALTH_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_ZPAGES_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_TELEMETRY_PORT=%d", harness.Port(t)),
	}
}

// writeRunFiles writes a Gym results directory: STEM.jsonl with rows scored rows and its
// manifest naming the run.
func writeRunFiles(t *testing.T, dir, stem, runID string, rows int) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, stem+"_manifest.json"), []byte(fmt.Sprintf(`{"run_id":%q}`, runID)), 0o600))
	var b strings.Builder
	for i := range rows {
		b.WriteString(gymRow(i, "1.0"))
	}
	out := filepath.Join(dir, stem+".jsonl")
	require.NoError(t, os.WriteFile(out, []byte(b.String()), 0o600))
	return out
}

// TestSlurmRunFiles: Gym's run files, on a shared file system that every node of a step sees,
// are counted once: by the agent of the step's first node (SLURM_NODEID=0), from
// OTELCOL_GYM_RESULTS_DIR; a step without it reads the file its command names with --output.
// The endpoints are fixed here (OTELCOL_GYM_*_ENDPOINT), which the launcher honours.
func TestSlurmRunFiles(t *testing.T) {
	t.Parallel()
	python, dir, script := slurmTaskDir(t)
	prom, gwPort := startGatewayToPrometheus(t)
	results := filepath.Join(dir, "shared", "results")
	writeRunFiles(t, results, "eval", "slurm-results-dir", 5)
	output := writeRunFiles(t, filepath.Join(dir, "shared", "other"), "math", "slurm-output", 3)
	gateway := []string{fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", gwPort), "OTELCOL_GYM_GATEWAY_INSECURE=true"}

	// One step on two nodes, both told where the results are.
	var tasks []*harness.Process
	for node := range 2 {
		nodeDir := filepath.Join(dir, fmt.Sprintf("node-%d", node))
		require.NoError(t, os.Mkdir(nodeDir, 0o700))
		env := slurmStepEnv(5501, nodeDir, append(append(gateway, slurmFixedPorts(t)...),
			fmt.Sprintf("SLURM_NODEID=%d", node), fmt.Sprintf("OTELCOL_GYM_NODE_NAME=node-%d", node),
			"OTELCOL_GYM_RESULTS_DIR="+results)...)
		tasks = append(tasks, startSlurmTasks(t, fmt.Sprintf("node-%d", node), env, python, script, []int{1})...)
	}
	// Another step, whose command names its output file.
	otherDir := filepath.Join(dir, "other")
	require.NoError(t, os.Mkdir(otherDir, 0o700))
	tasks = append(tasks, startSlurmTasks(t, "output", slurmStepEnv(5502, otherDir, append(append(gateway, slurmFixedPorts(t)...),
		"OTELCOL_GYM_NODE_NAME=output-node")...), python, script, []int{1}, "--output", output)...)
	for _, p := range tasks {
		require.Equal(t, 0, exitCode(t, p), "%s:\n%s", p.Name, p.LogTail(8000))
		assert.Equal(t, "nothing lost", summaryOf(t, p).verdict, p.Name)
	}
	got, err := harness.PromQuery(prom, `sum by (host_name, nemo_run_id) (gym_rollout_completed_total{job="nemo-gym/rollout_collection"})`)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{
		`{host_name="node-0",nemo_run_id="slurm-results-dir"}`: 5,
		`{host_name="output-node",nemo_run_id="slurm-output"}`: 3,
	}, got, "each run file counted once, by its step's first node")
	// The step's first node writes the run's summary beside its files: the results directory's,
	// or the --output file's; the same counts.
	assert.Equal(t, 5.0, summaryAttempts(t, filepath.Join(results, "otel", "summary.json"), tasks[0]))
	assert.Equal(t, 3.0, summaryAttempts(t, filepath.Join(filepath.Dir(output), "otel", "summary.json"), tasks[2]))
	assert.NotContains(t, tasks[1].LogTail(8000), "summary.json", "only the first node writes it")
}

// TestSlurmGatewayTLS: TLS between the agents and the gateway, turned on as docs/deployment.md
// says: the gateway's certificate and key with two --config flags, the agents' CA with
// OTELCOL_GYM_GATEWAY_CA_FILE. The certificate is the test's own. An agent left in plaintext
// toward that gateway loses its data, loudly.
func TestSlurmGatewayTLS(t *testing.T) {
	t.Parallel()
	python := harness.Python(t)
	harness.UseCollector()
	dir := t.TempDir()
	cert, key, _ := selfSignedCert(t, dir)
	sink := harness.NewOTLPSink(t)
	gwPort := startGatewayToSink(t, sink,
		"--config", "yaml:receivers::otlp::protocols::grpc::tls::cert_file: "+cert,
		"--config", "yaml:receivers::otlp::protocols::grpc::tls::key_file: "+key)
	script := writeSlurmTask(t, dir)
	endpoint := fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", gwPort)

	tlsDir, plainDir := filepath.Join(dir, "tls"), filepath.Join(dir, "plain")
	require.NoError(t, os.Mkdir(tlsDir, 0o700))
	require.NoError(t, os.Mkdir(plainDir, 0o700))
	withCA := startSlurmTasks(t, "tls", slurmStepEnv(5601, tlsDir, endpoint, "OTELCOL_GYM_GATEWAY_CA_FILE="+cert),
		python, script, []int{8})[0]
	plain := startSlurmTasks(t, "plain", slurmStepEnv(5602, plainDir, endpoint), python, script, []int{4})[0]

	require.Equal(t, 0, exitCode(t, withCA), withCA.LogTail(8000))
	assert.Equal(t, "nothing lost", summaryOf(t, withCA).verdict)
	assert.Equal(t, 8.0, latestCompleted(sink.Exports(), attrIs("service.instance.id", "job-5601-task-0")))

	assert.Equal(t, 75, exitCode(t, plain), plain.LogTail(8000))
	s := summaryOf(t, plain)
	assert.True(t, strings.HasPrefix(s.verdict, "LOST"), s.verdict)
	assert.Equal(t, s.received, s.failed)
	assert.Equal(t, -1.0, latestCompleted(sink.Exports(), attrIs("service.instance.id", "job-5602-task-0")))
	assert.Empty(t, sink.Errors())
}
