package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "write testdata/gymrun (the worked example's runs and output) again")

// exampleDir holds docs/gymrun.md's worked example, runs a and b; exampleGolden compare's output
// on them (both from the repository's root).
const (
	exampleDir    = "testdata/gymrun"
	exampleGolden = "cmd/gymrun/testdata/compare.txt"
)

// writeExample writes the example's runs into dir/a and dir/b (seeded: the same bytes every
// time). Three benchmarks, one change each:
//   - math_with_judge: B's policy passes fewer tasks (75% -> about 55%): a regression;
//   - code_gen: scores as noisy as A's, but 8 of B's rows have a NaN reward: denominator;
//   - search_agent: the same scores, and 12 attempts of B lost to transport errors:
//     infrastructure.
func writeExample(t *testing.T, dir string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(2026, 12))
	var rows [2]map[string][]string // a, b: file -> rows
	for i := range rows {
		rows[i] = map[string][]string{}
	}
	scored := func(side int, bench, agent string, task, rollout int, reward float64) {
		r, _ := json.Marshal(reward)
		if math.IsNaN(reward) {
			r = []byte("NaN") // as Python's json writes it
		}
		latency := 2000 + rng.IntN(9000)
		row, err := json.Marshal(map[string]any{
			"responses_create_params": map[string]any{"input": []any{map[string]any{"role": "user", "content": "task " + bench}}},
			"response": map[string]any{"model": "policy", "status": "completed", "output": []any{map[string]any{"type": "message", "content": []any{}}},
				"usage": map[string]any{"input_tokens": 800 + rng.IntN(400), "output_tokens": 200 + rng.IntN(300)}},
			"_ng_environment_server": bench, "agent_ref": map[string]any{"type": "responses_api_agents", "name": agent},
			"_ng_run_id": []string{"run-a", "run-b"}[side], "_ng_task_index": task, "_ng_rollout_index": rollout,
			"ng_perf":     map[string]any{"num_turns": 1 + rng.IntN(4), "num_tool_calls": rng.IntN(6), "total_latency_ms": latency},
			"mask_sample": false,
		})
		require.NoError(t, err)
		line := strings.Replace(string(row), `{`, `{"reward":`+string(r)+`,`, 1)
		rows[side]["eval.jsonl"] = append(rows[side]["eval.jsonl"], line)
	}
	failed := func(side int, bench string, task int, class, kind, typ string) {
		row, err := json.Marshal(map[string]any{
			"_ng_environment_server": bench, "_ng_run_id": []string{"run-a", "run-b"}[side], "_ng_task_index": task, "_ng_rollout_index": 0,
			"_ng_failure_class": class, "failure_kind": kind, "_ng_failure_type": typ, "_ng_failure_message": kind,
		})
		require.NoError(t, err)
		rows[side]["eval_failures.jsonl"] = append(rows[side]["eval_failures.jsonl"], string(row))
	}
	pass := func(ok bool) float64 {
		if ok {
			return 1
		}
		return 0
	}
	for task := range 60 {
		for rollout := range 2 {
			u := rng.Float64()
			scored(0, "math_with_judge", "math_agent", task, rollout, pass(u < 0.75))
			scored(1, "math_with_judge", "math_agent", task, rollout, pass(u < 0.55 != (rng.Float64() < 0.05)))
		}
	}
	for task := range 50 {
		q := min(max(0.6+0.2*rng.NormFloat64(), 0), 1)
		scored(0, "code_gen", "code_agent", task, 0, math.Round(100*q)/100)
		qb := min(max(q+0.1*rng.NormFloat64(), 0), 1)
		if task%6 == 5 && task < 48 {
			qb = math.NaN() // the verifier gave no score
		}
		scored(1, "code_gen", "code_agent", task, 0, math.Round(100*qb)/100)
	}
	for task := range 50 {
		r := pass(rng.Float64() < 0.6)
		scored(0, "search_agent", "search_agent", task, 0, r)
		scored(1, "search_agent", "search_agent", task, 0, r)
	}
	failed(0, "search_agent", 50, "judge_failed", "judge_failed", "JudgeError")
	failed(1, "search_agent", 50, "judge_failed", "judge_failed", "JudgeError")
	for task := 51; task < 63; task++ {
		kind := []string{"transport_unreachable", "transport_peer_drop"}[task%2]
		failed(1, "search_agent", task, "agent_request_failed", kind, "httpx.ConnectError")
	}
	for i, side := range []string{"a", "b"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, side), 0o755))
		for file, lines := range rows[i] {
			require.NoError(t, os.WriteFile(filepath.Join(dir, side, file), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
		}
	}
}

// TestCompareExample: the committed example is what writeExample writes, and compare's output
// on it is the committed one (exampleGolden), which docs/gymrun.md shows (go test -run
// TestCompareExample -update writes both again; the docs are edited by hand).
func TestCompareExample(t *testing.T) {
	tmp := t.TempDir()
	writeExample(t, tmp)
	t.Chdir(filepath.Join("..", ".."))
	if *update {
		for _, side := range []string{"a", "b"} {
			require.NoError(t, os.RemoveAll(filepath.Join(exampleDir, side)))
			require.NoError(t, os.CopyFS(filepath.Join(exampleDir, side), os.DirFS(filepath.Join(tmp, side))))
		}
	}
	for _, f := range []string{"a/eval.jsonl", "a/eval_failures.jsonl", "b/eval.jsonl", "b/eval_failures.jsonl"} {
		want, err := os.ReadFile(filepath.Join(tmp, f))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(exampleDir, f))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "%s is not what writeExample writes: run the test with -update", f)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"compare", exampleDir + "/a", exampleDir + "/b"}, &out, &errOut)
	assert.Equal(t, 1, code, "the example regresses")
	assert.Empty(t, errOut.String())
	golden := exampleGolden
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
		require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), out.String())
	doc, err := os.ReadFile("docs/gymrun.md")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(doc), "$ gymrun compare testdata/gymrun/a testdata/gymrun/b\n"+string(want)),
		"docs/gymrun.md shows the output of %s", golden)
}
