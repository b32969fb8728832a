//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// TestClusterRunFileTraces: a node agent (deploy/agent.yaml) follows a results directory whose
// rows carry their rollout evidence, and sends their traces (its traces/evidence pipeline) to
// the recorder gateway (deploy/gateway.yaml), which writes them to its traces file: every
// span once, with the node's name on its resource. Its flight recorder leaves them out: the
// run's only rollout in flight is the one a Gym process's span (OTLP, through the same agent)
// says is, never the rows' finished rollouts, and it takes none of their spans.
func TestClusterRunFileTraces(t *testing.T) {
	t.Parallel()
	const rows = 5
	remoteWrite := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(remoteWrite.Close)
	gwPort := harness.Port(t)
	gwStorage := filepath.Join(t.TempDir(), "gateway")
	gw := startDeployed(t, "gateway", "gateway.yaml", []string{
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", gwPort),
		"OTELCOL_GYM_REMOTE_WRITE_URL=" + remoteWrite.URL + "/api/v1/write",
		"OTELCOL_GYM_STORAGE_DIR=" + gwStorage,
		"OTELCOL_GYM_COLLECTION_INTERVAL=500ms",
		"OTELCOL_GYM_NODE_NAME=recorder-1",
	})

	dir := filepath.Join(t.TempDir(), "node-a")
	results := filepath.Join(dir, "results")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "gym"), 0o700))
	require.NoError(t, os.MkdirAll(results, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(results, "eval.jsonl"), evidenceRows(t, 0, rows), 0o600))
	otlpHTTP := fmt.Sprintf("127.0.0.1:%d", harness.Port(t))
	agent := startDeployed(t, "agent-node-a", "agent.yaml", append(agentEnv(t, dir, fmt.Sprintf("127.0.0.1:%d", gwPort), harness.Port(t), otlpHTTP),
		"OTELCOL_GYM_RUN_FILES="+filepath.Join(results, "*.jsonl")))
	// A Gym process of the same run, with a rollout in a model call.
	postOK(t, "http://"+otlpHTTP+"/v1/traces", gymRunSpans(t, "run-ev", 0, "live/gym.model.chat_completions/policy_model"))

	tracesPath := filepath.Join(gwStorage, "otel-traces.jsonl")
	require.NoError(t, harness.Eventually(60*time.Second, 100*time.Millisecond, func() error {
		if spans, _, _ := readTraces(t, tracesPath); len(spans) < rows*10+1 {
			return fmt.Errorf("%d spans in %s: %w", len(spans), tracesPath, harness.ErrNotYet)
		}
		return nil
	}))
	// The run on the gateway's page: the rows counted, one rollout in flight.
	url := "http://" + envOf(gw.env, "OTELCOL_GYM_LIVE_ENDPOINT") + "/api/v1/runs"
	page := func() (completed, inFlight int, ok bool) {
		var p struct {
			Runs []struct {
				ID       string `json:"id"`
				Total    int    `json:"completed_total"`
				InFlight int    `json:"in_flight"`
			} `json:"runs"`
		}
		liveGet(t, url, &p)
		for _, r := range p.Runs {
			if r.ID == "run-ev" {
				return r.Total, r.InFlight, true
			}
		}
		return 0, 0, false
	}
	require.NoError(t, harness.Eventually(60*time.Second, 200*time.Millisecond, func() error {
		if completed, inFlight, ok := page(); !ok || completed != rows || inFlight != 1 {
			return fmt.Errorf("run-ev: %d completed, %d in flight: %w", completed, inFlight, harness.ErrNotYet)
		}
		return nil
	}))
	time.Sleep(2 * time.Second) // several recorder collections: still the one
	completed, inFlight, _ := page()
	assert.Equal(t, rows, completed)
	assert.Equal(t, 1, inFlight, "the rows' finished rollouts are never in flight")
	// Taken, a row's spans would be a rollout finished by its first (the root, gym.rollout) and
	// nine late spans.
	assert.Zero(t, gw.counter(t, "otelcol_connector_gymrollouts_spans_late"), "the recorder took none of the rows' spans")

	spans, count, text := readTraces(t, tracesPath)
	assert.Len(t, spans, rows*10+1)
	for key, n := range count {
		assert.Equal(t, 1, n, "span %s written %d times", key, n)
	}
	assert.NotContains(t, text, payloadMarker)
	evidence := 0
	for _, s := range spans {
		if id, _ := s.Attributes().Get("nemo.gym.rollout.id"); id.Str() != "live" {
			evidence++
		}
	}
	assert.Equal(t, rows*10, evidence)
	assert.Contains(t, text, `"scope":{"name":"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/evidence"`)
	assert.Contains(t, text, `{"key":"host.name","value":{"stringValue":"node-a"}}`, "resource/node on the agent")
	assert.Zero(t, agent.counter(t, "otelcol_receiver_gym_rollout_spans_dropped"))
	assert.Equal(t, float64(rows*10), agent.counter(t, "otelcol_receiver_gym_rollout_spans_sent"))
}
