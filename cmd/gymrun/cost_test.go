package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// costRow is a main-output row of bench with a response of model (none when "") and its usage.
func costRow(t *testing.T, bench, model string, reward float64, usage map[string]any) string {
	t.Helper()
	resp := map[string]any{"status": "completed", "usage": usage}
	if model != "" {
		resp["model"] = model
	}
	b, err := json.Marshal(map[string]any{"_ng_environment_server": bench, "reward": reward, "response": resp})
	require.NoError(t, err)
	return string(b)
}

// TestSummaryPrices: --prices bills each benchmark's tokens by model at the table's prices
// (worked out here by hand), per scored rollout and per unit of reward; models without a
// price, and responses that name none, are counted apart and cost nothing.
func TestSummaryPrices(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "prices.yaml")
	require.NoError(t, os.WriteFile(table, []byte("models:\n  m-a: {input: 2, output: 8, cached_input: 0.5, reasoning: 10}\n  m-b: {input: 0.2, output: 0.8}\n  m-free: {input: 0, output: 0}\n"), 0o600))
	reasoning := func(in, cached, out, reason int) map[string]any {
		return map[string]any{"input_tokens": in, "output_tokens": out,
			"input_tokens_details": map[string]any{"cached_tokens": cached}, "output_tokens_details": map[string]any{"reasoning_tokens": reason}}
	}
	main := []string{
		costRow(t, "b0", "m-a", 1, reasoning(3000, 1000, 500, 100)),
		costRow(t, "b0", "m-a", 0, reasoning(1000, 0, 100, 0)),
		costRow(t, "b0", "m-b", 1, map[string]any{"prompt_tokens": 1000000, "completion_tokens": 200000}), // the chat spelling
		costRow(t, "b0", "m-x", 1, map[string]any{"input_tokens": 70, "output_tokens": 30}),
		costRow(t, "b0", "", 0, map[string]any{"output_tokens": 5}),
		costRow(t, "b1", "m-x", 1, map[string]any{"input_tokens": 9, "output_tokens": 9}),
		costRow(t, "b2", "m-free", 1, map[string]any{"input_tokens": 9, "output_tokens": 9}),
	}
	stem := writeRun(t, main, nil)
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"summary", "--json", "--prices", table, stem}, &out, &errOut), errOut.String())
	var r Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))

	// m-a: input 4000 (1000 cached), output 600 (100 reasoning):
	// 3000 * 2 + 1000 * 0.5 + 500 * 8 + 100 * 10 = 11500 -> 0.0115 USD.
	// m-b: 1000000 * 0.2 + 200000 * 0.8 = 360000 -> 0.36 USD.
	c := r.Benchmarks["b0"].Cost
	require.NotNil(t, c)
	assert.InDelta(t, 0.0115, *c.ByModel["m-a"], 1e-12)
	assert.InDelta(t, 0.36, *c.ByModel["m-b"], 1e-12)
	assert.Len(t, c.ByModel, 2)
	assert.InDelta(t, 0.3715, *c.USD, 1e-12)
	require.NotNil(t, c.PerScoredRollout)
	assert.InDelta(t, 0.3715/5, *c.PerScoredRollout, 1e-12, "5 scored rollouts")
	require.NotNil(t, c.RewardPerUSD)
	assert.InDelta(t, 3/0.3715, *c.RewardPerUSD, 1e-9, "a reward of 3")
	assert.Equal(t, map[string]map[string]int64{"m-x": {"input": 70, "output": 30}, absent: {"output": 5}}, c.UnpricedModels)

	c = r.Benchmarks["b1"].Cost
	require.NotNil(t, c.USD)
	assert.Zero(t, *c.USD)
	assert.Nil(t, c.PerScoredRollout, "nothing priced: no cost per rollout")
	assert.Nil(t, c.RewardPerUSD)
	assert.Equal(t, map[string]map[string]int64{"m-x": {"input": 9, "output": 9}}, c.UnpricedModels)
	c = r.Benchmarks["b2"].Cost
	require.NotNil(t, c.PerScoredRollout, "a free model is priced, at 0")
	assert.Zero(t, *c.PerScoredRollout)
	assert.Nil(t, c.RewardPerUSD, "no reward per USD of nothing")

	// The text form: each benchmark's cost and the total; the tokens without a price apart.
	out.Reset()
	require.Equal(t, 0, run([]string{"summary", "--prices", table, stem}, &out, &errOut))
	assert.Regexp(t, `(?m)^\s+total\s+0\.371500\s*$`, out.String())
	assert.Regexp(t, `(?m)^\s+b0\s+m-b\s+0\.360000\s*$`, out.String())
	assert.Regexp(t, `(?m)^\s+b0\s+m-x\s+input\s+70\s*$`, out.String())
	assert.Contains(t, out.String(), "tokens without a price")

	// Without --prices there is no cost.
	plain, _ := summarize(t, stem)
	assert.Nil(t, plain.Benchmarks["b0"].Cost)
}

// TestSummaryPricesRefused: a price table that cannot be read is a usage error, with the file
// and why.
func TestSummaryPricesRefused(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "prices.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("models:\n  m: {input: .nan, output: 1}\n"), 0o600))
	for path, want := range map[string]string{
		bad:                                fmt.Sprintf(`gymrun: prices: %s: models: "m": input: NaN is not a price`, bad),
		filepath.Join(t.TempDir(), "nope"): "no such file",
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run([]string{"summary", "--prices", path, filepath.Join("..", "..", "testdata", "rollouts", "run1")}, &out, &errOut))
		assert.Contains(t, errOut.String(), want)
		assert.Empty(t, out.String())
	}
}
