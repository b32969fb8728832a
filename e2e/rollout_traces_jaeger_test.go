//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// TestRolloutTracesInJaeger: the default configuration, its traces/evidence pipeline also
// exporting to a real Jaeger (deploy/jaeger/jaeger.yaml, loopback ports), follows a Gym run
// whose rows carry their rollout evidence. Jaeger holds exactly one trace per rollout row, each
// whole: every span the traces file holds, with its parent, name, kind, times, status,
// attributes, resource and scope; no other trace, and no payload.
func TestRolloutTracesInJaeger(t *testing.T) {
	t.Parallel()
	const rows = 6
	results := filepath.Join(t.TempDir(), "results")
	require.NoError(t, os.Mkdir(results, 0o755))
	stem := filepath.Join(results, "eval.jsonl")
	require.NoError(t, os.WriteFile(stem, evidenceRows(t, 0, rows), 0o644))

	j := harness.StartJaeger(t)
	storage := t.TempDir()
	tracesPath := filepath.Join(storage, "otel-traces.jsonl")
	// As docs/gym.md adds Jaeger: its exporter in both traces pipelines.
	overrides := docOverrides(t, "## Gym's traces in Jaeger")
	require.Len(t, overrides, 4)
	for i, o := range overrides {
		overrides[i] = strings.Replace(o, "127.0.0.1:4327", j.OTLPGRPC, 1)
	}
	require.Contains(t, overrides[3], "traces/evidence")
	col, _ := harness.StartCollector(t, func(p harness.Ports) []string {
		return append([]string{
			filepath.Join(harness.Root, "config", "otelcol-gym.yaml"),
			harness.DefaultOverride(t, p),
			"extensions:\n  file_storage:\n    directory: " + storage + "\n" +
				"exporters:\n  file/traces:\n    path: " + tracesPath + "\n  file/logs:\n    path: " + filepath.Join(storage, "otel-logs.jsonl") + "\n" +
				"receivers:\n  gym:\n    rollouts:\n      include: [" + stem + "]\n      start_at: beginning\n      poll_interval: 100ms\n",
		}, overrides...)
	})
	defer func() { _ = col.Stop(10 * time.Second) }()

	// What the collector wrote: every row's spans (10 each), as one set of traces.
	var written ptrace.Traces
	require.NoError(t, harness.Eventually(60*time.Second, 100*time.Millisecond, func() error {
		spans, _, _ := readTraces(t, tracesPath)
		if len(spans) < rows*10 {
			return fmt.Errorf("%d spans in the traces file, want %d: %w", len(spans), rows*10, harness.ErrNotYet)
		}
		written = ptrace.NewTraces()
		for _, line := range jsonLines(t, tracesPath) {
			td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(line))
			require.NoError(t, err)
			td.ResourceSpans().MoveAndAppendTo(written.ResourceSpans())
		}
		return nil
	}))
	want := harness.TraceSpans(written)
	require.Len(t, want, rows, "one trace per rollout row in the traces file")
	for id, spans := range want {
		require.Len(t, spans, 10, "trace %s", id)
	}

	got := harness.JaegerTraces(t, j, want, 60*time.Second)
	assert.Equal(t, want, got, "each rollout's trace whole in Jaeger")

	// Nothing else: Jaeger's service holds these traces only.
	var from time.Time
	for _, s := range want {
		if from.IsZero() || s[0].Start.Before(from) {
			from = s[0].Start
		}
	}
	found, err := j.FindTraces(t.Context(), "nemo-gym/rollout_collection", from.Add(-time.Hour), time.Now().Add(time.Hour), 100)
	require.NoError(t, err)
	assert.Len(t, found, rows, "Jaeger finds one trace per rollout of the run's service")
	text, err := json.Marshal(got)
	require.NoError(t, err)
	assert.NotContains(t, string(text), payloadMarker, "no payload in Jaeger")
}
