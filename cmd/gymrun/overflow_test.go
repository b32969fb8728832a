package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAddSat(t *testing.T) {
	for _, tc := range []struct {
		a, b, want int64
		sat        bool
	}{
		{1, 2, 3, false},
		{math.MaxInt64 - 1, 1, math.MaxInt64, false},
		{math.MaxInt64, 1, math.MaxInt64, true},
		{9e18, 9e18, math.MaxInt64, true},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64, true},
	} {
		got, sat := addSat(tc.a, tc.b)
		assert.Equal(t, tc.want, got, "%d + %d", tc.a, tc.b)
		assert.Equal(t, tc.sat, sat, "%d + %d", tc.a, tc.b)
	}
}

// A name from the files may hold the pointer's own characters: escaped as RFC 6901 says.
func TestPointer(t *testing.T) {
	assert.Equal(t, "/benchmarks/a~1b~0c/reward/mean", pointer("benchmarks", "a/b~c", "reward", "mean"))
	assert.Equal(t, "/benchmarks//tokens", pointer("benchmarks", "", "tokens"))
}

// rewardRows are main-output rows of bench, one per reward, task i for reward i.
func rewardRows(bench string, rewards ...float64) []string {
	var out []string
	for i, r := range rewards {
		out = append(out, fmt.Sprintf(`{"_ng_environment_server":%q,"reward":%v,"_ng_task_index":%d}`, bench, r, i))
	}
	return out
}

// TestSummaryRewardsOverflow: rewards of 1e308 and -1.7e308 (each a finite reward) made the
// mean and spread +Inf and the JSON encoder fail with no file named. The summary is written:
// the statistics that overflow are null ("-" in the text), named in "overflow", and standard
// error names the file and the benchmark; the rest (the sum, another benchmark) is as usual.
// compare tests nothing there (not_finite) and judges the other benchmarks.
func TestSummaryRewardsOverflow(t *testing.T) {
	stem := writeRun(t, append(rewardRows("b", 1e308, -1.7e308), mainRows("ok", binary(20, 10), true)...), nil)
	r, stderr := summarize(t, stem)
	w := r.Benchmarks["b"].Reward
	assert.Equal(t, int64(2), w.N, "the denominator is the rows', whatever their size")
	require.NotNil(t, w.Sum)
	a, b := 1e308, -1.7e308
	assert.Equal(t, a+b, *w.Sum)
	assert.Nil(t, w.Mean)
	assert.Nil(t, w.SD)
	assert.Nil(t, w.CI95)
	assert.Nil(t, w.Histogram)
	assert.Equal(t, []string{"/benchmarks/b/reward/histogram", "/benchmarks/b/reward/mean", "/benchmarks/b/reward/sd", "/benchmarks/b/reward/se_by_task"}, r.Overflow)
	assert.Contains(t, stderr, stem+`: benchmark "b": its rewards (up to -1.7e+308, in this file) overflow a sum or a spread: null: `)
	require.NotNil(t, r.Benchmarks["ok"].Reward.Mean)
	assert.Equal(t, 0.5, *r.Benchmarks["ok"].Reward.Mean)

	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"summary", stem}, &out, &errOut))
	assert.Regexp(t, `(?m)^\s+b\s+2\s+2\s+0\s+0\s+2\s+2\s+-\s+-\s+-\s`, out.String(), "mean, ci95 and pass unknown")
	assert.Contains(t, out.String(), "\noverflow (shown as -, or a sum saturated at 9223372036854775807):\n  /benchmarks/b/reward/histogram\n")

	// A sum that overflows: null too.
	r, _ = summarize(t, writeRun(t, rewardRows("b", 1.7e308, 1.7e308), nil))
	assert.Nil(t, r.Benchmarks["b"].Reward.Sum)
	assert.Contains(t, r.Overflow, "/benchmarks/b/reward/sum")

	other := writeRun(t, append(rewardRows("b", 0, 1), mainRows("ok", binary(20, 18), true)...), nil)
	out.Reset()
	errOut.Reset()
	assert.Equal(t, 1, run([]string{"compare", "--json", other, stem}, &out, &errOut), "ok regressed: judged as before")
	assert.Contains(t, errOut.String(), stem+`: benchmark "b": its rewards`)
	var cr CompareReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &cr))
	assert.Equal(t, reasonNotFinite, cr.Benchmarks["b"].Reason)
	assert.Nil(t, cr.Benchmarks["b"].Delta)
	assert.Equal(t, verdictRegression, cr.Benchmarks["ok"].Verdict)
	assert.Equal(t, 1, cr.Family)

	// The summary JSON of such a run is read back: the same comparison, from the document.
	sum := summaryFile(t, stem)
	out.Reset()
	assert.Equal(t, 1, run([]string{"compare", "--json", other, sum}, &out, &errOut), errOut.String())
	require.NoError(t, json.Unmarshal(out.Bytes(), &cr))
	assert.Equal(t, reasonNotFinite, cr.Benchmarks["b"].Reason)
}

// TestSummaryTokenSumsSaturate: twenty rows of 9e18 input tokens (each a valid count) summed to
// -4467440737095516160, and of the largest int64 output tokens to -20, exit 0. Sums saturate
// at the largest int64, named in "overflow", with the file on standard error; the cost of a
// saturated model is unknown (null), not the cost of the saturated sum.
func TestSummaryTokenSumsSaturate(t *testing.T) {
	var rows []string
	for range 20 {
		rows = append(rows, costRow(t, "t", "m", 1, map[string]any{"input_tokens": int64(9e18), "output_tokens": int64(math.MaxInt64)}))
	}
	rows = append(rows, costRow(t, "t", "small", 1, map[string]any{"input_tokens": 1000000, "output_tokens": 0}))
	stem := writeRun(t, rows, nil)
	table := filepath.Join(t.TempDir(), "prices.yaml")
	require.NoError(t, os.WriteFile(table, []byte("models: {m: {input: 1, output: 1}, small: {input: 2, output: 1}}\n"), 0o600))
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"summary", "--json", "--prices", table, stem}, &out, &errOut), errOut.String())
	var r Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	b := r.Benchmarks["t"]
	assert.Equal(t, map[string]map[string]int64{"input": {"m": math.MaxInt64, "small": 1000000}, "output": {"m": math.MaxInt64, "small": 0}}, b.Tokens)
	assert.Equal(t, []string{
		"/benchmarks/t/cost/by_model/m", "/benchmarks/t/cost/per_scored_rollout", "/benchmarks/t/cost/reward_per_usd", "/benchmarks/t/cost/usd",
		"/benchmarks/t/tokens/input/m", "/benchmarks/t/tokens/output/m",
	}, r.Overflow)
	assert.Contains(t, errOut.String(), stem+`: benchmark "t": sums pass 9223372036854775807 from this file on: saturated at it: /benchmarks/t/tokens/input/m, /benchmarks/t/tokens/output/m`)
	c := b.Cost
	assert.Nil(t, c.USD)
	assert.Nil(t, c.ByModel["m"])
	require.NotNil(t, c.ByModel["small"])
	assert.Equal(t, 2.0, *c.ByModel["small"], "a model whose sums fit is billed")
	assert.Nil(t, c.PerScoredRollout)
	assert.Nil(t, c.RewardPerUSD)

	out.Reset()
	require.Equal(t, 0, run([]string{"summary", "--prices", table, stem}, &out, &errOut))
	assert.Regexp(t, `(?m)^\s+t\s+-\s+per scored rollout -\s+reward per USD -\s*$`, out.String())
	assert.Regexp(t, `(?m)^\s+total\s+-\s*$`, out.String())
	assert.Regexp(t, `(?m)^\s+t\s+small\s+2\.000000\s*$`, out.String())
}

// TestRewardPerUSDOverflow: prices near 0 (valid) make a tiny cost, and the reward per USD
// overflows: null and named; the cost itself is known.
func TestRewardPerUSDOverflow(t *testing.T) {
	stem := writeRun(t, []string{costRow(t, "b", "m", 1e10, map[string]any{"input_tokens": 1, "output_tokens": 0})}, nil)
	table := filepath.Join(t.TempDir(), "prices.yaml")
	require.NoError(t, os.WriteFile(table, []byte("models: {m: {input: 1e-300, output: 0}}\n"), 0o600))
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"summary", "--json", "--prices", table, stem}, &out, &errOut), errOut.String())
	var r Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	c := r.Benchmarks["b"].Cost
	require.NotNil(t, c.USD)
	assert.Equal(t, 1e-306, *c.USD)
	assert.Nil(t, c.RewardPerUSD)
	assert.Equal(t, []string{"/benchmarks/b/cost/reward_per_usd"}, r.Overflow)
	assert.Contains(t, errOut.String(), `benchmark "b": its cost is unknown (a token sum saturated) or overflows: null: /benchmarks/b/cost/reward_per_usd`)
}

// TestNoNumberBreaksJSON: whatever finite rewards the rows give (the largest floats, the
// smallest, squares that overflow, with and without tasks, pass/fail beside them), summary and
// compare write their documents (and the HTML report), exit as usual, and every number in
// them is finite (encoding/json refuses the others); each null is named in "overflow".
func TestNoNumberBreaksJSON(t *testing.T) {
	sets := [][]float64{
		{1e308, -1.7e308},
		{math.MaxFloat64, math.MaxFloat64, math.MaxFloat64},
		{-math.MaxFloat64, math.MaxFloat64, 0, 1},
		{1e200, -1e200, 1e200, 3},
		{1e155, 1e155, -1e155, 0},
		{5e-324, -5e-324, 0, 1},
		{8e307, -8e307, 1, 0},
	}
	html := filepath.Join(t.TempDir(), "report.html")
	for i, rewards := range sets {
		rows := append(rewardRows("b", rewards...), mainRows("untasked", rewards, false)...)
		rows = append(rows, mainRows("pass", binary(10, 5), true)...)
		stem := writeRun(t, rows, nil)
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run([]string{"summary", "--json", stem}, &out, &errOut), "%v: %s", rewards, errOut.String())
		var r Report
		require.NoError(t, json.Unmarshal(out.Bytes(), &r), "%v", rewards)
		for name, b := range r.Benchmarks {
			w := b.Reward
			if w.Mean == nil {
				assert.Contains(t, r.Overflow, pointer("benchmarks", name, "reward", "mean"), "%v", rewards)
			}
			if w.Sum == nil {
				assert.Contains(t, r.Overflow, pointer("benchmarks", name, "reward", "sum"), "%v", rewards)
			}
		}
		for _, p := range r.Overflow {
			assert.True(t, strings.HasPrefix(p, "/benchmarks/b/") || strings.HasPrefix(p, "/benchmarks/untasked/"), "%v: %s", rewards, p)
		}
		sum := filepath.Join(t.TempDir(), fmt.Sprintf("s%d.json", i))
		require.NoError(t, os.WriteFile(sum, out.Bytes(), 0o600))
		for _, sides := range [][2]string{{stem, stem}, {sum, stem}, {stem, writeRun(t, mainRows("b", binary(10, 5), true), nil)}} {
			out.Reset()
			errOut.Reset()
			code := run([]string{"compare", "--json", "--html", html, sides[0], sides[1]}, &out, &errOut)
			require.NotEqual(t, 2, code, "%v: %s", rewards, errOut.String())
			var cr CompareReport
			require.NoError(t, json.Unmarshal(out.Bytes(), &cr), "%v", rewards)
			assert.Equal(t, verdictNoChange, cr.Benchmarks["pass"].Verdict)
			page, err := os.ReadFile(html)
			require.NoError(t, err)
			assert.NotContains(t, string(page), "NaN", "%v", rewards)
			assert.NotContains(t, string(page), "Inf", "%v", rewards)
		}
	}
}

// TestCompareSummaryJSONHostileCounts: a summary JSON is anyone's file: counts outside
// [0, 2^53] (whose sums could wrap into a match) and groups above the failures (shares above 1,
// a NaN z) are refused with the file and benchmark, not written as NaN.
func TestCompareSummaryJSONHostileCounts(t *testing.T) {
	good := writeRun(t, append(mainRows("math", binary(20, 10), true), failureRows("math", "timeout", "agent_timeout", 2)...), nil)
	data, err := os.ReadFile(summaryFile(t, good))
	require.NoError(t, err)
	dir := t.TempDir()
	for name, edit := range map[string]func(b map[string]any){
		"negative group": func(b map[string]any) { b["failed_by_group"].(map[string]any)["transport"] = -5 },
		"group above failed": func(b map[string]any) {
			b["failed_by_group"].(map[string]any)["transport"] = 30
		},
		"wrapping counts": func(b map[string]any) {
			// 2^63 - 1 twice and 2: 2^64, 0 in int64, were they summed unchecked.
			b["attempts"], b["scored"], b["failed"], b["masked"] = 2, 0, 2, int64(math.MaxInt64)
			b["reward"].(map[string]any)["n"], b["reward"].(map[string]any)["nan"] = int64(math.MaxInt64), 2
		},
		"histogram too wide": func(b map[string]any) {
			b["reward"].(map[string]any)["histogram"] = map[string]any{"lo": -1e308, "hi": 1e308, "counts": []int{20}}
		},
	} {
		var doc map[string]any
		require.NoError(t, json.Unmarshal(data, &doc))
		edit(doc["benchmarks"].(map[string]any)["math"].(map[string]any))
		bad, _ := json.Marshal(doc)
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		require.NoError(t, os.WriteFile(path, bad, 0o600))
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run([]string{"compare", "--json", good, path}, &out, &errOut), name)
		assert.Contains(t, errOut.String(), path+`: benchmark "math": `, name)
		assert.Empty(t, out.String(), name)
	}
}

// TestHelp: --help (and -h) of every subcommand, and of the command, prints its usage once on
// standard output and exits 0; a bad flag prints it once on standard error and exits 2.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"summary", "--help"}, {"summary", "-h"}, {"compare", "--help"}, {"top", "--help"}, {"top", "-h"}} {
		var out, errOut bytes.Buffer
		var code int
		if args[0] == "top" {
			code = runTop(args[1:], os.Stdin, &out, &errOut)
		} else {
			code = run(args, &out, &errOut)
		}
		assert.Equal(t, 0, code, "%q", args)
		assert.Equal(t, 1, strings.Count(out.String(), "usage: gymrun "), "%q: %s", args, out.String())
		assert.Empty(t, errOut.String(), "%q", args)
		if len(args) > 1 {
			assert.Contains(t, out.String(), "usage: gymrun "+args[0]+" ", "%q", args)
			assert.Contains(t, out.String(), "flags:\n  -", "%q", args)
		}
	}
	for _, args := range [][]string{{"summary", "--bogus"}, {"compare", "--bogus"}, {"top", "--bogus"}} {
		var out, errOut bytes.Buffer
		var code int
		if args[0] == "top" {
			code = runTop(args[1:], os.Stdin, &out, &errOut)
		} else {
			code = run(args, &out, &errOut)
		}
		assert.Equal(t, 2, code, "%q", args)
		assert.Equal(t, 1, strings.Count(errOut.String(), "usage: gymrun "+args[0]), "%q: %s", args, errOut.String())
		assert.Contains(t, errOut.String(), "bogus", "%q", args)
		assert.Empty(t, out.String(), "%q", args)
	}
}
