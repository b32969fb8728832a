//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/prices"
)

// costTable is the test's price table (made-up prices): model-a with all four prices, model-b
// with cached_input and reasoning at input's and output's. model-x has no price.
const costTable = `models:
  model-a: {input: 2, output: 8, cached_input: 0.5, reasoning: 10}
  model-b: {input: 0.2, output: 0.8}
`

// costRun is a Gym run's main output: benchmark d0 with every model (model-a with cached and
// reasoning tokens, model-b in the chat spelling, model-x unpriced, a response naming no model,
// a masked full reward), d1 priced but never fully rewarded, d2 with unpriced tokens alone.
func costRun(t *testing.T) []string {
	t.Helper()
	responses := func(in, cached, out, reasoning int) map[string]any {
		return map[string]any{"input_tokens": in, "output_tokens": out,
			"input_tokens_details": map[string]any{"cached_tokens": cached}, "output_tokens_details": map[string]any{"reasoning_tokens": reasoning}}
	}
	rows := []struct {
		bench, model string
		reward       float64
		masked       bool
		usage        map[string]any
	}{
		{"d0", "model-a", 1, false, responses(3000, 1000, 500, 100)},
		{"d0", "model-a", 0, false, responses(12000, 4000, 2500, 2000)},
		{"d0", "model-a", 1, true, responses(800, 0, 50, 0)},
		{"d0", "model-b", 1, false, map[string]any{"prompt_tokens": 1000000, "completion_tokens": 200000}},
		{"d0", "model-b", 1, false, map[string]any{"prompt_tokens": 250000, "completion_tokens": 1000,
			"prompt_tokens_details": map[string]any{"cached_tokens": 50000}}},
		{"d0", "model-x", 0, false, map[string]any{"input_tokens": 70, "output_tokens": 30}},
		{"d0", "", 1, false, map[string]any{"output_tokens": 5}},
		{"d1", "model-a", 0, false, responses(1000000, 0, 1000000, 0)},
		{"d1", "model-a", 0, false, responses(40000, 20000, 3000, 1000)},
		{"d2", "model-x", 1, false, map[string]any{"input_tokens": 9, "output_tokens": 9}},
	}
	var out []string
	for _, r := range rows {
		resp := map[string]any{"status": "completed", "usage": r.usage}
		if r.model != "" {
			resp["model"] = r.model
		}
		b, err := json.Marshal(map[string]any{"_ng_run_id": "run-cost", "_ng_environment_server": r.bench,
			"reward": r.reward, "mask_sample": r.masked, "response": resp})
		require.NoError(t, err)
		out = append(out, string(b))
	}
	return out
}

// gymrunCost is what the test reads of `gymrun summary --json --prices`: each benchmark's
// tokens (type, model -> tokens) and cost.
type gymrunCost struct {
	Benchmarks map[string]struct {
		Tokens map[string]map[string]int64 `json:"tokens"`
		Cost   struct {
			USD              float64                     `json:"usd"`
			ByModel          map[string]float64          `json:"by_model"`
			PerScoredRollout *float64                    `json:"per_scored_rollout"`
			RewardPerUSD     *float64                    `json:"reward_per_usd"`
			UnpricedModels   map[string]map[string]int64 `json:"unpriced_models"`
		} `json:"cost"`
	} `json:"benchmarks"`
}

// TestDashboardCost: the shipped configuration with a price table follows a Gym run's files; a
// real Prometheus scrapes it with deploy/prometheus/gym.rules.yaml loaded. The price series
// carry the table, every panel query and variable of the Cost dashboard and every gym.cost
// recording rule answers, and each panel answers with the numbers `gymrun summary --prices`
// computes from the same files and table (internal/prices' formula): the rules and the Go
// formula agree.
func TestDashboardCost(t *testing.T) {
	t.Parallel()
	dashboards, records, rulesData := ownDashboard(t, costUID)
	require.NotEmpty(t, records)

	dir := t.TempDir()
	table := filepath.Join(dir, "prices.yaml")
	err := os.WriteFile(table, []byte(costTable), 0o600)
	require.NoError(t, err)
	results := filepath.Join(dir, "results")
	require.NoError(t, os.Mkdir(results, 0o755))
	stem := filepath.Join(results, "eval.jsonl")
	require.NoError(t, os.WriteFile(stem, []byte(strings.Join(costRun(t), "\n")+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(results, "eval_failures.jsonl"),
		[]byte(`{"_ng_run_id":"run-cost","_ng_environment_server":"d0","_ng_failure_class":"agent_run_error"}`+"\n"), 0o644))

	// What gymrun makes of the same files and table.
	out, err := exec.Command(gymrunBin, "summary", "--json", "--prices", table, stem).Output()
	require.NoError(t, err)
	var want gymrunCost
	require.NoError(t, json.Unmarshal(out, &want))
	require.Len(t, want.Benchmarks, 3)

	_, ports := harness.StartDefaultCollector(t, fmt.Sprintf(
		"receivers:\n  gym:\n    prices: %s\n    rollouts:\n      include: [%s]\n      start_at: beginning\n      poll_interval: 100ms\n",
		table, filepath.Join(results, "*.jsonl")))
	prom := harness.StartPrometheusWith(t,
		harness.Config(t, "prometheus-gym.yml", map[string]any{"P": ports, "interval": "1s", "rules": true}),
		map[string]string{"gym.rules.yaml": string(rulesData)})

	// The price series: the table, with its defaults, on the prices' own resource.
	tab, err := prices.Parse([]byte(costTable))
	require.NoError(t, err)
	wantPrices := map[string]float64{}
	for _, m := range tab.Models() {
		p, _ := tab.Price(m)
		for i, v := range p {
			wantPrices[fmt.Sprintf(`{gen_ai_response_model=%q,gen_ai_token_type=%q,gym_source="prices"}`, m, prices.Types[i])] = v
		}
	}
	waitVector(t, prom, `sum by (gen_ai_response_model, gen_ai_token_type, gym_source) (gym_token_price_per_million)`, wantPrices)

	checks, vars, _ := dashboardChecks(t, dashboards, records)
	everyQueryAnswers(t, prom, checks, vars)
	// promtool check metrics has nothing to say about the price series' name or unit.
	scrape, err := harness.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Prometheus))
	require.NoError(t, err)
	require.Contains(t, scrapedNames(scrape), "gym_token_price_per_million")
	for _, problem := range promtoolCheckMetrics(t, scrape) {
		require.False(t, strings.HasPrefix(problem, "gym_token_price_per_million"), "promtool check metrics: %s", problem)
	}

	// Each panel's numbers: gymrun's, by the panel's labels.
	const run = `nemo_run_id="run-cost"`
	byRun, byBench, perScored, perUSD := map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	byModel, tokens, unpriced := map[string]float64{}, map[string]float64{}, map[string]float64{}
	model := func(m string) string { // the label of a model: none for a response that names none
		if m == "(none)" {
			return ""
		}
		return fmt.Sprintf("gen_ai_response_model=%q,", m)
	}
	for name, b := range want.Benchmarks {
		bench := fmt.Sprintf(`{nemo_gym_rollout_dispatch_name=%q,%s}`, name, run)
		for typ, models := range b.Tokens {
			for m, n := range models {
				tokens[fmt.Sprintf(`{%sgen_ai_token_type=%q}`, model(m), typ)] += float64(n)
			}
		}
		for m, types := range b.Cost.UnpricedModels {
			for typ, n := range types {
				unpriced[fmt.Sprintf(`{%sgen_ai_token_type=%q}`, model(m), typ)] += float64(n)
			}
		}
		if len(b.Cost.ByModel) == 0 {
			continue // nothing priced: no cost series
		}
		byRun["{"+run+"}"] += b.Cost.USD
		byBench[bench] = b.Cost.USD
		require.NotNil(t, b.Cost.PerScoredRollout, name)
		perScored[bench] = *b.Cost.PerScoredRollout
		require.NotNil(t, b.Cost.RewardPerUSD, name)
		perUSD[bench] = *b.Cost.RewardPerUSD
		for m, usd := range b.Cost.ByModel {
			byModel[fmt.Sprintf(`{gen_ai_response_model=%q}`, m)] += usd
		}
	}
	require.Len(t, byBench, 2, "d0 and d1 are priced")
	require.Contains(t, perUSD, `{nemo_gym_rollout_dispatch_name="d1",`+run+`}`)
	require.Zero(t, perUSD[`{nemo_gym_rollout_dispatch_name="d1",`+run+`}`], "d1 has no full reward")
	panels := map[string]map[string]float64{
		"Cost by run":                    byRun,
		"Cost by benchmark":              byBench,
		"Cost per scored rollout":        perScored,
		"Full rewards per USD":           perUSD,
		"Cost by model (tokens x price)": byModel,
		"Tokens by model and type":       tokens,
		"Tokens without a price":         unpriced,
	}
	seen := 0
	for _, p := range dashboards[0].Panels {
		w, ok := panels[p.Title]
		require.True(t, ok, "panel %q: no expected numbers", p.Title)
		require.Len(t, p.Targets, 1, p.Title)
		waitVector(t, prom, substitute(p.Targets[0].Expr), w)
		seen++
	}
	require.Equal(t, len(panels), seen, "every panel checked")
	everyRuleHealthy(t, prom, sortedKeys(records))

	// The live page prices the run by the same formula: its cost is the panels'.
	var page struct {
		Run struct {
			Cost *struct {
				USD     float64 `json:"usd"`
				ByModel []struct {
					Name  string  `json:"name"`
					Value float64 `json:"value"`
				} `json:"by_model"`
			} `json:"cost"`
		} `json:"run"`
	}
	body, err := harness.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/api/v1/runs/run-cost", ports.Live))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.NotNil(t, page.Run.Cost, "the live page shows the cost when prices are configured")
	assert.InDelta(t, byRun["{"+run+"}"], page.Run.Cost.USD, 1e-9)
	pageByModel := map[string]float64{}
	for _, m := range page.Run.Cost.ByModel {
		pageByModel[fmt.Sprintf(`{gen_ai_response_model=%q}`, m.Name)] = m.Value
	}
	assert.InDeltaMapValues(t, byModel, pageByModel, 1e-9)
}
