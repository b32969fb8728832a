package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mainRows are main-output rows of benchmark name: reward i is task i's rollout 0 (%v writes
// NaN as Python's json does); keyed false leaves the indices out, as older Gym.
func mainRows(name string, rewards []float64, keyed bool) []string {
	var out []string
	for i, r := range rewards {
		row := fmt.Sprintf(`{"_ng_environment_server":%q,"reward":%v,"mask_sample":false,"response":{"model":"policy","status":"completed","usage":{"input_tokens":120,"output_tokens":40}},"ng_perf":{"num_turns":1,"total_latency_ms":%d}`, name, r, 800+37*i%500)
		if keyed {
			row += fmt.Sprintf(`,"_ng_task_index":%d,"_ng_rollout_index":0`, i)
		}
		out = append(out, row+"}")
	}
	return out
}

// failureRows are n sidecar rows of benchmark name with the failure class and kind.
func failureRows(name, class, kind string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf(`{"_ng_environment_server":%q,"_ng_task_index":%d,"_ng_rollout_index":1,"_ng_failure_class":%q,"failure_kind":%q}`, name, 1000+i, class, kind))
	}
	return out
}

// binary is n rewards of which the first ones are 1, spread: reward i is 1 when i*ones/n
// steps.
func binary(n, ones int) []float64 {
	out := make([]float64, n)
	for i := range n {
		if (i+1)*ones/n > i*ones/n {
			out[i] = 1
		}
	}
	return out
}

// compareRun runs `gymrun compare --json A B` and returns the exit status and the document.
func compareRun(t *testing.T, a, b string) (int, CompareReport, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run([]string{"compare", "--json", a, b}, &out, &errOut)
	var r CompareReport
	if code != 2 {
		require.NoError(t, json.Unmarshal(out.Bytes(), &r), out.String())
	}
	return code, r, errOut.String()
}

// summaryFile writes `gymrun summary --json` of a run to a file.
func summaryFile(t *testing.T, path string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"summary", "--json", path}, &out, &errOut), errOut.String())
	p := filepath.Join(t.TempDir(), "summary.json")
	require.NoError(t, os.WriteFile(p, out.Bytes(), 0o644))
	return p
}

// TestCompareCases: generated runs, each a known change, read as run files (paired by task)
// and as summary JSON files (unpaired, clustered by task).
func TestCompareCases(t *testing.T) {
	base := binary(200, 160) // 80% pass
	drop := append([]float64{}, base...)
	for i, dropped := 0, 0; dropped < 40; i++ { // 40 passes become failures: 80% -> 60%
		if drop[i] == 1 {
			drop[i], dropped = 0, dropped+1
		}
	}
	flipped := append([]float64{}, base...)
	for _, i := range []int{0, 5, 10, 1, 2, 3} { // 0 -> 1 and 1 -> 0, three of each
		flipped[i] = 1 - flipped[i]
	}
	nan := append([]float64{}, base...)
	for i := range 50 { // 10 failures and 40 passes leave the mean: still 80% of the rest
		nan[i] = math.NaN()
	}
	require.Equal(t, 160.0, sum(flipped))
	judge := failureRows("math", "judge_failed", "judge_failed", 2)
	a := writeRun(t, mainRows("math", base, true), judge)
	cases := []struct {
		name    string
		b       string
		verdict string
		causes  []string
		moved   []string
	}{
		{"drop", writeRun(t, mainRows("math", drop, true), judge), verdictRegression, []string{causeModel}, nil},
		{"flipped noise", writeRun(t, mainRows("math", flipped, true), judge), verdictNoChange, []string{}, nil},
		{"transport failures", writeRun(t, mainRows("math", base, true), append(failureRows("math", "agent_request_failed", "transport_unreachable", 30), judge...)),
			verdictNoChange, []string{causeInfrastructure}, []string{shareFailed, groupTransport}},
		{"more NaN", writeRun(t, mainRows("math", nan, true), judge), verdictNoChange, []string{causeDenominator}, []string{"nan"}},
	}
	for _, c := range cases {
		for _, asSummary := range []bool{false, true} {
			pa, pb, test := a, c.b, testPaired
			if asSummary {
				pa, pb, test = summaryFile(t, a), summaryFile(t, c.b), testClustered
			}
			code, r, stderr := compareRun(t, pa, pb)
			name := fmt.Sprintf("%s (summary JSON %v)", c.name, asSummary)
			wantCode := 0
			if c.verdict == verdictRegression {
				wantCode = 1
			}
			require.Equal(t, wantCode, code, "%s: %s", name, stderr)
			assert.Equal(t, CompareSchema, r.Schema)
			assert.Equal(t, c.verdict, r.Verdict, name)
			m := r.Benchmarks["math"]
			assert.Equal(t, test, m.Test, name)
			assert.Equal(t, c.verdict, m.Verdict, name)
			assert.Equal(t, c.causes, m.Causes, name)
			var moved []string
			for _, s := range append(append([]string{}, attemptShares...), denominatorShares...) {
				if m.Shares[s].Moved {
					moved = append(moved, s)
				}
			}
			assert.Equal(t, c.moved, moved, name)
			require.NotNil(t, m.CI95, name)
			assert.LessOrEqual(t, m.CI95[0], *m.Delta)
			assert.GreaterOrEqual(t, m.CI95[1], *m.Delta)
			if test == testPaired {
				assert.Equal(t, m.B.Tasks, m.Pairs, "%s: every task of B has its partner in A", name)
			}
		}
	}
	// The drop's change is -0.2 either way: paired over the 200 rollouts, and as B's mean
	// minus A's.
	for _, p := range [][2]string{{a, cases[0].b}, {summaryFile(t, a), summaryFile(t, cases[0].b)}} {
		_, r, _ := compareRun(t, p[0], p[1])
		assert.InDelta(t, -0.2, *r.Benchmarks["math"].Delta, 1e-12)
	}
}

func sum(xs []float64) (s float64) {
	for _, x := range xs {
		s += x
	}
	return s
}

// TestComparePairing: runs whose rows give no indices are compared by Welch's test by rollout;
// a directory of two runs of one benchmark is paired by task; a benchmark of one run only is
// said so and judged no_change.
func TestComparePairing(t *testing.T) {
	base, drop := binary(100, 80), binary(100, 50)
	unkeyedA := writeRun(t, mainRows("math", base, false), nil)
	keyedB := writeRun(t, append(mainRows("math", drop, true), mainRows("extra", base, true)...), nil)
	code, r, _ := compareRun(t, unkeyedA, keyedB)
	assert.Equal(t, 1, code)
	assert.Equal(t, testWelch, r.Benchmarks["math"].Test)
	assert.Equal(t, verdictRegression, r.Benchmarks["math"].Verdict)
	extra := r.Benchmarks["extra"]
	assert.Equal(t, "b", extra.OnlyIn)
	assert.Equal(t, verdictNoChange, extra.Verdict)
	assert.Nil(t, extra.A)
	assert.Equal(t, int64(100), extra.B.N)
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, run([]string{"compare", unkeyedA, keyedB}, &out, &errOut))
	assert.Contains(t, out.String(), "\nextra: only in B\n")
	assert.Regexp(t, `\nmath: Welch's t \(unpaired, by rollout: a run's rows give no task index\); p [0-9.e-]+ \(adjusted [0-9.e-]+\); detectable ±0\.[0-9]{3}; causes: model\n`, out.String())

	// A directory of two runs of one benchmark: two rollouts of each task.
	dir := t.TempDir()
	for _, stem := range []string{"r1.jsonl", "r2.jsonl"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, stem), []byte(strings.Join(mainRows("math", base, true), "\n")+"\n"), 0o644))
	}
	_, r, _ = compareRun(t, dir, keyedB)
	assert.Equal(t, testPaired, r.Benchmarks["math"].Test)
	assert.Equal(t, int64(100), r.Benchmarks["math"].Pairs)
	assert.Equal(t, int64(200), r.Benchmarks["math"].A.N)
	assert.Equal(t, int64(100), r.Benchmarks["math"].A.Tasks)
	assert.InDelta(t, -0.3, *r.Benchmarks["math"].Delta, 1e-12)
}

// TestCompareBadInput: a file that cannot be read, a damaged summary JSON, a document of
// another kind and bad usage exit 2 and name the file (and line); damaged rows of a run are
// counted and do not stop it.
func TestCompareBadInput(t *testing.T) {
	good := writeRun(t, mainRows("math", binary(20, 10), true), nil)
	sum := summaryFile(t, good)
	data, err := os.ReadFile(sum)
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		return p
	}
	truncated := write("truncated.json", string(data[:len(data)/2]))
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.Contains(l, `"attempts"`) {
			lines[i] = regexp.MustCompile(`"attempts": \d+`).ReplaceAllString(l, `"attempts": "x"`)
			break
		}
	}
	badType := write("badtype.json", strings.Join(lines, "\n"))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	delete(doc["benchmarks"].(map[string]any)["math"].(map[string]any)["reward"].(map[string]any), "sd")
	old, _ := json.Marshal(doc)
	noSD := write("old.json", string(old))
	mathReward := func(d map[string]any) map[string]any {
		return d["benchmarks"].(map[string]any)["math"].(map[string]any)["reward"].(map[string]any)
	}
	require.NoError(t, json.Unmarshal(data, &doc))
	mathReward(doc)["tasks"] = 21
	manyTasks, _ := json.Marshal(doc)
	tooManyTasks := write("tasks.json", string(manyTasks))
	require.NoError(t, json.Unmarshal(data, &doc))
	mathReward(doc)["se_by_task"] = -0.1
	negSE, _ := json.Marshal(doc)
	negativeSE := write("se.json", string(negSE))
	other := write("compare.json", `{"schema": "gymrun.compare/v1", "benchmarks": {}}`)
	empty := write("empty.jsonl", "")
	missing := filepath.Join(dir, "missing.jsonl")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{good, missing}, missing},
		{[]string{truncated, good}, truncated + ":" + fmt.Sprint(strings.Count(string(data[:len(data)/2]), "\n")+1) + ": not a valid summary JSON"},
		{[]string{good, badType}, badType + ":"},
		{[]string{good, noSD}, noSD + `: benchmark "math": no reward.sd`},
		{[]string{good, tooManyTasks}, tooManyTasks + `: benchmark "math": reward.tasks must be between 0 and reward.n`},
		{[]string{negativeSE, good}, negativeSE + `: benchmark "math": a negative reward.sd or reward.se_by_task`},
		{[]string{other, good}, other + ": a gymrun.compare/v1 document"},
		{[]string{good, empty}, empty + ": no row read"},
		{[]string{good}, "usage:"},
		{[]string{"--bogus", good, good}, "bogus"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(append([]string{"compare"}, c.args...), &out, &errOut), "%q", c.args)
		assert.Contains(t, errOut.String(), c.want, "%q", c.args)
	}
	assert.Contains(t, badTypeLine(t, badType), `"attempts": "x"`)

	damaged := writeRun(t, append(mainRows("math", binary(20, 10), true), "not json", `{"reward":"high"}`), nil)
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"compare", good, damaged}, &out, &errOut))
	assert.Contains(t, errOut.String(), damaged+":21: row rejected (not_object)")
	assert.Contains(t, errOut.String(), damaged+":22: row rejected (wrong_type)")
	assert.Contains(t, out.String(), "verdict: no_change")
}

// badTypeLine is the line the error of a compare of the file names.
func badTypeLine(t *testing.T, path string) string {
	var out, errOut bytes.Buffer
	run([]string{"compare", path, path}, &out, &errOut)
	var line int
	_, err := fmt.Sscanf(strings.TrimPrefix(errOut.String(), "gymrun: "+path+":"), "%d", &line)
	require.NoError(t, err, errOut.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(string(data), "\n")[line-1]
}

// taskRows are main-output rows of benchmark name: reward[t][i] is task first+t's rollout i;
// rollouts false leaves the rollout index out.
func taskRows(name string, first int, rewards [][]float64, rollouts bool) []string {
	var out []string
	for t, rs := range rewards {
		for i, r := range rs {
			row := fmt.Sprintf(`{"_ng_environment_server":%q,"reward":%v,"_ng_task_index":%d`, name, r, first+t)
			if rollouts {
				row += fmt.Sprintf(`,"_ng_rollout_index":%d`, i)
			}
			out = append(out, row+"}")
		}
	}
	return out
}

// tasksOf is n tasks of k rollouts, rollout i of task t rewarded f(t, i).
func tasksOf(n, k int, f func(t, i int) float64) [][]float64 {
	out := make([][]float64, n)
	for t := range out {
		for i := range k {
			out[t] = append(out[t], f(t, i))
		}
	}
	return out
}

// TestCompareEdges: each edge gives a clear result: every reward equal (no spread: certain, and
// within [-1, 1]); one task (no test, said so); tasks in one run only (left out of the pairs, or
// unpaired when no task is shared); rewards outside [0, 1]; rows without a rollout index (paired
// by task all the same) or without a task index (by rollout); rewards that overflow (no test).
func TestCompareEdges(t *testing.T) {
	const name = "b"
	cmpRows := func(a, b []string) (int, CompareBench, string) {
		var out, errOut bytes.Buffer
		pa, pb := writeRun(t, a, nil), writeRun(t, b, nil)
		code, r, stderr := compareRun(t, pa, pb)
		require.NotEqual(t, 2, code, stderr)
		run([]string{"compare", pa, pb}, &out, &errOut)
		return code, r.Benchmarks[name], out.String()
	}
	ones := taskRows(name, 0, tasksOf(10, 2, func(int, int) float64 { return 1 }), true)
	zeros := taskRows(name, 0, tasksOf(10, 2, func(int, int) float64 { return 0 }), true)

	code, c, text := cmpRows(ones, ones)
	assert.Equal(t, 0, code)
	assert.Equal(t, testPaired, c.Test)
	assert.Equal(t, [2]float64{0, 0}, *c.CI95)
	assert.Equal(t, 1.0, *c.PValue)
	assert.Nil(t, c.MDE80, "no spread to plan with")
	assert.Equal(t, verdictNoChange, c.Verdict)
	assert.Contains(t, text, "every task moved alike (no spread)")

	code, c, _ = cmpRows(ones, zeros)
	assert.Equal(t, 1, code)
	assert.Equal(t, [2]float64{-1, -1}, *c.CI95)
	assert.Equal(t, verdictRegression, c.Verdict)

	// Pass/fail, a few tasks: the t interval is cut at -1.
	few := taskRows(name, 0, tasksOf(3, 1, func(t, _ int) float64 { return float64(min(t, 1)) }), true)
	_, c, _ = cmpRows(taskRows(name, 0, tasksOf(3, 1, func(int, int) float64 { return 1 }), true), few)
	assert.Equal(t, -1.0, c.CI95[0])
	assert.InDelta(t, -1.0/3, *c.Delta, 1e-12)

	// The summary's interval of a pass rate of 1 over 10 tasks: Wilson's at 10, within [0, 1].
	r, _ := summarize(t, writeRun(t, ones, nil))
	w := r.Benchmarks[name].Reward
	assert.Equal(t, int64(10), w.Tasks)
	assert.Equal(t, 0.0, *w.SEByTask)
	assert.Equal(t, wilsonEff(1, 10), *w.CI95ByTask)
	assert.Equal(t, 1.0, w.CI95ByTask[1])

	oneTask := taskRows(name, 0, tasksOf(1, 5, func(_, i int) float64 { return float64(i % 2) }), true)
	code, c, text = cmpRows(oneTask, ones)
	assert.Equal(t, 0, code)
	assert.Equal(t, testNone, c.Test)
	assert.Equal(t, reasonOneTask, c.Reason)
	assert.Nil(t, c.CI95)
	assert.Nil(t, c.PValue)
	assert.Contains(t, text, "\nb: one task: no spread between tasks to judge by, no test; causes: denominator\n")

	// Tasks 0-19 in A, 10-29 in B: paired over 10, the others left out and said so.
	f := func(t, i int) float64 { return float64((t + i) % 2) }
	code, c, text = cmpRows(taskRows(name, 0, tasksOf(20, 2, f), true), taskRows(name, 10, tasksOf(20, 2, f), true))
	assert.Equal(t, 0, code)
	assert.Equal(t, testPaired, c.Test)
	assert.Equal(t, int64(10), c.Pairs)
	assert.Contains(t, text, "paired over 10 tasks (left out: 10 tasks of A and 10 of B without a reward in the other run)")
	// No task in common: unpaired, each run clustered by task.
	_, c, _ = cmpRows(taskRows(name, 0, tasksOf(20, 2, f), true), taskRows(name, 20, tasksOf(20, 2, f), true))
	assert.Equal(t, testClustered, c.Test)
	assert.Zero(t, c.Pairs)

	// Rewards outside [0, 1]: a change of 1.5 in [-2, 3], its interval not cut at ±1.
	wide := func(shift float64) func(t, i int) float64 {
		return func(t, i int) float64 { return -2 + float64((3*t+i)%6) + shift }
	}
	code, c, _ = cmpRows(taskRows(name, 0, tasksOf(30, 2, wide(0)), true), taskRows(name, 0, tasksOf(30, 2, wide(1.5)), true))
	assert.Equal(t, 0, code)
	assert.Equal(t, verdictImprovement, c.Verdict)
	assert.InDelta(t, 1.5, *c.Delta, 1e-12)
	assert.Greater(t, c.CI95[1], 1.0)

	// No rollout index: paired by task as with them.
	_, c, _ = cmpRows(taskRows(name, 0, tasksOf(10, 3, f), false), taskRows(name, 0, tasksOf(10, 3, f), true))
	assert.Equal(t, testPaired, c.Test)
	assert.Equal(t, int64(10), c.Pairs)
	// No task index: by rollout, said so.
	_, c, text = cmpRows(mainRows(name, binary(20, 10), false), taskRows(name, 0, tasksOf(10, 2, f), true))
	assert.Equal(t, testWelch, c.Test)
	assert.Zero(t, c.A.Tasks)
	assert.Contains(t, text, "by rollout: a run's rows give no task index")

	// Rewards that overflow a spread: no test (not_finite), said on standard error with the
	// file and benchmark; never a NaN, never an error.
	huge := taskRows(name, 0, tasksOf(3, 2, func(_, i int) float64 { return []float64{1e308, -1e308}[i] }), true)
	pa := writeRun(t, huge, nil)
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"compare", "--json", pa, writeRun(t, ones, nil)}, &out, &errOut), errOut.String())
	assert.Contains(t, errOut.String(), pa+`: benchmark "b": its rewards (up to 1e+308, in this file) overflow a sum or a spread`)
	var cr CompareReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &cr))
	assert.Equal(t, testNone, cr.Benchmarks[name].Test)
	assert.Equal(t, reasonNotFinite, cr.Benchmarks[name].Reason)
	assert.Nil(t, cr.Benchmarks[name].A.Mean)
}

// TestCompareOptions: --correction none judges each benchmark at the level alone; --level moves
// the line; a bad option is a usage error that says what is allowed.
func TestCompareOptions(t *testing.T) {
	// Three benchmarks, one with a change whose raw p is between 0.05/3 and 0.05.
	var a, b []string
	for i, drop := range []int{0, 0, 15} {
		name := fmt.Sprintf("b%d", i)
		a = append(a, mainRows(name, binary(100, 60), true)...)
		b = append(b, mainRows(name, binary(100, 60-drop), true)...)
	}
	pa, pb := writeRun(t, a, nil), writeRun(t, b, nil)
	judge := func(args ...string) (int, CompareReport) {
		var out, errOut bytes.Buffer
		code := run(append(append([]string{"compare", "--json"}, args...), pa, pb), &out, &errOut)
		var r CompareReport
		require.NoError(t, json.Unmarshal(out.Bytes(), &r), errOut.String())
		return code, r
	}
	code, holmR := judge()
	c := holmR.Benchmarks["b2"]
	require.NotNil(t, c.PValue)
	require.Greater(t, *c.PValue, 0.05/3, "the case needs a p-value between the levels")
	require.Less(t, *c.PValue, 0.05)
	assert.Equal(t, 0, code)
	assert.Equal(t, correctionHolm, holmR.Correction)
	assert.Equal(t, 0.05, holmR.Level)
	assert.Equal(t, 3, holmR.Family)
	assert.Equal(t, verdictNoChange, c.Verdict)
	assert.Less(t, c.CI95[1], 0.0, "the raw interval excludes 0; the family's verdict does not follow it")

	code, noneR := judge("--correction", "none")
	assert.Equal(t, 1, code)
	assert.Equal(t, verdictRegression, noneR.Benchmarks["b2"].Verdict)
	assert.Equal(t, *noneR.Benchmarks["b2"].PValue, *noneR.Benchmarks["b2"].PAdj)
	assert.Less(t, *noneR.Benchmarks["b2"].MDE80, *c.MDE80, "one test at 0.05 sees less than one of three")

	code, _ = judge("--level", "0.2")
	assert.Equal(t, 1, code)

	for _, args := range [][]string{{"--correction", "bonferroni"}, {"--level", "0"}, {"--level", "1"}, {"--level", "NaN"}} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(append(append([]string{"compare"}, args...), pa, pb), &out, &errOut), "%q", args)
		assert.Contains(t, errOut.String(), args[0], "%q", args)
	}
}
