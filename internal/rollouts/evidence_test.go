package rollouts

import (
	stdcontext "context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
)

// evidenceGolden is testdata/evidence/eval.jsonl (gen.py: rows shaped like NeMo Gym's
// TrajectoryRecord and AgentObservationBundle; row 0 validates against Gym's own models, row 2
// is broken on purpose).
const evidenceGolden = "testdata/evidence/eval.jsonl"

// evidenceCounts flattens the gym.evidence.* series: a counter's value, a histogram's count
// and sum, by instrument and attributes (sorted).
func evidenceCounts(md pmetric.Metrics) map[string]float64 {
	out := map[string]float64{}
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			name := strings.TrimPrefix(m.Name(), "gym.evidence.")
			if name == m.Name() {
				continue
			}
			attrs := func(raw map[string]any) string {
				var kv []string
				for k, v := range raw {
					kv = append(kv, strings.TrimPrefix(k, "nemo.gym.")+"="+fmt.Sprint(v))
				}
				sort.Strings(kv)
				return strings.Join(kv, ",")
			}
			switch m.Type() {
			case pmetric.MetricTypeSum:
				for k := range m.Sum().DataPoints().Len() {
					p := m.Sum().DataPoints().At(k)
					out[name+"|"+attrs(p.Attributes().AsRaw())] += float64(p.IntValue())
				}
			case pmetric.MetricTypeHistogram:
				for k := range m.Histogram().DataPoints().Len() {
					p := m.Histogram().DataPoints().At(k)
					a := attrs(p.Attributes().AsRaw())
					out[name+"|"+a+"|count"] += float64(p.Count())
					out[name+"|"+a+"|sum"] += p.Sum()
				}
			}
		}
	}
	return out
}

// evidenceWant is what the golden rows say, worked out by hand from gen.py.
var evidenceWant = map[string]float64{
	"rows_total|evidence.trajectory=true":  2,
	"rows_total|evidence.trajectory=false": 1,

	// Row 0: three calls; row 2: one call whose duration is a string and whose timestamps are
	// out of order (no duration), whose prompt_tokens is negative (left out).
	"model_calls_total|gen_ai.response.model=gpt-oss-120b,model_call.dialect=responses,model_call.finish_reason=tool_calls,model_call.outcome=ok,model_call.status_class=2xx": 1,
	"model_calls_total|gen_ai.response.model=gpt-oss-120b,model_call.dialect=responses,model_call.finish_reason=stop,model_call.outcome=ok,model_call.status_class=2xx":       1,
	"model_calls_total|gen_ai.response.model=gpt-oss-120b,model_call.dialect=chat,model_call.outcome=rate_limit,model_call.status_class=4xx":                                  1,
	"model_calls_total|gen_ai.response.model=m2,model_call.dialect=messages,model_call.finish_reason=end_turn,model_call.outcome=ok,model_call.status_class=2xx":              1,
	"model_call.duration_ms|gen_ai.response.model=gpt-oss-120b,model_call.dialect=responses,model_call.outcome=ok|count":                                                      2,
	"model_call.duration_ms|gen_ai.response.model=gpt-oss-120b,model_call.dialect=responses,model_call.outcome=ok|sum":                                                        3700,
	"model_call.duration_ms|gen_ai.response.model=gpt-oss-120b,model_call.dialect=chat,model_call.outcome=rate_limit|count":                                                   1,
	"model_call.duration_ms|gen_ai.response.model=gpt-oss-120b,model_call.dialect=chat,model_call.outcome=rate_limit|sum":                                                     40,
	"model_call.ttft_ms|gen_ai.response.model=gpt-oss-120b,model_call.dialect=responses|count":                                                                                1,
	"model_call.ttft_ms|gen_ai.response.model=gpt-oss-120b,model_call.dialect=responses|sum":                                                                                  300,
	"model_call.tokens|gen_ai.response.model=gpt-oss-120b,gen_ai.token.type=input,model_call.dialect=responses|count":                                                         2,
	"model_call.tokens|gen_ai.response.model=gpt-oss-120b,gen_ai.token.type=input,model_call.dialect=responses|sum":                                                           2500,
	"model_call.tokens|gen_ai.response.model=gpt-oss-120b,gen_ai.token.type=output,model_call.dialect=responses|count":                                                        2,
	"model_call.tokens|gen_ai.response.model=gpt-oss-120b,gen_ai.token.type=output,model_call.dialect=responses|sum":                                                          300,
	"model_call.tokens|gen_ai.response.model=gpt-oss-120b,gen_ai.token.type=reasoning,model_call.dialect=responses|count":                                                     1,
	"model_call.tokens|gen_ai.response.model=gpt-oss-120b,gen_ai.token.type=reasoning,model_call.dialect=responses|sum":                                                       50,
	"model_call.tokens|gen_ai.response.model=gpt-oss-120b,gen_ai.token.type=cached_input,model_call.dialect=responses|count":                                                  1,
	"model_call.tokens|gen_ai.response.model=gpt-oss-120b,gen_ai.token.type=cached_input,model_call.dialect=responses|sum":                                                    512,
	"model_call.tokens|gen_ai.response.model=m2,gen_ai.token.type=output,model_call.dialect=messages|count":                                                                   1,
	"model_call.tokens|gen_ai.response.model=m2,gen_ai.token.type=output,model_call.dialect=messages|sum":                                                                     7,

	// tc-0 is in both objects: one. tc-1 has no duration_ms: its timestamps give 2 s. Row 2's
	// tool call has no tool_call_id: left out.
	"tool_calls_total|tool.name=bash,tool.status=completed,tool.timing_source=executor":    1,
	"tool_calls_total|tool.name=spawn_agent,tool.status=failed,tool.timing_source=harness": 1,
	"tool_call.duration_ms|tool.name=bash,tool.status=completed|count":                     1,
	"tool_call.duration_ms|tool.name=bash,tool.status=completed|sum":                       1500,
	"tool_call.duration_ms|tool.name=spawn_agent,tool.status=failed|count":                 1,
	"tool_call.duration_ms|tool.name=spawn_agent,tool.status=failed|sum":                   2000,
	"agent_invocations_total|agent.invocation.status=completed,agent.subagent=false":       1,
	"agent_invocations_total|agent.invocation.status=failed,agent.subagent=true":           1,
	"agent_invocations_total|agent.invocation.status=completed,agent.subagent=true":        2, // row 2's a and b (a cycle: still invocations)
	"sandboxes_total|sandbox.outcome=completed,sandbox.provider=docker,sandbox.role=agent": 1,
	"sandboxes_total|sandbox.outcome=oom,sandbox.provider=docker,sandbox.role=verifier":    1,
	"sandbox.wall_time_s|sandbox.provider=docker,sandbox.role=agent|count":                 1,
	"sandbox.wall_time_s|sandbox.provider=docker,sandbox.role=agent|sum":                   42.5,
	"sandbox.wall_time_s|sandbox.provider=docker,sandbox.role=verifier|count":              1,
	"sandbox.wall_time_s|sandbox.provider=docker,sandbox.role=verifier|sum":                3,
	"sandbox.cpu_time_s|sandbox.provider=docker,sandbox.role=agent|count":                  1,
	"sandbox.cpu_time_s|sandbox.provider=docker,sandbox.role=agent|sum":                    12.25,
	"sandbox.peak_memory_mib|sandbox.provider=docker,sandbox.role=agent|count":             1,
	"sandbox.peak_memory_mib|sandbox.provider=docker,sandbox.role=agent|sum":               900,
	"sandbox.peak_memory_mib|sandbox.provider=docker,sandbox.role=verifier|count":          1,
	"sandbox.peak_memory_mib|sandbox.provider=docker,sandbox.role=verifier|sum":            4096,
	"compactions_total|compaction.outcome=completed":                                       1,
	"compaction.tokens|compaction.outcome=completed,compaction.tokens.point=before|count":  1,
	"compaction.tokens|compaction.outcome=completed,compaction.tokens.point=before|sum":    120000,
	"compaction.tokens|compaction.outcome=completed,compaction.tokens.point=after|count":   1,
	"compaction.tokens|compaction.outcome=completed,compaction.tokens.point=after|sum":     30000,
	"gaps_total|evidence.gap.code=model_call_reference_unmatched":                          1, // in both objects: one
	"gaps_total|evidence.gap.code=other":                                                   1,

	// Row 2's problems; its completed and rewarded counts stand (TestEvidenceBadInput).
	"problems_total|evidence.problem=not_object":     2, // a model call that is a string; ng_agent_observations a list
	"problems_total|evidence.problem=wrong_type":     1, // duration_ms "fast"
	"problems_total|evidence.problem=out_of_range":   1, // prompt_tokens -5
	"problems_total|evidence.problem=missing_id":     2, // a tool call without tool_call_id, an invocation without id
	"problems_total|evidence.problem=duplicate_id":   1, // invocation a twice
	"problems_total|evidence.problem=parent_cycle":   1, // a -> b -> a
	"problems_total|evidence.problem=timestamp_skew": 1, // completed_at before started_at
}

// TestEvidenceGolden: the rows' evidence through the rollouts source and the aggregator gives
// exactly the series worked out from the rows.
func TestEvidenceGolden(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(evidenceGolden)
	require.NoError(t, err)
	followtest.AppendFile(t, filepath.Join(dir, "eval.jsonl"), string(data))
	agg := newTestAggregator(t)
	_, got := newTestSource(t, agg, filepath.Join(dir, "*.jsonl"), true, nil, 0)
	assert.Equal(t, int64(3), got.Accepted, "every row is applied, the broken evidence's too")
	assert.Equal(t, evidenceWant, evidenceCounts(agg.Collect(aggregate.Scope{})))
}

// TestEvidenceNotCountedTwiceAcrossRestart: the evidence follows the rows' offsets. A row
// being written at shutdown counts after the restart, once; the rows read before count in the
// first collector only.
func TestEvidenceNotCountedTwiceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "eval.jsonl")
	data, err := os.ReadFile(evidenceGolden)
	require.NoError(t, err)
	row := strings.SplitAfter(string(data), "\n")[0]
	followtest.AppendFile(t, out, row+row[:len(row)/2])
	store := &followtest.MemStore{}
	agg := newTestAggregator(t)
	rt, _ := newTestSource(t, agg, filepath.Join(dir, "*.jsonl"), true, store, 0)
	require.NoError(t, rt.Shutdown(stdcontext.Background()))

	followtest.AppendFile(t, out, row[len(row)/2:])
	agg2 := newTestAggregator(t)
	newTestSource(t, agg2, filepath.Join(dir, "*.jsonl"), false, store, 0)
	for _, a := range []*aggregate.Aggregator{agg, agg2} {
		got := evidenceCounts(a.Collect(aggregate.Scope{}))
		assert.Equal(t, 1.0, got["rows_total|evidence.trajectory=true"])
		assert.Equal(t, 1.0, got["tool_calls_total|tool.name=bash,tool.status=completed,tool.timing_source=executor"])
		assert.Equal(t, 1.0, got["sandboxes_total|sandbox.outcome=oom,sandbox.provider=docker,sandbox.role=verifier"])
		assert.Equal(t, 1.0, got["gaps_total|evidence.gap.code=model_call_reference_unmatched"])
	}
}

// TestEvidenceBadInputWarns: a row whose evidence is broken is applied (its rollout counts),
// its problems are counted and the first is named in a warning with its file and line.
func TestEvidenceBadInputWarns(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "eval.jsonl")
	data, err := os.ReadFile(evidenceGolden)
	require.NoError(t, err)
	followtest.AppendFile(t, out, string(data))
	core, logs := observer.New(zap.WarnLevel)
	agg := newTestAggregator(t)
	got := followtest.NewCounts()
	rt := NewSource(agg.NewSink, SourceOptions{
		Include: []string{filepath.Join(dir, "*.jsonl")}, StartAtBeginning: true, PollInterval: time.Hour,
	}, got.Record, zap.New(core))
	require.NoError(t, rt.Start(stdcontext.Background()))
	t.Cleanup(func() { _ = rt.Shutdown(stdcontext.Background()) })

	entries := logs.FilterMessageSnippet("rollout evidence has problems").All()
	require.Len(t, entries, 1, "one row has problems")
	f := entries[0].ContextMap()
	assert.Equal(t, out, f["path"])
	assert.Equal(t, int64(3), f["line"])
	assert.Equal(t, "duplicate_id", f["problem"], "the first in the row")
	assert.Equal(t, int64(9), f["problems"])
	assert.Equal(t, "ng_trajectory.invocations: a duplicate id (counted once)", f["error"])
	assert.Equal(t, int64(3), got.Accepted)
	assert.Equal(t, int64(3), rolloutCounts(agg.Collect(aggregate.Scope{}))["eval.jsonl|run-ev|completed_total|dispatch.name=swe,outcome=scored"], "the broken row's rollout counts")
}

// TestEvidencePollAllocatesNothingPerRow: rows with their evidence allocate nothing per row in
// steady state, as rows without do: a poll of 500 rows allocates what a poll of 10 does.
func TestEvidencePollAllocatesNothingPerRow(t *testing.T) {
	data, err := os.ReadFile(evidenceGolden)
	require.NoError(t, err)
	mallocs, got := pollMallocs(t, strings.SplitAfter(string(data), "\n")[0])
	mallocs(10)
	few, many := mallocs(10), mallocs(500)
	t.Logf("allocations: %d for a poll of 10 rows with evidence, %d for 500 rows", few, many)
	assert.Less(t, many, few+100, "a poll allocates per row")
	assert.Equal(t, int64(521), got.Accepted)
}

// rowEvidence decodes one main row and returns its evidence's problems by name and its items
// by kind.
func rowEvidence(t *testing.T, line string) (problems map[string]int64, items map[events.EvidenceKind]int) {
	t.Helper()
	r := NewRowDecoder(0)
	r.Reset(strings.NewReader(line+"\n"), 0, 0, 0)
	var row Row
	require.NoError(t, r.Next(Main, &row))
	require.True(t, row.HasReward, "the row's own values stand")
	problems, items = map[string]int64{}, map[events.EvidenceKind]int{}
	for i := range row.Evidence.Len() {
		it := row.Evidence.Event(i).Evidence
		if it.Kind == events.EvidenceProblem {
			problems[string(it.Code)] = it.Count
		} else {
			items[it.Kind]++
		}
	}
	return problems, items
}

// TestEvidenceProblems: each kind of damage is counted by its name, the item at fault left out
// (or kept, where only a field is wrong), and the row applied.
func TestEvidenceProblems(t *testing.T) {
	many := strings.Repeat(`{"code":"turns_unavailable","detail":"x"},`, 3) // the same gap: one
	for i := range MaxEvidenceItems + 10 {
		many += fmt.Sprintf(`{"code":"lab_gap","detail":"%d"},`, i)
	}
	for _, c := range []struct {
		name, evidence string
		problems       map[string]int64
		items          map[events.EvidenceKind]int
	}{
		{"trajectory not an object", `"ng_trajectory":"oops"`, map[string]int64{"not_object": 1}, map[events.EvidenceKind]int{events.EvidenceRow: 1}},
		{"null is absent", `"ng_trajectory":null,"ng_agent_observations":null`, map[string]int64{}, map[events.EvidenceKind]int{events.EvidenceRow: 1}},
		{"array of another type", `"ng_trajectory":{"model_calls":{}}`, map[string]int64{"wrong_type": 1}, map[events.EvidenceKind]int{events.EvidenceRow: 1}},
		{"no duration and one timestamp", `"ng_trajectory":{"model_calls":[{"started_at":1.5}]}`, map[string]int64{"timestamp_missing": 1},
			map[events.EvidenceKind]int{events.EvidenceRow: 1, events.EvidenceModelCall: 1}},
		{"a record without kind, one of a later Gym", `"ng_agent_observations":{"records":[{"role":"agent"},{"kind":"telepathy"}]}`, map[string]int64{"missing_id": 1},
			map[events.EvidenceKind]int{events.EvidenceRow: 1}},
		{"a sandbox of negative wall time", `"ng_agent_observations":{"records":[{"kind":"sandbox","role":"agent","wall_time_s":-1,"cpu_time_s":"2"}]}`,
			map[string]int64{"out_of_range": 1, "wrong_type": 1}, map[events.EvidenceKind]int{events.EvidenceRow: 1, events.EvidenceSandbox: 1}},
		{"a self-parent", `"ng_trajectory":{"invocations":[{"invocation_id":"a","parent_invocation_id":"a"}]}`, map[string]int64{"parent_cycle": 1},
			map[events.EvidenceKind]int{events.EvidenceRow: 1, events.EvidenceInvocation: 1}},
		{"too many items", `"ng_trajectory":{"gaps":[` + strings.TrimSuffix(many, ",") + `]}`, map[string]int64{"too_many_items": 11},
			map[events.EvidenceKind]int{events.EvidenceRow: 1, events.EvidenceGap: MaxEvidenceItems}},
	} {
		t.Run(c.name, func(t *testing.T) {
			problems, items := rowEvidence(t, `{"reward":1,`+c.evidence+`}`)
			assert.Equal(t, c.problems, problems)
			assert.Equal(t, c.items, items)
		})
	}
}
