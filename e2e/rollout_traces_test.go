//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/rollouts/rolloutstest"
)

const payloadMarker = "PAYLOAD-MARKER-e2e-91c"

// evidenceRows are n main-output rows from the golden row 0 of internal/rollouts' evidence
// (3 model calls, 2 tool calls, 2 invocations, 2 sandboxes each), rollout ids first..first+n-1,
// with the marker in every payload.
func evidenceRows(t *testing.T, first, n int) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(harness.Root, "internal", "rollouts", "testdata", "evidence", "eval.jsonl"))
	require.NoError(t, err)
	line := bytes.SplitN(data, []byte("\n"), 2)[0]
	line = bytes.ReplaceAll(line, []byte(`"content":"solve"`), []byte(`"content":"`+payloadMarker+`"`))
	for _, c := range []string{"x", "y", "o", "q", "a", "r", "s"} {
		line = bytes.ReplaceAll(line, bytes.Repeat([]byte(c), 100), []byte(payloadMarker+strings.Repeat(c, 100-len(payloadMarker))))
	}
	require.Contains(t, string(line), payloadMarker)
	return rolloutstest.EvidenceRows(t, line, first, n)
}

// readTraces reads the file exporter's OTLP JSON lines: every span by trace id and span id.
func readTraces(t *testing.T, path string) (spans map[string]ptrace.Span, count map[string]int, text string) {
	t.Helper()
	spans, count = map[string]ptrace.Span{}, map[string]int{}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return spans, count, ""
	}
	require.NoError(t, err)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(sc.Bytes())
		require.NoError(t, err)
		for i := range td.ResourceSpans().Len() {
			for j := range td.ResourceSpans().At(i).ScopeSpans().Len() {
				ss := td.ResourceSpans().At(i).ScopeSpans().At(j).Spans()
				for k := range ss.Len() {
					s := ss.At(k)
					key := s.TraceID().String() + "/" + s.SpanID().String()
					spans[key] = s
					count[key]++
				}
			}
		}
	}
	return spans, count, string(data)
}

// TestRolloutTracesDefaultConfig: the shipped configuration follows a Gym run whose rows carry
// their rollout evidence. Its traces file holds one trace per row, with the GenAI spans and
// their attributes, and no payload. The collector is stopped (its last checkpoint holds the
// first rows), started again with collections (and so checkpoints) too seldom to come before
// it is killed with SIGKILL, after more rows were appended and their spans written, and
// restarted on the same storage: it reads those rows again, and every span is in the file
// exactly once, and the Prometheus endpoint's model-call, tool and sandbox series equal what
// the rows say.
func TestRolloutTracesDefaultConfig(t *testing.T) {
	t.Parallel()
	results := filepath.Join(t.TempDir(), "results")
	require.NoError(t, os.Mkdir(results, 0o755))
	stem := filepath.Join(results, "eval.jsonl")
	require.NoError(t, os.WriteFile(stem, evidenceRows(t, 0, 10), 0o644))
	storage := t.TempDir()
	tracesPath := filepath.Join(storage, "otel-traces.jsonl")
	start := func(collectionInterval string) (*harness.Collector, harness.Ports) {
		return harness.StartCollector(t, func(p harness.Ports) []string {
			return []string{
				filepath.Join(harness.Root, "config", "otelcol-gym.yaml"),
				harness.DefaultOverride(t, p),
				"extensions:\n  file_storage:\n    directory: " + storage + "\n" +
					"exporters:\n  file/traces:\n    path: " + tracesPath + "\n  file/logs:\n    path: " + filepath.Join(storage, "otel-logs.jsonl") + "\n" +
					"receivers:\n  gym:\n    collection_interval: " + collectionInterval + "\n    rollouts:\n      include: [" + stem + "]\n      start_at: beginning\n      poll_interval: 100ms\n",
			}
		})
	}
	waitTraces := func(n int) {
		t.Helper()
		require.NoError(t, harness.Eventually(60*time.Second, 50*time.Millisecond, func() error {
			spans, _, _ := readTraces(t, tracesPath)
			if len(spans) < n*10 {
				return fmt.Errorf("%d spans, want %d: %w", len(spans), n*10, harness.ErrNotYet)
			}
			return nil
		}))
	}
	col, _ := start("4m")
	waitTraces(10)
	// The last checkpoint, the stop's, holds the first rows. Started again, the collector takes
	// no checkpoint before its first collection, 4 minutes away: the kill below comes after
	// spans no checkpoint holds, however slow the machine.
	require.NoError(t, col.Stop(30*time.Second))
	col, _ = start("4m")
	f, err := os.OpenFile(stem, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(evidenceRows(t, 10, 10))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	waitTraces(20)
	require.NoError(t, syscall.Kill(col.Cmd.Process.Pid, syscall.SIGKILL)) // before its first checkpoint
	<-col.Done()

	col2, ports := start("3s")
	defer func() { _ = col2.Stop(10 * time.Second) }()
	prom := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Prometheus)
	want := map[string]float64{"gym_evidence_model_calls_total": 3 * 20, "gym_evidence_tool_calls_total": 2 * 20, "gym_evidence_sandboxes_total": 2 * 20, "gym_evidence_agent_invocations_total": 2 * 20}
	require.NoError(t, harness.Eventually(60*time.Second, 100*time.Millisecond, func() error {
		text, err := harness.HTTPGet(prom)
		if err != nil {
			return err
		}
		for m, v := range want {
			if got := harness.TextValue(text, m); got != v {
				return fmt.Errorf("%s = %v, want %v: %w", m, got, v, harness.ErrNotYet)
			}
		}
		return nil
	}))
	time.Sleep(time.Second) // a poll or more after the re-read rows: any span of theirs is written
	assert.Equal(t, 10.0, harness.TelemetryValue(t, ports, "otelcol_receiver_gym_rollout_rows_accepted_total")+harness.TelemetryValue(t, ports, "otelcol_receiver_gym_rollout_rows_accepted"),
		"the rows after the last checkpoint, read again after the kill")

	spans, count, text := readTraces(t, tracesPath)
	assert.NotContains(t, text, payloadMarker, "no payload in any span")
	assert.NotContains(t, text, "xxxxxxxxxx")
	assert.Len(t, spans, 20*10)
	for key, n := range count {
		assert.Equal(t, 1, n, "span %s written %d times", key, n)
	}
	traces := map[string]map[string]int{} // trace -> span names
	for _, s := range spans {
		id := s.TraceID().String()
		if traces[id] == nil {
			traces[id] = map[string]int{}
		}
		traces[id][s.Name()]++
		run, _ := s.Attributes().Get("nemo.run.id")
		assert.Equal(t, "run-ev", run.Str(), s.Name())
		_, ok := s.Attributes().Get("nemo.gym.rollout.id")
		assert.True(t, ok, s.Name())
		assert.GreaterOrEqual(t, s.EndTimestamp(), s.StartTimestamp(), s.Name())
		if op, ok := s.Attributes().Get("gen_ai.operation.name"); ok && op.Str() == "execute_tool" {
			_, ok := s.Attributes().Get("gen_ai.tool.call.id")
			assert.True(t, ok)
		}
	}
	require.Len(t, traces, 20, "one trace per rollout row")
	for _, names := range traces {
		assert.Equal(t, map[string]int{"gym.rollout": 1, "invoke_agent swe_agent": 1, "invoke_agent": 1, "chat gpt-oss-120b": 3,
			"execute_tool bash": 1, "execute_tool spawn_agent": 1, "gym.sandbox": 2}, names)
	}
}
