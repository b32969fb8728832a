//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.yaml.in/yaml/v3"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// What docs/deployment.md says of print-config and of a reload by SIGHUP, run on the shipped
// agent configuration.

// TestPrintConfig: print-config on deploy/agent.yaml, the Slurm step's overlay and a site's
// own file prints one merged configuration: the later files win, ${env:...} is resolved, and
// a bearer token in the site's exporter headers is redacted (and is there with
// --mode unredacted, so the redaction is what hides it).
func TestPrintConfig(t *testing.T) {
	t.Parallel()
	harness.UseCollector()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("0123456789abcdef"), 0o600))
	const secret = "gateway-secret-4711"
	site := filepath.Join(dir, "site.yaml")
	require.NoError(t, os.WriteFile(site, []byte(`exporters:
  otlp_grpc:
    endpoint: gateway.example:4317
    headers:
      authorization: Bearer `+secret+"\n"), 0o600))
	run := func(mode string) (string, map[string]any) {
		cmd := exec.Command(harness.Bin, "print-config", "--mode", mode,
			"--config", filepath.Join(harness.Root, "deploy", "agent.yaml"),
			"--config", filepath.Join(harness.Root, "deploy", "slurm", "agent-step.yaml"),
			"--config", site)
		cmd.Env = append(os.Environ(), "OTELCOL_GYM_TOKEN_FILE="+tokenFile, "OTELCOL_GYM_STEP_TOKEN=step-token-42",
			"OTELCOL_GYM_EVENTS_ENDPOINT=127.0.0.1:4999")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "%s", stderr.String())
		var cfg map[string]any
		require.NoError(t, yaml.Unmarshal(out, &cfg), "%s", out)
		return string(out), cfg
	}
	out, cfg := run("redacted")
	get := func(path ...string) any {
		var v any = cfg
		for _, k := range path {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		}
		return v
	}
	assert.Equal(t, "gateway.example:4317", get("exporters", "otlp_grpc", "endpoint"), "the site's file wins")
	assert.Equal(t, []any{map[string]any{"name": "authorization", "value": "[REDACTED]"}},
		get("exporters", "otlp_grpc", "headers"), "the token is redacted")
	assert.NotContains(t, out, secret)
	assert.Equal(t, "127.0.0.1:4999", get("receivers", "gym", "http", "endpoint"), "${env:...} resolved")
	assert.Equal(t, "bearertokenauth", get("receivers", "gym", "http", "auth", "authenticator"), "the step's overlay")
	assert.Equal(t, tokenFile, get("extensions", "bearertokenauth", "filename"))
	assert.Nil(t, get("exporters", "otlp_grpc", "sending_queue", "storage"), "the step's null replaces agent.yaml's file_storage")
	assert.Equal(t, []any{"health_check", "file_storage", "zpages", "bearertokenauth"}, get("service", "extensions"))
	assert.Equal(t, "unix", get("exporters", "gymlive", "transport"), "the step's live page: a socket of the job user's")
	assert.Equal(t, []any{"otlp_grpc", "gymlive"}, get("service", "pipelines", "metrics", "exporters"))

	out, _ = run("unredacted")
	assert.Contains(t, out, "Bearer "+secret, "--mode unredacted shows it")
}

// TestReloadBySIGHUP: the agent on deploy/agent.yaml and a site's file that sends to a sink;
// the file is changed to another sink and the agent gets SIGHUP: the same process sends to the
// new sink, the gym receiver's totals and their start time carried over by its checkpoint
// (file_storage), and takes new events. A file that does not load, at the next SIGHUP, stops
// the agent with the error: hence validate before reloading.
func TestReloadBySIGHUP(t *testing.T) {
	t.Parallel()
	harness.UseCollector()
	dir := t.TempDir()
	first, second := harness.NewOTLPSink(t), harness.NewOTLPSink(t)
	site := filepath.Join(dir, "site.yaml")
	writeSite := func(body string) { require.NoError(t, os.WriteFile(site, []byte(body), 0o600)) }
	toSink := func(s *harness.OTLPSink) string {
		return "exporters:\n  otlp_http:\n    endpoint: " + s.URL() +
			"\nservice:\n  pipelines:\n    metrics:\n      exporters: [otlp_http]\n"
	}
	writeSite(toSink(first))
	gymPort := harness.Port(t)
	// One collection per batch (agent.yaml batches for 1s): each export holds each total once.
	agent := startDeployedConfigs(t, "agent", []string{"agent.yaml", site},
		append(agentEnv(t, dir, "127.0.0.1:1", gymPort, fmt.Sprintf("127.0.0.1:%d", harness.Port(t))),
			"OTELCOL_GYM_COLLECTION_INTERVAL=2s"))
	events := fmt.Sprintf("http://127.0.0.1:%d/v1/events", gymPort)
	status, body := harness.Post(t, http.DefaultClient, events, lines("reload", 0, 5, true), nil)
	require.Equal(t, http.StatusOK, status, body)
	waitCompleted(t, first, "before the reload", service("reload"), 5)
	before := completedStart(t, first)

	writeSite(toSink(second))
	require.NoError(t, agent.Cmd.Process.Signal(syscall.SIGHUP))
	waitCompleted(t, second, "after the reload, the totals kept", service("reload"), 5)
	assert.Equal(t, before, completedStart(t, second), "the same series: its start time is kept")
	require.NoError(t, agent.WaitReady(agent.healthURL, 60*time.Second))
	status, body = harness.Post(t, http.DefaultClient, events, lines("reload", 5, 3, true), nil)
	require.Equal(t, http.StatusOK, status, body)
	waitCompleted(t, second, "new events after the reload", service("reload"), 8)
	// The agent's own metrics start again from zero: the 4 lines since the reload, not 10.
	assert.Equal(t, 4.0, harness.TelemetryValue(t, agent.ports, "otelcol_receiver_gym_lines_accepted"))
	assert.Equal(t, 5.0, latestCompleted(first.Exports(), service("reload")), "the old sink got nothing new")
	assert.False(t, agent.Exited(), "one process throughout")
	log := agent.LogTail(1 << 20)
	assert.Contains(t, log, "Config updated, restart service")
	assert.Equal(t, 2, strings.Count(log, "Everything is ready"), "started, then reloaded")

	// A configuration that does not load: the reload stops the collector, with the error.
	writeSite("exporters:\n  otlp_http:\n    endpoint: " + second.URL() + "\n    no_such_key: 1\n")
	require.NoError(t, agent.Cmd.Process.Signal(syscall.SIGHUP))
	select {
	case <-agent.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("the agent still runs after a reload with a configuration that does not load:\n%s", agent.LogTail(4000))
	}
	assert.Error(t, agent.Err(), "a non-zero exit status")
	assert.Contains(t, agent.LogTail(1<<16), "no_such_key")
}

// completedStart is the start time of gym.rollout.completed_total's points of service
// "reload" in the sink's last export that has them (all of them share it).
func completedStart(t *testing.T, s *harness.OTLPSink) pcommon.Timestamp {
	t.Helper()
	exports := s.Exports()
	for i := len(exports) - 1; i >= 0; i-- {
		for _, rm := range exports[i].ResourceMetrics().All() {
			if !service("reload")(rm.Resource().Attributes()) {
				continue
			}
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Name() == "gym.rollout.completed_total" && m.Sum().DataPoints().Len() > 0 {
						return m.Sum().DataPoints().At(0).StartTimestamp()
					}
				}
			}
		}
	}
	t.Fatal("no gym.rollout.completed_total of service reload in the sink")
	return 0
}
