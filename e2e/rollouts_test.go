//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// Gym's own run files through the real binary: a results directory written while the
// collector follows it (a row appended in pieces, the failures sidecar created at the first
// failure, the health report at the end), bad rows rejected alone and counted, and a restart on
// the same file_storage that counts nothing twice and loses nothing.

func rolloutsOpts(results, storage string) func(harness.Ports) transportsOpts {
	return storedOpts(storage, `    rollouts:
      include: [`+filepath.Join(results, "*.jsonl")+`]
      start_at: beginning
      poll_interval: 100ms
      max_line_bytes: 0
      storage: file_storage`)
}

// gymRow is a main output row as Gym writes it: the whole request and response (a few KiB of
// answer text), the trajectory, ng_perf, the identity keys, and the reward.
func gymRow(i int, reward string) string {
	text := strings.Repeat(fmt.Sprintf("Step %d: we check the \\\"edge\\\" case and go on. ", i), 80)
	return fmt.Sprintf(`{"responses_create_params":{"input":[{"role":"user","content":"Problem %d"}]},`+
		`"response":{"id":"resp_%d","output":[{"type":"function_call","name":"python","arguments":"{\"code\": \"print(1)\"}"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"%s"}]}]},`+
		`"reward":%s,"mask_sample":false,"agent_ref":{"type":"responses_api_agents","name":"math_agent"},"_ng_environment_server":"math",`+
		`"_ng_run_id":"row-run","_ng_task_index":%d,"_ng_rollout_index":0,"ng_trajectory":{"turns":[{"turn_no":0,"answer":"ok"}]},`+
		`"ng_perf":{"num_turns":2,"num_tool_calls":1,"total_latency_ms":512.0}}`+"\n", i, i, text, reward, i)
}

func gymFailure(i int) string {
	return fmt.Sprintf(`{"_ng_failure_class":"agent_request_failed","_ng_failure_type":"httpx.ReadTimeout","_ng_failure_record":{"failure":{"failure_kind":"transport_timeout","failure_reason":"read timed out"}},"_ng_environment_server":"math","_ng_task_index":%d,"_ng_failure_message":"timed out"}`+"\n", i)
}

func outcomeIs(outcome string) func(pcommon.Map) bool {
	return attrIs("nemo.gym.rollout.outcome", outcome)
}

// latestPoints sums the named metric's points (a histogram's: their counts) whose attributes match, under resources that
// match, in the last export that has the metric for them (-1: none has).
func latestPoints(exports []pmetric.Metrics, res func(pcommon.Map) bool, name string, point func(pcommon.Map) bool) float64 {
	for i := len(exports) - 1; i >= 0; i-- {
		total, found := 0.0, false
		for _, m := range metricsNamed(exports[i], res, name) {
			switch m.Type() {
			case pmetric.MetricTypeSum:
				for _, dp := range m.Sum().DataPoints().All() {
					found = true
					if point == nil || point(dp.Attributes()) {
						total += numberOf(dp)
					}
				}
			case pmetric.MetricTypeHistogram: // its count
				for _, dp := range m.Histogram().DataPoints().All() {
					found = true
					if point == nil || point(dp.Attributes()) {
						total += float64(dp.Count())
					}
				}
			}
		}
		if found {
			return total
		}
	}
	return -1
}

func waitPoints(t *testing.T, sink *harness.OTLPSink, what string, res func(pcommon.Map) bool, name string, point func(pcommon.Map) bool, want float64) {
	t.Helper()
	var got float64
	err := harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		if got = latestPoints(sink.Exports(), res, name, point); got != want {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "%s: %s is %v, want %v", what, name, got, want)
}

func TestRolloutFilesLiveAndRestart(t *testing.T) {
	t.Parallel()
	results, storage, _ := logsAndStorage(t)
	out := filepath.Join(results, "eval.jsonl")
	require.NoError(t, os.WriteFile(filepath.Join(results, "eval_manifest.json"), []byte(`{"run_id":"manifest-run"}`), 0o600))
	// Written by Gym beside the output; never read as a main output.
	harness.AppendFile(t, filepath.Join(results, "eval_materialized_inputs.jsonl"), gymRow(900, "1.0"))
	run := func(m pcommon.Map) bool {
		p, _ := m.Get("log.file.path")
		id, _ := m.Get("nemo.run.id")
		svc, _ := m.Get("service.name")
		src, _ := m.Get("gym.source")
		return p.Str() == out && id.Str() == "manifest-run" && svc.Str() == "nemo-gym/rollout_collection" && src.Str() == "rollout_files"
	}
	const completedTotal, rewarded = "gym.rollout.completed_total", "gym.rollout.rewarded_total"

	sink1 := harness.NewOTLPSink(t)
	col, ports := startTransports(t, sink1, rolloutsOpts(results, storage))
	w, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	require.NoError(t, err)
	defer func() { _ = w.Close() }()
	write := func(s string) {
		_, err := w.WriteString(s)
		require.NoError(t, err)
	}
	for i := range 20 {
		write(gymRow(i, []string{"1.0", "0.0", "0.5", "NaN"}[i%4]))
	}
	waitPoints(t, sink1, "20 scored rows", run, completedTotal, outcomeIs("scored"), 20)

	// A row appended in pieces, exported only once it is whole.
	row := gymRow(20, "1.0")
	// Two collections (300 ms) after each piece, several polls (100 ms) have seen it.
	twoExports := func() {
		n := sink1.Count()
		waitFor(t, "two more exports", func() bool { return sink1.Count() >= n+2 })
	}
	write(row[:len(row)/3])
	twoExports()
	write(row[len(row)/3 : 2*len(row)/3])
	twoExports()
	assert.Equal(t, 20.0, latestPoints(sink1.Exports(), run, completedTotal, outcomeIs("scored")), "a row being written is not read half")
	write(row[2*len(row)/3:])
	waitPoints(t, sink1, "the row written in pieces", run, completedTotal, outcomeIs("scored"), 21)
	waitPoints(t, sink1, "rewards: full", run, rewarded, attrIs("nemo.gym.rollout.reward.range", "full"), 6)

	// Bad rows are rejected alone; the sidecar appears at the first failure.
	write("[\"not an object\"]\n" + `{"reward":"1.0"}` + "\n" + gymRow(21, "0.25"))
	harness.AppendFile(t, filepath.Join(results, "eval_failures.jsonl"), gymFailure(30)+gymFailure(31))
	waitPoints(t, sink1, "failures from the late sidecar", run, completedTotal, outcomeIs("failed"), 2)
	waitPoints(t, sink1, "the row after the bad ones", run, completedTotal, outcomeIs("scored"), 22)
	require.NoError(t, harness.Eventually(10*time.Second, 100*time.Millisecond, func() error {
		if harness.TelemetryValue(t, ports, "otelcol_receiver_gym_rollout_rows_rejected", "reason", "not_object") != 1 ||
			harness.TelemetryValue(t, ports, "otelcol_receiver_gym_rollout_rows_rejected", "reason", "wrong_type") != 1 {
			return harness.ErrNotYet
		}
		return nil
	}), "the rejected rows are counted by reason")
	assert.Contains(t, col.LogTail(1<<20), `"reason": "not_object"`)

	// A row is being written at shutdown: a restart reads it whole, once.
	last := gymRow(22, "1.0")
	write(last[:500])
	require.NoError(t, col.Stop(30*time.Second))
	assert.Equal(t, 22.0, latestPoints(sink1.Exports(), run, completedTotal, outcomeIs("scored")))

	// While it is down: the row is finished, more are written, the health report appears.
	write(last[500:] + gymRow(23, "0.0"))
	harness.AppendFile(t, filepath.Join(results, "eval_failures.jsonl"), gymFailure(32))
	harness.AppendFile(t, filepath.Join(results, "rollout_verdicts.jsonl"),
		`{"_ng_task_index":0,"_ng_rollout_index":0,"rollout_id":"r0","verdict":"unhealthy","findings":[{"check":"model_call_failed","detail":{}},"model_call_failed"],"unobserved":[]}`+"\n"+
			`{"_ng_task_index":1,"_ng_rollout_index":0,"rollout_id":"r1","verdict":"healthy","findings":[]}`+"\n")

	sink2 := harness.NewOTLPSink(t)
	col2, _ := startTransports(t, sink2, rolloutsOpts(results, storage))
	// The checkpoint keeps the totals: they go on from 22 scored and 2 failed.
	waitPoints(t, sink2, "after the restart: the rows written since, on top of the restored totals", run, completedTotal, outcomeIs("scored"), 24)
	waitPoints(t, sink2, "after the restart: the failure written since", run, completedTotal, outcomeIs("failed"), 3)
	waitPoints(t, sink2, "the health report", run, "gym.rollout.health_verdict_total", nil, 2)
	waitPoints(t, sink2, "flagged once per distinct check", run, "gym.rollout.health_flagged_total", attrIs("nemo.gym.health.check", "model_call_failed"), 1)
	// Nothing counted twice later on.
	sink2.WaitMore(t, 3)
	assert.Equal(t, 24.0, latestPoints(sink2.Exports(), run, completedTotal, outcomeIs("scored")))
	// The responses' instruments went through the same checkpoint: once per scored row.
	assert.Equal(t, 24.0, latestPoints(sink2.Exports(), run, "gym.rollout.finish_total", attrIs("nemo.gym.rollout.finish_reason", "unknown")))
	assert.Equal(t, 24.0, latestPoints(sink2.Exports(), run, "gym.rollout.tool_calls", nil), "one sample per row whose output is a list")
	assert.Equal(t, 24.0, latestPoints(sink2.Exports(), run, "gym.rollout.duration_ms", nil), "ng_perf.total_latency_ms of each row")
	require.NoError(t, col2.Stop(30*time.Second))
	require.Empty(t, sink1.Errors())
	require.Empty(t, sink2.Errors())
}
