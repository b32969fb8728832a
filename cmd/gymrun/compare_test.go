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
