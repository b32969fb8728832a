//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// gymrunEvidence is what the test reads of `gymrun summary --json`: each benchmark's model
// calls, tool calls by tool, sandboxes and evidence coverage.
type gymrunEvidence struct {
	Benchmarks map[string]struct {
		ModelCalls struct {
			N          int64            `json:"n"`
			Errors     map[string]int64 `json:"errors"`
			DurationMS *struct{ N int } `json:"duration_ms"`
			TTFTMS     *struct{ N int } `json:"ttft_ms"`
		} `json:"model_calls"`
		ToolCalls struct {
			ByTool map[string]struct{ N, Failed int64 } `json:"by_tool"`
		} `json:"tool_calls"`
		Sandboxes map[string]int64 `json:"sandboxes"`
		Evidence  struct {
			Rows           int64            `json:"rows"`
			WithTrajectory int64            `json:"with_trajectory"`
			Gaps           map[string]int64 `json:"gaps"`
		} `json:"evidence"`
	} `json:"benchmarks"`
}

// TestDashboardEvidence: the real collector on the shipped configuration follows a Gym run's
// main output whose rows carry their rollout evidence (internal/rollouts' golden rows, shaped
// like Gym's: model calls, tool calls in both objects, subagents, sandboxes, a compaction,
// gaps, and a row whose evidence is broken); Debian's Prometheus scrapes it. Every panel query
// and variable of the Model calls, tools and sandboxes dashboard answers, and the model-call,
// tool, sandbox and coverage series equal what `gymrun summary` makes of the same file, and
// what the rows say (the golden numbers of TestSummaryEvidence).
func TestDashboardEvidence(t *testing.T) {
	t.Parallel()
	dashboards, _, rulesData := ownDashboard(t, evidenceUID)

	results := filepath.Join(t.TempDir(), "results")
	require.NoError(t, os.Mkdir(results, 0o755))
	rows, err := os.ReadFile(filepath.Join(harness.Root, "internal", "rollouts", "testdata", "evidence", "eval.jsonl"))
	require.NoError(t, err)
	stem := filepath.Join(results, "eval.jsonl")
	require.NoError(t, os.WriteFile(stem, rows, 0o644))

	out, err := exec.Command(gymrunBin, "summary", "--json", stem).Output()
	require.NoError(t, err)
	var want gymrunEvidence
	require.NoError(t, json.Unmarshal(out, &want))
	b, ok := want.Benchmarks["swe"]
	require.True(t, ok, "the rows' benchmark")
	// What the rows say (gen.py), so that the comparison below cannot pass on two empty sides.
	require.Equal(t, int64(4), b.ModelCalls.N)
	require.Equal(t, int64(2), b.Evidence.WithTrajectory)

	_, ports := harness.StartDefaultCollector(t, fmt.Sprintf(
		"receivers:\n  gym:\n    rollouts:\n      include: [%s]\n      start_at: beginning\n      poll_interval: 100ms\n",
		filepath.Join(results, "*.jsonl")))
	prom := harness.StartPrometheusWith(t,
		harness.Config(t, "prometheus-gym.yml", map[string]any{"P": ports, "interval": "1s", "rules": true}),
		map[string]string{"gym.rules.yaml": string(rulesData)})

	const run = `nemo_run_id="run-ev"`
	outcomes := map[string]float64{`{nemo_gym_model_call_outcome="ok"}`: float64(b.ModelCalls.N)}
	for c, n := range b.ModelCalls.Errors {
		outcomes[fmt.Sprintf(`{nemo_gym_model_call_outcome=%q}`, c)] = float64(n)
		outcomes[`{nemo_gym_model_call_outcome="ok"}`] -= float64(n)
	}
	waitVector(t, prom, `sum by (nemo_gym_model_call_outcome) (gym_evidence_model_calls_total{`+run+`})`, outcomes)
	waitVector(t, prom, `sum(gym_evidence_model_call_duration_ms_count{`+run+`})`, map[string]float64{"{}": float64(b.ModelCalls.DurationMS.N)})
	waitVector(t, prom, `sum(gym_evidence_model_call_duration_ms_sum{`+run+`})`, map[string]float64{"{}": 1200 + 2500 + 40})
	waitVector(t, prom, `sum(gym_evidence_model_call_ttft_ms_count{`+run+`})`, map[string]float64{"{}": float64(b.ModelCalls.TTFTMS.N)})

	tools, failed := map[string]float64{}, map[string]float64{}
	for name, s := range b.ToolCalls.ByTool {
		tools[fmt.Sprintf(`{nemo_gym_tool_name=%q}`, name)] = float64(s.N)
		if s.Failed > 0 {
			failed[fmt.Sprintf(`{nemo_gym_tool_name=%q}`, name)] = float64(s.Failed)
		}
	}
	waitVector(t, prom, `sum by (nemo_gym_tool_name) (gym_evidence_tool_calls_total{`+run+`})`, tools)
	waitVector(t, prom, `sum by (nemo_gym_tool_name) (gym_evidence_tool_calls_total{`+run+`, nemo_gym_tool_status!="completed"})`, failed)

	sandboxes := map[string]float64{}
	for o, n := range b.Sandboxes {
		sandboxes[fmt.Sprintf(`{nemo_gym_sandbox_outcome=%q}`, o)] = float64(n)
	}
	waitVector(t, prom, `sum by (nemo_gym_sandbox_outcome) (gym_evidence_sandboxes_total{`+run+`})`, sandboxes)
	waitVector(t, prom, `sum(gym_evidence_sandbox_peak_memory_mib_sum{`+run+`})`, map[string]float64{"{}": 900 + 4096})

	gaps := map[string]float64{}
	for c, n := range b.Evidence.Gaps {
		gaps[fmt.Sprintf(`{nemo_gym_evidence_gap_code=%q}`, c)] = float64(n)
	}
	waitVector(t, prom, `sum by (nemo_gym_evidence_gap_code) (gym_evidence_gaps_total{`+run+`})`, gaps)
	waitVector(t, prom, `sum by (nemo_gym_evidence_trajectory) (gym_evidence_rows_total{`+run+`})`, map[string]float64{
		`{nemo_gym_evidence_trajectory="true"}`:  float64(b.Evidence.WithTrajectory),
		`{nemo_gym_evidence_trajectory="false"}`: float64(b.Evidence.Rows - b.Evidence.WithTrajectory),
	})

	checks, vars, _ := dashboardChecks(t, dashboards, nil)
	everyQueryAnswers(t, prom, checks, vars)
}
