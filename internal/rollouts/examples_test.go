package rollouts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/rollouts/rolloutstest"
)

// examplesDir is NeMo Gym's example rollouts (testdata/gym-examples, PROVENANCE.md there).
const examplesDir = "../../testdata/gym-examples"

// unpackExamples writes the example rollout files into a directory of their own and returns
// their paths.
func unpackExamples(t *testing.T) (dir string, paths []string) {
	return rolloutstest.UnpackExamples(t, examplesDir)
}

// pythonCounts is what tokens.py, with Python's json module, counts in the files.
type pythonCounts struct {
	Rows, Rejected, Responses int64
	Tokens                    map[string]struct{ Sum, Samples int64 }
	TokensByModel             map[string]int64 `json:"tokens_by_model"`
	Finish                    map[string]int64
	ToolCalls                 struct{ Sum, Samples int64 } `json:"tool_calls"`
}

// TestGymExampleRollouts: the rollouts source on NeMo Gym's own example rollouts exports the
// token, finish and tool-call totals that Python's json module finds in the same files.
func TestGymExampleRollouts(t *testing.T) {
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "the test needs python3")
	dir, paths := unpackExamples(t)

	cmd := exec.Command(python, append([]string{filepath.Join(examplesDir, "tokens.py")}, paths...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var want pythonCounts
	require.NoError(t, json.Unmarshal(out, &want))
	require.Greater(t, want.Tokens["input"].Sum, int64(1_000_000), "the files carry real usage")

	agg := newTestAggregator(t)
	_, got := newTestSource(t, agg, filepath.Join(dir, "*", "*", "data", "*.jsonl"), true, nil, 0)
	md := agg.Collect(aggregate.Scope{})

	assert.Equal(t, want.Rows, got.Accepted, "every row a JSON object is applied")
	assert.Equal(t, want.Rejected, got.Rejected[ReasonNotObject], "the placeholder lines are rejected, alone")
	tokens := map[string]struct{ Sum, Samples int64 }{}
	byModel := map[string]int64{}
	eachPoint(md, "gym.rollout.tokens", func(attrs map[string]any, p pmetric.HistogramDataPoint) {
		typ := attrs["gen_ai.token.type"].(string)
		v := tokens[typ]
		v.Sum += int64(p.Sum())
		v.Samples += int64(p.Count())
		tokens[typ] = v
		model, _ := attrs["gen_ai.response.model"].(string)
		byModel[typ+"|"+model] += int64(p.Sum())
	})
	assert.Equal(t, want.Tokens, tokens)
	assert.Equal(t, want.TokensByModel, byModel)

	finish := map[string]int64{}
	var finishRows int64
	for _, rm := range resourceMetrics(md) {
		ms := rm.ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if ms.At(j).Name() != "gym.rollout.finish_total" {
				continue
			}
			dps := ms.At(j).Sum().DataPoints()
			for k := range dps.Len() {
				r, _ := dps.At(k).Attributes().Get("nemo.gym.rollout.finish_reason")
				finish[r.Str()] += dps.At(k).IntValue()
				finishRows += dps.At(k).IntValue()
			}
		}
	}
	assert.Equal(t, want.Finish, finish)
	assert.Equal(t, want.Responses, finishRows, "once per row with a response")

	var calls struct{ Sum, Samples int64 }
	eachPoint(md, "gym.rollout.tool_calls", func(_ map[string]any, p pmetric.HistogramDataPoint) {
		calls.Sum += int64(p.Sum())
		calls.Samples += int64(p.Count())
	})
	assert.Equal(t, want.ToolCalls, calls)
}

func resourceMetrics(md pmetric.Metrics) []pmetric.ResourceMetrics {
	out := make([]pmetric.ResourceMetrics, md.ResourceMetrics().Len())
	for i := range out {
		out[i] = md.ResourceMetrics().At(i)
	}
	return out
}

// eachPoint calls f for every point of histogram name, over all resources.
func eachPoint(md pmetric.Metrics, name string, f func(map[string]any, pmetric.HistogramDataPoint)) {
	for _, rm := range resourceMetrics(md) {
		ms := rm.ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if m := ms.At(j); m.Name() == name {
				for k := range m.Histogram().DataPoints().Len() {
					p := m.Histogram().DataPoints().At(k)
					f(p.Attributes().AsRaw(), p)
				}
			}
		}
	}
}
