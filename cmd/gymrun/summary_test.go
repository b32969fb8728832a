package main

import (
	"bytes"
	stdcontext "context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/rollouts"
	"github.com/gym-telemetry/otelcol-gym/internal/rollouts/rolloutstest"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// summarize runs `gymrun summary --json` on paths and returns the report and standard error.
func summarize(t *testing.T, paths ...string) (Report, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(append([]string{"summary", "--json"}, paths...), &out, &errOut), errOut.String())
	var r Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	return r, errOut.String()
}

// collect runs the receiver's rollouts source over the main outputs include matches, into the
// aggregator, and returns what the aggregator exports and the rows the source counted.
func collect(t *testing.T, include string) (pmetric.Metrics, *followtest.Counts) {
	t.Helper()
	reg, err := normalize.NewRegistry(nil, nil, nil)
	require.NoError(t, err)
	agg := aggregate.NewAggregator(aggregate.AggregatorConfig{CardinalityLimit: 100000, ExpireAfter: time.Hour, Registry: reg})
	got := followtest.NewCounts()
	src := rollouts.NewSource(agg.NewSink, rollouts.SourceOptions{
		Include: []string{include}, StartAtBeginning: true, PollInterval: time.Hour,
	}, got.Record, zap.NewNop())
	require.NoError(t, src.Start(stdcontext.Background())) // the first poll reads the files
	t.Cleanup(func() { _ = src.Shutdown(stdcontext.Background()) })
	return agg.Collect(aggregate.Scope{}), got
}

// attr is a point's attribute, absent when the series has none.
func attr(m map[string]any, k string) string {
	if v, ok := m[k].(string); ok {
		return v
	}
	return absent
}

// exported sums what the aggregator exports into the counts the summary gives, by benchmark.
func exported(md pmetric.Metrics) map[string]float64 {
	out := map[string]float64{}
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			switch m.Type() {
			case pmetric.MetricTypeSum:
				for k := range m.Sum().DataPoints().Len() {
					p := m.Sum().DataPoints().At(k)
					a, v := p.Attributes().AsRaw(), float64(p.IntValue())
					if v == 0 {
						continue // as the summary, which has no series
					}
					b := attr(a, "nemo.gym.rollout.dispatch.name")
					switch m.Name() {
					case "gym.rollout.completed_total":
						out[b+"|attempts"] += v
						out[b+"|"+attr(a, "nemo.gym.rollout.outcome")] += v
						if attr(a, "nemo.gym.rollout.outcome") == "failed" {
							out[b+"|class="+attr(a, "nemo.gym.failure_class")] += v
							out[b+"|kind="+attr(a, "nemo.gym.failure_kind")] += v
						}
					case "gym.rollout.rewarded_total":
						if a["nemo.gym.rollout.masked"] == false {
							out[b+"|rewarded"] += v
							if attr(a, "nemo.gym.rollout.reward.range") == "full" {
								out[b+"|passes"] += v
							}
						}
					case "gym.rollout.finish_total":
						out[b+"|responses"] += v
						if truncated[attr(a, "nemo.gym.rollout.finish_reason")] {
							out[b+"|truncated"] += v
						}
					}
				}
			case pmetric.MetricTypeHistogram:
				for k := range m.Histogram().DataPoints().Len() {
					p := m.Histogram().DataPoints().At(k)
					a := p.Attributes().AsRaw()
					if p.Count() == 0 {
						continue
					}
					b := attr(a, "nemo.gym.rollout.dispatch.name")
					switch m.Name() {
					case "gym.rollout.tokens":
						out[b+"|tokens|"+attr(a, "gen_ai.token.type")+"|"+attr(a, "gen_ai.response.model")] += p.Sum()
					case "gym.rollout.tool_calls":
						out[b+"|tool_calls"] += p.Sum()
						out[b+"|tool_call_rows"] += float64(p.Count())
					case "gym.rollout.duration_ms":
						out["durations"] += float64(p.Count()) // the instrument names no dispatch
					}
				}
			}
		}
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k) // a series at 0 (a response giving 0 cached tokens): the summary lists none
		}
	}
	return out
}

// summarized is the same counts from the summary, nothing at 0 (the aggregator exports no
// series that never counted).
func summarized(r Report) map[string]float64 {
	out := map[string]float64{}
	add := func(k string, v float64) {
		if v != 0 {
			out[k] += v
		}
	}
	for b, s := range r.Benchmarks {
		add(b+"|attempts", float64(s.Attempts))
		add(b+"|scored", float64(s.Scored))
		add(b+"|failed", float64(s.Failed))
		for c, n := range s.FailedByClass {
			add(b+"|class="+c, float64(n))
		}
		for k, n := range s.FailedByKind {
			add(b+"|kind="+k, float64(n))
		}
		add(b+"|rewarded", float64(s.Reward.N+s.Reward.Infinite))
		if s.PassRate != nil {
			add(b+"|passes", math.Round(*s.PassRate*float64(s.Reward.N)))
		}
		add(b+"|responses", float64(s.Responses))
		add(b+"|truncated", float64(s.Truncated))
		for typ, models := range s.Tokens {
			for m, n := range models {
				add(b+"|tokens|"+typ+"|"+m, float64(n))
			}
		}
		add(b+"|tool_calls", float64(s.ToolCalls.Sum))
		add(b+"|tool_call_rows", float64(s.ToolCalls.Rows))
		if s.DurationMS != nil {
			add("durations", float64(s.DurationMS.N))
		}
	}
	return out
}

// binaryOnly drops the passes of benchmarks whose rewards are not all 0/1: the summary gives
// no pass rate for them.
func binaryOnly(exp map[string]float64, r Report) {
	for b, s := range r.Benchmarks {
		if s.PassRate == nil {
			delete(exp, b+"|passes")
		}
	}
}

// TestSummaryAgreesWithCollector: on the repository's run files, the summary counts what the
// collector's aggregator exports from the same files.
func TestSummaryAgreesWithCollector(t *testing.T) {
	for _, run := range []string{"run1", "run2"} {
		t.Run(run, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "rollouts", run)
			md, _ := collect(t, filepath.Join(dir, "*.jsonl"))
			r, _ := summarize(t, dir)
			exp := exported(md)
			binaryOnly(exp, r)
			require.Greater(t, len(exp), 5, "the files give counts to compare")
			assert.Equal(t, exp, summarized(r))
		})
	}
}

// TestSummaryGymExamples: on NeMo Gym's own example rollouts, the summary counts what the
// aggregator exports, and rejects the placeholder lines the source rejects. A few of the files
// end without a newline: the summary reads their last row (the file is finished), which the
// collector applies once the newline is written.
func TestSummaryGymExamples(t *testing.T) {
	dir, paths := rolloutstest.UnpackExamples(t, filepath.Join("..", "..", "testdata", "gym-examples"))
	dirs, err := filepath.Glob(filepath.Join(dir, "*", "*", "data"))
	require.NoError(t, err)
	unterminated, _ := summarize(t, dirs...)
	ended := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			require.NoError(t, os.WriteFile(p, append(data, '\n'), 0o644))
			ended++
		}
	}
	require.Positive(t, ended, "some example files end without a newline")

	md, got := collect(t, filepath.Join(dir, "*", "*", "data", "*.jsonl"))
	r, stderr := summarize(t, dirs...)
	assert.Equal(t, r, unterminated, "the last row without its newline is read")
	exp := exported(md)
	binaryOnly(exp, r)
	assert.Equal(t, exp, summarized(r))

	var rows, rejected int64
	byReason := map[string]int64{}
	for _, f := range r.Files {
		rows += f.Rows
		rejected += f.Rejected
		for k, v := range f.ByReason {
			byReason[k] += v
		}
	}
	assert.Equal(t, got.Accepted, rows)
	for k, v := range got.Rejected {
		if v == 0 {
			delete(got.Rejected, k)
		}
	}
	assert.Equal(t, got.Rejected, byReason)
	assert.Equal(t, rejected, int64(strings.Count(stderr, "row rejected")), "one line per rejected row")
}

// writeRun writes a generated run: main output rows and sidecar rows, with damaged rows among
// them.
func writeRun(t *testing.T, main, failures []string) string {
	t.Helper()
	dir := t.TempDir()
	stem := filepath.Join(dir, "gen.jsonl")
	require.NoError(t, os.WriteFile(stem, []byte(strings.Join(main, "\n")+"\n"), 0o644))
	require.NoError(t, os.WriteFile(rollouts.FailuresPath(stem), []byte(strings.Join(failures, "\n")+"\n"), 0o644))
	return stem
}

// TestSummaryGeneratedRun: a generated run with damaged rows: each is counted with its file
// and line, the rows around it are counted, and the summary agrees with the aggregator.
func TestSummaryGeneratedRun(t *testing.T) {
	var main []string
	var sum float64
	var n, nan, missing, masked int64
	for i := range 40 {
		row := map[string]any{"_ng_environment_server": fmt.Sprintf("bench%d", i%3), "_ng_task_index": i,
			"ng_perf": map[string]any{"num_turns": 2, "num_tool_calls": i % 4, "total_latency_ms": 100 * (i + 1)},
			"response": map[string]any{"model": "policy", "status": "completed", "output": []any{map[string]any{"type": "function_call"}},
				"usage": map[string]any{"input_tokens": 10 + i, "output_tokens": 5}}}
		switch i % 10 {
		case 7:
			row["mask_sample"], row["reward"] = true, 1.0
			masked++
		case 8:
			missing++
		case 9:
			nan++
		default:
			row["reward"] = float64(i % 2)
			sum += float64(i % 2)
			n++
		}
		if i == 5 {
			row["response"].(map[string]any)["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
		}
		b, err := json.Marshal(row)
		require.NoError(t, err)
		line := string(b)
		if i%10 == 9 {
			line = strings.Replace(line, "{", `{"reward":NaN,`, 1) // as Python's json writes it
		}
		main = append(main, line)
		if i == 20 {
			main = append(main, `not json`, `{"reward": "high", "_ng_environment_server": "bench0"}`)
		}
	}
	failures := []string{
		`{"_ng_environment_server":"bench0","_ng_failure_class":"judge_failed","failure_kind":"judge_failed"}`,
		`{"_ng_environment_server":"bench0","_ng_failure_class":"agent_run_error","_ng_failure_kind":"agent_timeout"}`,
		`[1]`,
		`{"_ng_environment_server":"bench1","_ng_failure_class":"timeout"}`,
	}
	stem := writeRun(t, main, failures)
	md, got := collect(t, stem)
	r, stderr := summarize(t, stem)

	exp := exported(md)
	binaryOnly(exp, r)
	assert.Equal(t, exp, summarized(r))

	require.Len(t, r.Files, 2)
	assert.Equal(t, FileReport{Path: stem, Kind: "main", Rows: 40, Rejected: 2, ByReason: map[string]int64{rollouts.ReasonNotObject: 1, rollouts.ReasonWrongType: 1}}, r.Files[0])
	assert.Equal(t, FileReport{Path: rollouts.FailuresPath(stem), Kind: "failures", Rows: 3, Rejected: 1, ByReason: map[string]int64{rollouts.ReasonNotObject: 1}}, r.Files[1])
	assert.Equal(t, got.Accepted, int64(43))
	assert.Contains(t, stderr, stem+":22: row rejected (not_object)")
	assert.Contains(t, stderr, stem+":23: row rejected (wrong_type)")
	assert.Contains(t, stderr, rollouts.FailuresPath(stem)+":3: row rejected (not_object)")

	var gotN, gotNaN, gotMissing, gotMasked, attempts int64
	var gotSum float64
	for name, b := range r.Benchmarks {
		assert.Equal(t, b.Scored, b.Reward.N+b.Masked+b.Reward.NaN+b.Reward.Missing+b.Reward.Infinite, "%s: every scored row in one place", name)
		gotN += b.Reward.N
		gotNaN += b.Reward.NaN
		gotMissing += b.Reward.Missing
		gotMasked += b.Masked
		gotSum += *b.Reward.Sum
		attempts += b.Attempts
	}
	assert.Equal(t, []any{n, nan, missing, masked, sum, int64(43)}, []any{gotN, gotNaN, gotMissing, gotMasked, gotSum, attempts})
	b0 := r.Benchmarks["bench0"]
	assert.Equal(t, map[string]int64{"judge_failed": 1, "agent_run_error": 1}, b0.FailedByClass)
	assert.Equal(t, int64(1), r.Benchmarks["bench2"].Truncated, "row 5 was cut at max_output_tokens")
	require.NotNil(t, b0.PassRate)
	require.NotNil(t, b0.Reward.CI95)
	assert.Less(t, b0.Reward.CI95[0], *b0.Reward.Mean)
	assert.Greater(t, b0.Reward.CI95[1], *b0.Reward.Mean)
}

// TestSummaryJSONSchema: the document names its schema and has its keys.
func TestSummaryJSONSchema(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"summary", "--json", filepath.Join("..", "..", "testdata", "rollouts", "run1", "eval.jsonl")}, &out, &errOut))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	assert.Equal(t, "gymrun.summary/v1", doc["schema"])
	benches := doc["benchmarks"].(map[string]any)
	require.NotEmpty(t, benches)
	for name, b := range benches {
		keys := []string{}
		for k := range b.(map[string]any) {
			keys = append(keys, k)
		}
		assert.ElementsMatch(t, []string{"attempts", "scored", "failed", "failed_by_class", "failed_by_kind", "failed_by_group", "masked", "reward",
			"pass_rate", "responses", "truncated", "tokens", "tool_calls", "duration_ms", "model_calls", "sandboxes", "evidence"}, keys, name)
		for k, want := range map[string][]string{
			"model_calls": {"n", "errors", "duration_ms", "ttft_ms"},
			"tool_calls":  {"rows", "sum", "by_tool"},
			"evidence":    {"rows", "with_trajectory", "gaps", "problems"},
		} {
			obj := b.(map[string]any)[k].(map[string]any)
			for _, w := range want {
				assert.Contains(t, obj, w, name+"."+k)
			}
		}
		reward := b.(map[string]any)["reward"].(map[string]any)
		for _, k := range []string{"n", "mean", "sd", "ci95", "nan", "missing", "infinite", "sum", "histogram"} {
			assert.Contains(t, reward, k, name)
		}
	}
}

// TestSummaryUsage: bad usage and a file that cannot be read exit 2; the text form is a table.
func TestSummaryUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"summary"}, {"nope"}, {"summary", "--bogus", "x"}, {"summary", filepath.Join(t.TempDir(), "missing.jsonl")}, {"summary", t.TempDir()}} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(args, &out, &errOut), "%q", args)
		assert.NotEmpty(t, errOut.String(), "%q", args)
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"summary", filepath.Join("..", "..", "testdata", "rollouts", "run1")}, &out, &errOut))
	assert.Contains(t, out.String(), "benchmark")
	assert.Contains(t, out.String(), "math_with_judge")
}

// TestSummaryOut: --out writes the same document to a file, whole, creating its directory;
// a file that cannot be written is an error, and nothing is left behind.
func TestSummaryOut(t *testing.T) {
	run1 := filepath.Join("..", "..", "testdata", "rollouts", "run1")
	var want, out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"summary", "--json", run1}, &want, &errOut))
	dir := filepath.Join(t.TempDir(), "job", "otel")
	path := filepath.Join(dir, "summary.json")
	require.Equal(t, 0, run([]string{"summary", "--json", "--out", path, run1}, &out, &errOut), errOut.String())
	assert.Empty(t, out.String(), "nothing on standard output")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, want.String(), string(got))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")

	blocker := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"summary", "--json", "--out", filepath.Join(blocker, "summary.json"), run1}, &out, &errOut))
	assert.Contains(t, errOut.String(), "a-file")
}

// TestTruncatedIsTheRulesSet: the finish reasons gymrun counts as truncated (the schema's
// registries.truncated_finish_reasons) are those of the recording rule behind
// GymResponsesTruncated, so the summary and the alert cannot drift.
func TestTruncatedIsTheRulesSet(t *testing.T) {
	rules, err := os.ReadFile("../../deploy/prometheus/gym.rules.yaml")
	require.NoError(t, err)
	m := regexp.MustCompile(`nemo_gym_rollout_finish_reason=~"([^"]+)"`).FindSubmatch(rules)
	require.NotNil(t, m, "the truncation rule's finish reasons")
	assert.ElementsMatch(t, strings.Split(string(m[1]), "|"), schema.TruncatedFinishReasons)
	assert.Len(t, truncated, len(schema.TruncatedFinishReasons))
}

// TestSummaryByTask: tasks that pass or fail whole (every rollout alike) make the interval by
// task wider than the one by rollout, which takes each rollout for independent evidence: with 4
// rollouts a task, about twice as wide. The text form shows the one by task, and marks the one
// by rollout when a row gives no task index.
func TestSummaryByTask(t *testing.T) {
	var rows []string
	for task := range 40 {
		for i := range 4 {
			rows = append(rows, fmt.Sprintf(`{"_ng_environment_server":"whole","reward":%d,"_ng_task_index":%d,"_ng_rollout_index":%d}`, task%2, task, i))
		}
	}
	stem := writeRun(t, append(rows, mainRows("unindexed", binary(20, 10), false)...), nil)
	r, _ := summarize(t, stem)
	w := r.Benchmarks["whole"].Reward
	assert.Equal(t, int64(40), w.Tasks)
	require.NotNil(t, w.CI95ByTask)
	byTask, byRollout := w.CI95ByTask[1]-w.CI95ByTask[0], w.CI95[1]-w.CI95[0]
	assert.InDelta(t, 2, byTask/byRollout, 0.15, "%v against %v", *w.CI95ByTask, *w.CI95)
	// The standard error of the 40 task means, 0 or 1: sqrt(0.25·40/39/40).
	assert.InDelta(t, math.Sqrt(0.25/39), *w.SEByTask, 1e-12)
	assert.GreaterOrEqual(t, w.CI95ByTask[0], 0.0)
	u := r.Benchmarks["unindexed"].Reward
	assert.Zero(t, u.Tasks)
	assert.Nil(t, u.CI95ByTask)
	assert.Nil(t, u.SEByTask)

	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"summary", stem}, &out, &errOut))
	assert.Contains(t, out.String(), fmt.Sprintf("[%.4f, %.4f] ", w.CI95ByTask[0], w.CI95ByTask[1]))
	assert.Contains(t, out.String(), fmt.Sprintf("[%.4f, %.4f]*", u.CI95[0], u.CI95[1]))
	assert.Contains(t, out.String(), "\n*: by rollout, not by task (a row gives no task index)\n")
}
