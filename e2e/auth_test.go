//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The bearer token of the shipped agent recipes: the Kubernetes overlay and the Slurm launcher
// make the agent's gym HTTP and OTLP receivers require it.

// emitterTask is a Gym process on Gym's emitter (python/otelcol_gym), with the environment it
// was given: it records argv[1] rollouts, flushes and prints its emitter's stats as JSON.
// Under the Slurm launcher (TASK_OUT set) it also sends, as Gym's SDK would, the OTLP request of
// $OTLP_BODY with the headers of OTEL_EXPORTER_OTLP_HEADERS, and requests without them, writes
// down the answers, and waits for $TASK_OUT/go-on (the test probes the agent meanwhile).
const emitterTask = `import json, os, sys, time, urllib.error, urllib.parse, urllib.request
import otelcol_gym
from otelcol_gym import gym_metrics

def status(url, body, headers):
    try:
        return urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=10).status
    except urllib.error.HTTPError as e:
        return e.code

n = int(sys.argv[1])
for _ in range(n):
    gym_metrics.record_rollout_completed("omitted", "math")
flushed = otelcol_gym.flush(10)
st = dict(otelcol_gym.stats(), flushed=int(flushed))
out = os.environ.get("TASK_OUT")
if out:
    # OTEL_EXPORTER_OTLP_HEADERS as the OpenTelemetry SDK reads it: k=v,..., percent-encoded.
    sdk = {}
    for part in os.environ["OTEL_EXPORTER_OTLP_HEADERS"].split(","):
        k, v = part.split("=", 1)
        sdk[urllib.parse.unquote(k.strip())] = urllib.parse.unquote(v.strip())
    otlp = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] + "/v1/metrics"
    events = os.environ["OTELCOL_GYM_ENDPOINT"] + "/v1/events"
    proto, ndjson = {"Content-Type": "application/x-protobuf"}, {"Content-Type": "application/x-ndjson"}
    body = open(os.environ["OTLP_BODY"], "rb").read()
    line = json.dumps({"event": "rollout.completed", "outcome": "omitted", "dispatch_name": "math"}).encode() + b"\n"
    # The step token is no secret: the health check answers it to anyone.
    step = urllib.request.urlopen("http://" + os.environ["OTELCOL_GYM_HEALTH_ENDPOINT"] + "/", timeout=10).read().decode()
    st["answers"] = {
        "otlp with the headers": status(otlp, body, dict(proto, **sdk)),
        "otlp without": status(otlp, body, proto),
        "events without": status(events, line, ndjson),
        "events with the step token": status(events, line, dict(ndjson, Authorization="Bearer " + step)),
    }
    st["env"] = {k: os.environ.get(k) for k in ("OTELCOL_GYM_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS", "OTELCOL_GYM_ENABLED")}
    with open(os.path.join(out, "task.json"), "w") as f:
        json.dump(st, f)
    for _ in range(600):
        if os.path.exists(os.path.join(out, "go-on")):
            break
        time.sleep(0.1)
print(json.dumps(st))
`

// runEmitter runs emitterTask with env and returns its stats.
func runEmitter(t *testing.T, python string, env []string, n int) map[string]float64 {
	t.Helper()
	script := filepath.Join(t.TempDir(), "emitter.py")
	require.NoError(t, os.WriteFile(script, []byte(emitterTask), 0o600))
	cmd := exec.Command(python, script, fmt.Sprint(n))
	cmd.Env = append(append(os.Environ(), "PYTHONPATH="+filepath.Join(harness.Root, "python")), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s\n%s", out, stderr.String())
	var st map[string]any
	require.NoError(t, json.Unmarshal(out, &st), "%s", out)
	nums := map[string]float64{}
	for k, v := range st {
		if f, ok := v.(float64); ok {
			nums[k] = f
		}
	}
	return nums
}

// kubeletSecret writes a Secret volume as the kubelet does: DIR/KEY is a link to ..data/KEY,
// ..data a link to a timestamped directory that an update replaces whole (a new directory, the
// ..data link renamed over, the old directory removed). It returns the update.
func kubeletSecret(t *testing.T, dir, key, value string) func(value string) {
	t.Helper()
	version := 0
	update := func(value string) {
		version++
		ts := fmt.Sprintf("..v%d", version)
		require.NoError(t, os.Mkdir(filepath.Join(dir, ts), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ts, key), []byte(value), 0o400))
		old, _ := os.Readlink(filepath.Join(dir, "..data"))
		require.NoError(t, os.Symlink(ts, filepath.Join(dir, "..data_tmp")))
		require.NoError(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
		if old != "" {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, old)))
		}
	}
	require.NoError(t, os.MkdirAll(dir, 0o700))
	update(value)
	require.NoError(t, os.Symlink(filepath.Join("..data", key), filepath.Join(dir, key)))
	return update
}

// exportGRPC sends md to an OTLP gRPC receiver, with the bearer token unless it is "".
func exportGRPC(addr string, md pmetric.Metrics, token string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	_, err = pmetricotlp.NewGRPCClient(conn).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md))
	return err
}

// postOTLPStatus posts md to an OTLP/HTTP receiver with the bearer token unless it is "", and
// returns the status.
func postOTLPStatus(t *testing.T, url string, md pmetric.Metrics, token string) int {
	t.Helper()
	code, _ := postMetrics(t, url, md, token)
	return code
}

// bearer is the Authorization header of a token.
func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// gymPodEnv is the environment that the example Gym pod (deploy/kubernetes/examples/gym-job.yaml)
// gets from the kubelet, with the Secret's token, the node's IP as 127.0.0.1 and the agent's
// hostPorts mapped to the test's ports.
func gymPodEnv(t *testing.T, token string, ports map[string]int) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(harness.Root, "deploy", "kubernetes", "examples", "gym-job.yaml"))
	require.NoError(t, err)
	var job struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Env []struct {
							Name      string `yaml:"name"`
							Value     string `yaml:"value"`
							ValueFrom *struct {
								FieldRef *struct {
									FieldPath string `yaml:"fieldPath"`
								} `yaml:"fieldRef"`
								SecretKeyRef *struct {
									Name string `yaml:"name"`
								} `yaml:"secretKeyRef"`
							} `yaml:"valueFrom"`
						} `yaml:"env"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &job))
	vals := map[string]string{}
	var env []string
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		v := e.Value
		if f := e.ValueFrom; f != nil {
			switch {
			case f.SecretKeyRef != nil && f.SecretKeyRef.Name == "otelcol-gym-agent-token":
				v = token
			case f.FieldRef != nil && f.FieldRef.FieldPath == "status.hostIP":
				v = "127.0.0.1"
			case f.FieldRef != nil:
				v = "e2e-" + f.FieldRef.FieldPath
			default:
				t.Fatalf("gym-job.yaml: %s: a source this test does not know", e.Name)
			}
		}
		v = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(v, func(ref string) string { return vals[ref[2:len(ref)-1]] })
		for hostPort, port := range ports {
			v = strings.Replace(v, "127.0.0.1:"+hostPort, fmt.Sprintf("127.0.0.1:%d", port), 1)
		}
		vals[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	return env
}

// TestKubernetesAgentToken: the agent on deploy/agent.yaml with the Kubernetes overlay
// (kubernetes/config/agent-kubernetes.yaml) and a token file laid out as the kubelet mounts a
// Secret. Without the token (or with another) the gym HTTP and OTLP/HTTP receivers answer 401
// and the OTLP gRPC receiver Unauthenticated, nothing of it is accepted, and at the detailed
// telemetry level the collector counts them by status; with the token a request is accepted and
// reaches the sink (through a gateway), and so does a real Python emitter with the example Gym
// pod's environment. The Unix socket and the health check need no token. A rotated Secret is
// picked up without a restart; a missing or empty token file stops the start.
func TestKubernetesAgentToken(t *testing.T) {
	t.Parallel()
	python := harness.Python(t)
	sink := harness.NewOTLPSink(t)
	gwPort := startGatewayToSink(t, sink)
	dir := t.TempDir()
	const token, rotated = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	rotate := kubeletSecret(t, filepath.Join(dir, "secret"), "token", token+"\n")
	// The collector counts refused requests only at the detailed level (its HTTP and gRPC
	// server metrics); the shipped overlay keeps the default.
	detailed := filepath.Join(dir, "detailed.yaml")
	require.NoError(t, os.WriteFile(detailed, []byte("service:\n  telemetry:\n    metrics:\n      level: detailed\n"), 0o600))
	gymPort, grpcPort, httpPort := harness.Port(t), harness.Port(t), harness.Port(t)
	sock := filepath.Join(dir, "gym.sock")
	env := []string{
		fmt.Sprintf("OTELCOL_GYM_EVENTS_ENDPOINT=127.0.0.1:%d", gymPort),
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", grpcPort),
		fmt.Sprintf("OTELCOL_GYM_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", httpPort),
		"OTELCOL_GYM_EVENTS_SOCKET=" + sock,
		"OTELCOL_GYM_EVENT_FILES=" + filepath.Join(dir, "events", "*.events.jsonl"),
		"OTELCOL_GYM_RUN_FILES=" + filepath.Join(dir, "results", "*", "*.jsonl"),
		"OTELCOL_GYM_STORAGE_DIR=" + filepath.Join(dir, "state"),
		fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", gwPort),
		"OTELCOL_GYM_COLLECTION_INTERVAL=1s",
		"OTELCOL_GYM_PROCESS_STATS=false",
		"OTELCOL_GYM_NODE_NAME=node-e2e",
		"OTELCOL_GYM_TOKEN_FILE=" + filepath.Join(dir, "secret", "token"),
	}
	configs := []string{"agent.yaml", "kubernetes/config/agent-kubernetes.yaml", detailed}
	agent := startDeployedConfigs(t, "agent", configs, env)
	events := fmt.Sprintf("http://127.0.0.1:%d/v1/events", gymPort)
	otlpURL := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	grpcAddr := fmt.Sprintf("127.0.0.1:%d", grpcPort)

	// Refused: nothing of these may reach the sink.
	refusedHTTP := 0
	for name, header := range map[string]map[string]string{"no token": nil, "another token": bearer(rotated),
		"no scheme": {"Authorization": token}} {
		code, answer := harness.Post(t, http.DefaultClient, events, lines("k8s-refused", 0, 5, true), header)
		assert.Equal(t, http.StatusUnauthorized, code, "gym http, %s: %s", name, answer)
		refusedHTTP++
	}
	refused := &gymProcess{instance: "k8s-refused-otlp", start: pcommon.NewTimestampFromTime(time.Now())}
	assert.Equal(t, http.StatusUnauthorized, postOTLPStatus(t, otlpURL, refused.otlpMetrics(3), ""), "otlp http without the token")
	assert.Equal(t, http.StatusUnauthorized, postOTLPStatus(t, otlpURL, refused.otlpMetrics(3), rotated), "otlp http, another token")
	for _, tok := range []string{"", rotated} {
		err := exportGRPC(grpcAddr, refused.otlpMetrics(3), tok)
		assert.Equal(t, codes.Unauthenticated, status.Code(err), "otlp grpc with %q: %v", tok, err)
	}
	// The example Gym pod's emitter without its header: the sender sees the refusal.
	podEnv := gymPodEnv(t, token, map[string]int{"4390": gymPort, "4318": httpPort})
	st := runEmitter(t, python, append(replaceEnv(podEnv, "OTELCOL_GYM_HEADERS=", "OTELCOL_GYM_HEADERS="), "OTEL_SERVICE_NAME=nemo-gym/k8s-no-header"), 4)
	assert.Zero(t, st["sent"], "the emitter without the header: %v", st)
	assert.Equal(t, 4.0, st["lost"], "the emitter counts the refused batch as lost: %v", st)
	refusedHTTP++

	// Accepted.
	code, answer := harness.Post(t, http.DefaultClient, events, lines("k8s-http", 0, 7, true), bearer(token))
	require.Equal(t, http.StatusOK, code, answer)
	harness.SendStream(t, "unix", sock, lines("k8s-socket", 0, 6, true)) // no token: filesystem permissions
	viaHTTP := &gymProcess{instance: "k8s-otlp-http", start: pcommon.NewTimestampFromTime(time.Now())}
	assert.Equal(t, http.StatusOK, postOTLPStatus(t, otlpURL, viaHTTP.otlpMetrics(9), token))
	viaGRPC := &gymProcess{instance: "k8s-otlp-grpc", start: pcommon.NewTimestampFromTime(time.Now())}
	require.NoError(t, exportGRPC(grpcAddr, viaGRPC.otlpMetrics(11), token))
	st = runEmitter(t, python, append(podEnv, "OTEL_SERVICE_NAME=nemo-gym/k8s-pod"), 8)
	assert.Equal(t, 1.0, st["flushed"], "%v", st)
	assert.Positive(t, st["sent"], "%v", st)
	assert.Zero(t, st["lost"]+st["dropped"], "%v", st)
	_, err := harness.HTTPGet(agent.healthURL) // the kubelet's probes carry no token
	assert.NoError(t, err, "the health check")

	waitCompleted(t, sink, "the gym HTTP body with the token", service("k8s-http"), 7)
	waitCompleted(t, sink, "the socket's events", service("k8s-socket"), 6)
	waitCompleted(t, sink, "OTLP/HTTP with the token", attrIs("service.instance.id", "k8s-otlp-http"), 9)
	waitCompleted(t, sink, "OTLP gRPC with the token", attrIs("service.instance.id", "k8s-otlp-grpc"), 11)
	waitCompleted(t, sink, "the example Gym pod's emitter", service("nemo-gym/k8s-pod"), 8)
	for _, match := range []func(pcommon.Map) bool{service("k8s-refused"), attrIs("service.instance.id", "k8s-refused-otlp"), service("nemo-gym/k8s-no-header")} {
		assert.Equal(t, -1.0, latestCompleted(sink.Exports(), match), "a refused request reached the sink")
	}
	assert.Empty(t, sink.Errors())
	assert.Zero(t, harness.TelemetryValue(t, agent.ports, "otelcol_receiver_refused_metric_points_total"), "auth refusals are not receiver refusals")

	// Counted where the collector counts them: its HTTP and gRPC servers' own metrics.
	http401 := harness.TelemetryValue(t, agent.ports, "http_server_request_duration_count", "http_response_status_code", "401")
	grpc16 := harness.TelemetryValue(t, agent.ports, "rpc_server_call_duration_count", "rpc_response_status_code", "UNAUTHENTICATED")
	t.Logf("counted: %g HTTP 401 answers, %g gRPC Unauthenticated", http401, grpc16)
	assert.Equal(t, float64(refusedHTTP+2), http401, "401 answers: %d gym http and 2 otlp http", refusedHTTP)
	assert.Equal(t, 2.0, grpc16, "gRPC Unauthenticated answers")
	// The authenticator counts every refusal at every level, whichever receiver it was for,
	// and logs it with its peer (5 lines a minute at most).
	assert.Equal(t, float64(refusedHTTP+2+2), harness.TelemetryValue(t, agent.ports, "otelcol_bearertokenauth_refused"),
		"%d gym http, 2 otlp http, 2 otlp grpc", refusedHTTP)
	out := agent.LogTail(1 << 20)
	assert.Equal(t, 5, strings.Count(out, "bearertokenauth: a request was refused"), "logged, 5 a minute")
	assert.Contains(t, out, `"peer": "127.0.0.1"`, "the peer: its address, as the server gives it")

	// Rotation: the kubelet replaces the Secret's files; the agent reads the new token.
	rotate(rotated + "\n")
	require.NoError(t, harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		if code, answer := harness.Post(t, http.DefaultClient, events, lines("k8s-rotated", 0, 2, true), bearer(rotated)); code != http.StatusOK {
			return fmt.Errorf("the rotated token: %d %s", code, answer)
		}
		return nil
	}))
	code, _ = harness.Post(t, http.DefaultClient, events, lines("k8s-refused", 0, 1, true), bearer(token))
	assert.Equal(t, http.StatusUnauthorized, code, "the old token after the rotation")
	assert.NoError(t, exportGRPC(grpcAddr, viaGRPC.otlpMetrics(1), rotated), "gRPC with the rotated token")
	// Several accepted tokens, one per line: the overlap of a rotation without refusals.
	rotate(token + "\n" + rotated + "\n")
	require.NoError(t, harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		if code, _ := harness.Post(t, http.DefaultClient, events, lines("k8s-rotated", 0, 1, true), bearer(token)); code != http.StatusOK {
			return fmt.Errorf("the first of two tokens: %d", code)
		}
		return nil
	}))
	code, _ = harness.Post(t, http.DefaultClient, events, lines("k8s-rotated", 0, 1, true), bearer(rotated))
	assert.Equal(t, http.StatusOK, code, "the second of two tokens")
	assert.Contains(t, agent.LogTail(1<<20), "refresh token", "the agent logs the reload")
	require.NoError(t, agent.Stop(30*time.Second))

	// Without its token file, or with an empty one, the agent does not start, and says why.
	for name, file := range map[string]string{"missing": filepath.Join(dir, "none", "token"), "empty": filepath.Join(dir, "empty")} {
		if name == "empty" {
			require.NoError(t, os.WriteFile(file, []byte(" \n"), 0o600))
		}
		health := harness.Port(t)
		d := &deployed{name: "agent-" + name, configs: configs[:2], healthURL: fmt.Sprintf("http://127.0.0.1:%d/", health),
			env: append(replaceEnv(env, "OTELCOL_GYM_TOKEN_FILE=", "OTELCOL_GYM_TOKEN_FILE="+file),
				fmt.Sprintf("OTELCOL_GYM_HEALTH_ENDPOINT=127.0.0.1:%d", health), fmt.Sprintf("OTELCOL_GYM_TELEMETRY_PORT=%d", harness.Port(t)),
				fmt.Sprintf("OTELCOL_GYM_ZPAGES_ENDPOINT=127.0.0.1:%d", harness.Port(t)), "OTELCOL_GYM_STORAGE_DIR="+filepath.Join(dir, "state-"+name))}
		began := time.Now()
		require.Error(t, d.start(t), "a token file %s: the agent started", name)
		t.Logf("a token file %s: the agent exited after %v", name, time.Since(began).Round(time.Millisecond))
		require.True(t, d.Exited(), "a token file %s: the agent is still running", name)
		assert.Error(t, d.Err(), "a token file %s: exit status", name)
		assert.Contains(t, d.LogTail(1<<16), file, "a token file %s: the error names the file", name)
	}
}

// TestSlurmBearerToken: the launcher gives its step's agent a bearer token of its own (not the
// step token, which the health check answers to anyone), in a file only the job's user can read,
// and every task the headers that carry it. A real Python emitter with the task's environment
// delivers; so does an OTLP request with OTEL_EXPORTER_OTLP_HEADERS as Gym's SDK reads them, and
// gRPC with the token; without it (or with the step token) the gym HTTP and OTLP/HTTP receivers
// answer 401 and the gRPC one Unauthenticated. The step's summary counts those four refusals,
// and the step exits 75 for them, although everything the agent took was delivered.
func TestSlurmBearerToken(t *testing.T) {
	t.Parallel()
	python := harness.Python(t)
	sink := harness.NewOTLPSink(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "task.py")
	require.NoError(t, os.WriteFile(script, []byte(emitterTask), 0o600))
	sdk := &gymProcess{instance: "slurm-sdk", start: pcommon.NewTimestampFromTime(time.Now())}
	body, err := pmetricotlp.NewExportRequestFromMetrics(sdk.otlpMetrics(5)).MarshalProto()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "otlp.pb"), body, 0o600))
	fixed := slurmFixedPorts(t) // the test probes the agent's gRPC port, which tasks are not given
	const job = 5701
	task := startSlurmTasks(t, "token", slurmStepEnv(job, dir, append(fixed,
		"OTELCOL_GYM_EXPORT_TO=otlp", "OTELCOL_GYM_EXPORT_OTLP_ENDPOINT="+sink.URL(),
		"PYTHONPATH="+filepath.Join(harness.Root, "python"), "OTEL_SERVICE_NAME=nemo-gym/slurm-emitter",
		"OTLP_BODY="+filepath.Join(dir, "otlp.pb"))...), python, script, []int{6})[0]

	var st struct {
		Sent, Lost, Dropped, Flushed float64
		Answers                      map[string]int
		Env                          map[string]*string
	}
	require.NoError(t, harness.Eventually(90*time.Second, 100*time.Millisecond, func() error {
		data, err := os.ReadFile(filepath.Join(dir, "task.json"))
		if err != nil {
			return fmt.Errorf("no task.json yet: %w", err)
		}
		if task.Exited() {
			return errors.New("the task exited: its step's directory is gone")
		}
		return json.Unmarshal(data, &st)
	}), task.LogTail(8000))
	runDir := filepath.Join(dir, "run")
	tokenData, err := os.ReadFile(filepath.Join(runDir, "token"))
	require.NoError(t, err)
	token := string(tokenData)
	assert.Regexp(t, `^[0-9a-f]{64}$`, token)
	for path, want := range map[string]os.FileMode{runDir: 0o700 | os.ModeDir, filepath.Join(runDir, "token"): 0o600} {
		fi, err := os.Stat(path)
		if assert.NoError(t, err) {
			assert.Equal(t, want, fi.Mode(), "%s: the job user's alone", path)
		}
	}
	for _, k := range []string{"OTELCOL_GYM_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"} {
		if assert.NotNil(t, st.Env[k], k) {
			assert.Equal(t, "authorization=Bearer%20"+token, *st.Env[k], k)
		}
	}
	assert.Equal(t, map[string]int{"otlp with the headers": 200, "otlp without": 401, "events without": 401,
		"events with the step token": 401}, st.Answers)
	assert.Equal(t, 1.0, st.Flushed)
	assert.Positive(t, st.Sent)
	assert.Zero(t, st.Lost+st.Dropped)

	var grpcAddr string
	for _, e := range fixed {
		if v, ok := strings.CutPrefix(e, "OTELCOL_GYM_OTLP_GRPC_ENDPOINT="); ok {
			grpcAddr = v
		}
	}
	viaGRPC := &gymProcess{instance: "slurm-grpc", start: pcommon.NewTimestampFromTime(time.Now())}
	err = exportGRPC(grpcAddr, viaGRPC.otlpMetrics(3), "")
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "gRPC without the token: %v", err)
	require.NoError(t, exportGRPC(grpcAddr, viaGRPC.otlpMetrics(4), token), "gRPC with the token")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go-on"), nil, 0o600))

	require.Equal(t, 75, exitCode(t, task), task.LogTail(8000))
	s := summaryOf(t, task)
	assert.Equal(t, 4, s.auth, "OTLP/HTTP and events without the token, events with the step token, gRPC without: %+v", s)
	assert.Zero(t, s.ref+s.failed+s.unqueued+s.left+s.gymRefused+s.rejected, "%+v", s)
	assert.Equal(t, "LOST: 4 requests refused by authentication (sent without the step's token)", s.verdict)
	assert.Equal(t, 6.0, latestCompleted(sink.Exports(), service("nemo-gym/slurm-emitter")), "the emitter's rollouts")
	assert.Equal(t, 5.0, latestCompleted(sink.Exports(), attrIs("service.instance.id", "slurm-sdk")), "OTLP/HTTP with the SDK's headers")
	assert.Equal(t, 7.0, latestCompleted(sink.Exports(), attrIs("service.instance.id", "slurm-grpc")), "gRPC with the token (a cumulative 7)")
	assert.Empty(t, sink.Errors())
}
