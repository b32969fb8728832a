package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// evidenceRows are internal/rollouts' golden rows of rollout evidence (shaped like Gym's).
var evidenceRows = filepath.Join("..", "..", "internal", "rollouts", "testdata", "evidence", "eval.jsonl")

// TestSummaryEvidence: gymrun summary on the golden rows says what the rows say (worked out
// by hand from their gen.py), and what the receiver exports from the same rows.
func TestSummaryEvidence(t *testing.T) {
	r, _ := summarize(t, evidenceRows)
	b := r.Benchmarks["swe"]
	assert.Equal(t, ModelCalls{
		N: 4, Errors: map[string]int64{"rate_limit": 1},
		DurationMS: &Percentiles{N: 3, P50: 1200, P90: 2500, P99: 2500}, // row 2's call has no duration
		TTFTMS:     &Percentiles{N: 1, P50: 300, P90: 300, P99: 300},
	}, b.ModelCalls)
	assert.Equal(t, map[string]ToolStat{"bash": {N: 1}, "spawn_agent": {N: 1, Failed: 1}}, b.ToolCalls.ByTool)
	assert.Equal(t, map[string]int64{"completed": 1, "oom": 1}, b.Sandboxes)
	assert.Equal(t, EvidenceReport{
		Rows: 3, WithTrajectory: 2,
		Gaps:     map[string]int64{"model_call_reference_unmatched": 1, "other": 1},
		Problems: map[string]int64{"not_object": 2, "wrong_type": 1, "out_of_range": 1, "missing_id": 2, "duplicate_id": 1, "parent_cycle": 1, "timestamp_skew": 1},
	}, b.Evidence)

	// The receiver's series of the same rows.
	md, _ := collect(t, filepath.Join(filepath.Dir(evidenceRows), "*.jsonl"))
	series := evidenceSeries(md)
	assert.Equal(t, float64(b.ModelCalls.N), series["gym.evidence.model_calls_total"])
	assert.Equal(t, float64(b.ModelCalls.Errors["rate_limit"]), series["gym.evidence.model_calls_total|nemo.gym.model_call.outcome=rate_limit"])
	assert.Equal(t, float64(b.ModelCalls.DurationMS.N), series["gym.evidence.model_call.duration_ms"])
	assert.Equal(t, float64(b.ToolCalls.ByTool["bash"].N+b.ToolCalls.ByTool["spawn_agent"].N), series["gym.evidence.tool_calls_total"])
	assert.Equal(t, float64(b.ToolCalls.ByTool["spawn_agent"].Failed), series["gym.evidence.tool_calls_total|nemo.gym.tool.status=failed"])
	assert.Equal(t, float64(b.Sandboxes["oom"]), series["gym.evidence.sandboxes_total|nemo.gym.sandbox.outcome=oom"])
	assert.Equal(t, float64(b.Evidence.WithTrajectory), series["gym.evidence.rows_total|nemo.gym.evidence.trajectory=true"])
	assert.Equal(t, float64(b.Evidence.Gaps["other"]), series["gym.evidence.gaps_total|nemo.gym.evidence.gap.code=other"])

	// The text summary has a line of each.
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"summary", evidenceRows}, &out, &errOut), errOut.String())
	for _, want := range []string{"rows with trajectory", "2/3", "model call errors", "rate_limit", "tool spawn_agent", "1 failed", "sandboxes oom", "gap other", "problem parent_cycle"} {
		assert.Contains(t, out.String(), want)
	}
}

// evidenceSeries sums the gym.evidence.* series by instrument (a histogram: its count), and by
// instrument and each attribute value.
func evidenceSeries(md pmetric.Metrics) map[string]float64 {
	out := map[string]float64{}
	add := func(name string, attrs map[string]any, v float64) {
		out[name] += v
		for k, a := range attrs {
			if s, ok := a.(string); ok {
				out[name+"|"+k+"="+s] += v
			} else if bv, ok := a.(bool); ok && bv {
				out[name+"|"+k+"=true"] += v
			}
		}
	}
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			switch m.Type() {
			case pmetric.MetricTypeSum:
				for k := range m.Sum().DataPoints().Len() {
					p := m.Sum().DataPoints().At(k)
					add(m.Name(), p.Attributes().AsRaw(), float64(p.IntValue()))
				}
			case pmetric.MetricTypeHistogram:
				for k := range m.Histogram().DataPoints().Len() {
					p := m.Histogram().DataPoints().At(k)
					add(m.Name(), p.Attributes().AsRaw(), float64(p.Count()))
				}
			}
		}
	}
	return out
}
