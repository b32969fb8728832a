package rollouts

import (
	stdcontext "context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/follow"
	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
)

func newTestAggregator(t *testing.T) *aggregate.Aggregator {
	t.Helper()
	reg, err := normalize.NewRegistry(nil, nil, nil)
	require.NoError(t, err)
	return aggregate.NewAggregator(aggregate.AggregatorConfig{CardinalityLimit: 2000, ExpireAfter: time.Hour, Registry: reg})
}

func newTestSource(t *testing.T, agg *aggregate.Aggregator, include string, beginning bool, store follow.OffsetStore, max int64) (*Source, *followtest.Counts) {
	t.Helper()
	got := followtest.NewCounts()
	rt := NewSource(agg.NewSink, SourceOptions{
		Include:          []string{include},
		StartAtBeginning: beginning,
		PollInterval:     time.Hour, // polled by hand
		MaxLineBytes:     max,
		Store:            store,
	}, got.Record, zap.NewNop())
	require.NoError(t, rt.Start(stdcontext.Background()))
	t.Cleanup(func() { _ = rt.Shutdown(stdcontext.Background()) })
	return rt, got
}

// rolloutCounts sums the rollout counters by resource (log.file.path, nemo.run.id) and by the
// series' attributes, as "path|run|metric|k=v,...".
func rolloutCounts(md pmetric.Metrics) map[string]int64 {
	out := map[string]int64{}
	for i := range md.ResourceMetrics().Len() {
		rm := md.ResourceMetrics().At(i)
		path, _ := rm.Resource().Attributes().Get("log.file.path")
		run, _ := rm.Resource().Attributes().Get("nemo.run.id")
		svc, _ := rm.Resource().Attributes().Get("service.name")
		src, _ := rm.Resource().Attributes().Get("gym.source")
		res := filepath.Base(path.Str()) + "|" + run.Str()
		if svc.Str() != "nemo-gym/rollout_collection" || src.Str() != "rollout_files" {
			res += "|bad resource"
		}
		ms := rm.ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			if responseInstruments[m.Name()] || strings.HasPrefix(m.Name(), "gym.evidence.") {
				continue // TestRolloutsResponseInstruments, evidence_test.go
			}
			name := strings.TrimPrefix(m.Name(), "gym.rollout.")
			switch m.Type() {
			case pmetric.MetricTypeSum:
				dps := m.Sum().DataPoints()
				for k := range dps.Len() {
					out[res+"|"+name+"|"+attrString(dps.At(k).Attributes())] += dps.At(k).IntValue()
				}
			case pmetric.MetricTypeHistogram:
				dps := m.Histogram().DataPoints()
				for k := range dps.Len() {
					out[res+"|"+strings.TrimPrefix(name, "gym.driver.rollout.")+"|sum"] += int64(dps.At(k).Sum())
				}
			}
		}
	}
	return out
}

// responseInstruments are what a main row's response and latency give: rolloutCounts leaves
// them out (most rows of these tests carry a response), their own test reads them.
var responseInstruments = map[string]bool{"gym.rollout.finish_total": true, "gym.rollout.tool_calls": true, "gym.rollout.tokens": true, "gym.rollout.duration_ms": true}

func attrString(m pcommon.Map) string {
	var kv []string
	m.Range(func(k string, v pcommon.Value) bool {
		kv = append(kv, strings.TrimPrefix(strings.TrimPrefix(k, "nemo.gym."), "rollout.")+"="+v.AsString())
		return true
	})
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

func mainRow(env string, reward string, extra string) string {
	return fmt.Sprintf(`{"responses_create_params":{"input":[{"role":"user","content":"q"}]},"response":{"output":[{"type":"message","content":[{"type":"output_text","text":"%s"}]}]},"reward":%s,"_ng_environment_server":"%s"%s}`+"\n",
		strings.Repeat("answer ", 300), reward, env, extra)
}

func failureRow(class, kind string) string {
	return fmt.Sprintf(`{"_ng_failure_class":"%s","_ng_failure_type":"TimeoutError","failure_kind":"%s","_ng_environment_server":"math","_ng_failure_message":"read timed out"}`+"\n", class, kind)
}

func TestRolloutsFollowLive(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "eval.jsonl")
	// Gym's other files: never main outputs, even though the glob matches them.
	followtest.AppendFile(t, filepath.Join(dir, "eval_materialized_inputs.jsonl"), mainRow("x", "1", ""))
	followtest.AppendFile(t, filepath.Join(dir, "eval_custom.jsonl"), mainRow("x", "1", ""))
	followtest.AppendFile(t, filepath.Join(dir, "orphan_attempts.jsonl"), mainRow("x", "1", ""))
	followtest.AppendFile(t, out, mainRow("math", "1.0", `,"_ng_run_id":"run-a","ng_perf":{"num_turns":3,"num_tool_calls":2}`))

	agg := newTestAggregator(t)
	rt, got := newTestSource(t, agg, filepath.Join(dir, "*.jsonl"), true, nil, 0)
	assert.Equal(t, map[string]int64{
		"eval.jsonl|run-a|completed_total|dispatch.name=math,outcome=scored":                1,
		"eval.jsonl|run-a|rewarded_total|dispatch.name=math,masked=false,reward.range=full": 1,
		"eval.jsonl|run-a|turns|sum":      3,
		"eval.jsonl|run-a|tool_calls|sum": 2,
	}, rolloutCounts(agg.Collect(aggregate.Scope{})))

	// A row appended in pieces is read once it is whole.
	row := mainRow("math", "0.5", `,"mask_sample":true`)
	followtest.AppendFile(t, out, row[:1000])
	rt.poll(stdcontext.Background())
	followtest.AppendFile(t, out, row[1000:2000])
	rt.poll(stdcontext.Background())
	assert.Equal(t, int64(1), got.Accepted)
	followtest.AppendFile(t, out, row[2000:])
	// The sidecar appears at the first failure; the report at the end of the run.
	followtest.AppendFile(t, filepath.Join(dir, "eval_failures.jsonl"), failureRow("agent_request_failed", "transport_timeout")+failureRow("Not A Class", "lab:quirk"))
	followtest.AppendFile(t, filepath.Join(dir, "rollout_verdicts.jsonl"),
		`{"_ng_task_index":0,"_ng_rollout_index":0,"verdict":"unhealthy","findings":[{"check":"agent_turn_hollow"},"agent_turn_hollow","nope"]}`+"\n")
	rt.poll(stdcontext.Background())
	assert.Equal(t, map[string]int64{
		"eval.jsonl|run-a|completed_total|dispatch.name=math,outcome=scored":                  2,
		"eval.jsonl|run-a|rewarded_total|dispatch.name=math,masked=false,reward.range=full":   1,
		"eval.jsonl|run-a|rewarded_total|dispatch.name=math,masked=true,reward.range=partial": 1,
		"eval.jsonl|run-a|turns|sum":      3,
		"eval.jsonl|run-a|tool_calls|sum": 2,
		"eval.jsonl|run-a|completed_total|dispatch.name=math,failure_class=agent_request_failed,failure_kind=transport_timeout,failure_type=TimeoutError,outcome=failed": 1,
		"eval.jsonl|run-a|completed_total|dispatch.name=math,failure_class=other,failure_kind=lab:quirk,failure_type=TimeoutError,outcome=failed":                        1,
		"eval.jsonl|run-a|health_verdict_total|health.verdict=unhealthy,outcome=scored":                                                                                  1,
		"eval.jsonl|run-a|health_flagged_total|health.check=agent_turn_hollow,outcome=scored":                                                                            1,
		"eval.jsonl|run-a|health_flagged_total|health.check=unregistered,outcome=scored":                                                                                 1,
	}, rolloutCounts(agg.Collect(aggregate.Scope{})))
	assert.Equal(t, int64(5), got.Accepted)
	assert.Empty(t, got.Rejected)
}

func TestRolloutsRunID(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a", "out.jsonl"), filepath.Join(dir, "b", "out.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(a), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Dir(b), 0o700))
	// a: the manifest names the run; b: the first row (of the sidecar) does.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "out_manifest.json"), []byte(`{"run_id":"from-manifest","config":{}}`), 0o600))
	followtest.AppendFile(t, a, mainRow("m", "0", `,"_ng_run_id":"from-row"`))
	followtest.AppendFile(t, filepath.Join(dir, "b", "out_failures.jsonl"), strings.TrimSuffix(failureRow("timeout", ""), "}\n")+`,"_ng_run_id":"sidecar-run"}`+"\n")
	require.NoError(t, os.WriteFile(b, nil, 0o600))

	agg := newTestAggregator(t)
	rt, _ := newTestSource(t, agg, filepath.Join(dir, "*", "out.jsonl"), true, nil, 0)
	// The resource is fixed: a manifest written later changes nothing.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b", "out_manifest.json"), []byte(`{"run_id":"late"}`), 0o600))
	followtest.AppendFile(t, b, mainRow("m", "0", `,"_ng_run_id":"other"`))
	rt.poll(stdcontext.Background())
	got := rolloutCounts(agg.Collect(aggregate.Scope{}))
	assert.Equal(t, int64(1), got["out.jsonl|from-manifest|completed_total|dispatch.name=m,outcome=scored"])
	assert.Equal(t, int64(1), got["out.jsonl|sidecar-run|completed_total|dispatch.name=m,outcome=scored"])
	assert.Equal(t, int64(1), got["out.jsonl|sidecar-run|completed_total|dispatch.name=math,failure_class=timeout,failure_type=TimeoutError,outcome=failed"])
	assert.Len(t, got, 5, "%v", got) // and the two rewarded_total series
}

func TestRolloutsReportOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	followtest.AppendFile(t, filepath.Join(dir, "x.jsonl"), mainRow("m", "1", ""))
	followtest.AppendFile(t, filepath.Join(dir, "y.jsonl"), mainRow("m", "1", ""))
	followtest.AppendFile(t, filepath.Join(dir, "rollout_verdicts.jsonl"), `{"verdict":"healthy","findings":[],"_ng_run_id":"r9"}`+"\n")
	agg := newTestAggregator(t)
	newTestSource(t, agg, filepath.Join(dir, "*.jsonl"), true, nil, 0)
	got := rolloutCounts(agg.Collect(aggregate.Scope{}))
	assert.Equal(t, int64(1), got["rollout_verdicts.jsonl|r9|health_verdict_total|health.verdict=healthy,outcome=scored"], "%v", got)
	assert.Equal(t, int64(1), got["x.jsonl||completed_total|dispatch.name=m,outcome=scored"])
	assert.Equal(t, int64(1), got["y.jsonl||completed_total|dispatch.name=m,outcome=scored"])
}

func TestRolloutsBadRows(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", "")+"[]\n"+`{"reward":"1"}`+"\n"+mainRow("m", "0", "")+
		`{"reward":1,"response":"`+strings.Repeat("y", 5000)+`"}`+"\n"+mainRow("m", "NaN", ""))
	agg := newTestAggregator(t)
	_, got := newTestSource(t, agg, filepath.Join(dir, "*.jsonl"), true, nil, 4096)
	assert.Equal(t, map[string]int64{"not_object": 1, "wrong_type": 1, "too_long": 1}, got.Rejected)
	assert.Equal(t, int64(3), got.Accepted)
	c := rolloutCounts(agg.Collect(aggregate.Scope{}))
	assert.Equal(t, int64(3), c["r.jsonl||completed_total|dispatch.name=m,outcome=scored"])
	assert.Equal(t, int64(1), c["r.jsonl||rewarded_total|dispatch.name=m,masked=false,reward.range=zero"])
}

func TestRolloutsTruncateAndForget(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run1")
	require.NoError(t, os.MkdirAll(run, 0o700))
	out := filepath.Join(run, "r.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", `,"_ng_run_id":"first"`)+mainRow("m", "1", ""))
	store := &followtest.MemStore{}
	agg := newTestAggregator(t)
	rt, got := newTestSource(t, agg, filepath.Join(dir, "*", "*.jsonl"), true, store, 0)
	assert.Equal(t, int64(2), got.Accepted)

	// The main output written again (a new run to the same path): read from the start, under
	// the resource its first row gives.
	require.NoError(t, os.WriteFile(out, []byte(mainRow("n", "0", `,"_ng_run_id":"second"`)), 0o600))
	rt.poll(stdcontext.Background())
	c := rolloutCounts(agg.Collect(aggregate.Scope{}))
	assert.Equal(t, int64(2), c["r.jsonl|first|completed_total|dispatch.name=m,outcome=scored"])
	assert.Equal(t, int64(1), c["r.jsonl|second|completed_total|dispatch.name=n,outcome=scored"])

	// The run directory deleted: the run is forgotten, and so are its offsets.
	require.NoError(t, os.RemoveAll(run))
	rt.poll(stdcontext.Background())
	assert.Empty(t, rt.runs)
	offsets, release := lockOffsets(rt, store)
	release()
	var st rolloutState
	require.NoError(t, json.Unmarshal(offsets, &st))
	assert.Empty(t, st.Files)
	assert.Empty(t, st.Runs)
}

func TestRolloutsStartAtEnd(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	row := mainRow("m", "1", "")
	followtest.AppendFile(t, out, row+row[:70]) // a row being written at start-up
	agg := newTestAggregator(t)
	rt, got := newTestSource(t, agg, filepath.Join(dir, "*.jsonl"), false, nil, 0)
	assert.Zero(t, got.Accepted)
	followtest.AppendFile(t, out, row[70:]+row)
	rt.poll(stdcontext.Background())
	assert.Equal(t, int64(2), got.Accepted, "the row being written at start-up is read whole")
	assert.Empty(t, got.Rejected)
}

func TestIsMainOutput(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"eval.jsonl", "my_run.jsonl"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o600))
	}
	for name, want := range map[string]bool{
		"eval.jsonl": true, "my_run.jsonl": true, "other.jsonl": true,
		"eval_failures.jsonl": false, "eval_attempts.jsonl": false, "x_materialized_inputs.jsonl": false,
		"rollout_verdicts.jsonl": false, "eval_v2.jsonl": false, "my_run_extra.jsonl": false,
		"my_other.jsonl": true, "eval.json": false, "_failures.jsonl": true,
	} {
		assert.Equal(t, want, isMainOutput(filepath.Join(dir, name)), name)
	}
}

// Rejected rows are logged with their file and line number, at most burst lines per period;
// the count of those not logged comes with the next line logged.
func TestRolloutsRejectLogs(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", "")+strings.Repeat("[]\n", 15))
	core, logs := observer.New(zap.WarnLevel)
	got := followtest.NewCounts()
	rt := NewSource(newTestAggregator(t).NewSink, SourceOptions{
		Include: []string{filepath.Join(dir, "*.jsonl")}, StartAtBeginning: true, PollInterval: time.Hour,
	}, got.Record, zap.New(core))
	require.NoError(t, rt.Start(stdcontext.Background()))
	t.Cleanup(func() { _ = rt.Shutdown(stdcontext.Background()) })
	assert.Equal(t, int64(15), got.Rejected["not_object"], "every rejected row is counted")
	entries := logs.FilterMessage("rollouts: row rejected").All()
	require.Len(t, entries, 10, "the log is rate-limited")
	first := entries[0].ContextMap()
	assert.Equal(t, out, first["path"])
	assert.Equal(t, int64(2), first["line"])
	assert.Equal(t, "not_object", first["reason"])

	// The next period's first line says how many were not logged.
	rt.logs.Now = func() time.Time { return time.Now().Add(time.Minute) }
	followtest.AppendFile(t, out, "[]\n")
	rt.poll(stdcontext.Background())
	entries = logs.FilterMessage("rollouts: row rejected").All()
	require.Len(t, entries, 11)
	assert.Equal(t, int64(5), entries[10].ContextMap()["not_logged_since_last"])
	assert.Equal(t, int64(17), entries[10].ContextMap()["line"])
}

// A poll allocates nothing per row in steady state: a poll of 2000 rows allocates what a poll
// of 10 does, give or take the fixed cost of a poll.
func TestRolloutsPollAllocatesNothingPerRow(t *testing.T) {
	mallocs, got := pollMallocs(t, mainRow("m", "1", `,"ng_perf":{"num_turns":3}`))
	mallocs(10)
	few, many := mallocs(10), mallocs(2000)
	t.Logf("allocations: %d for a poll of 10 rows, %d for 2000 rows", few, many)
	assert.Less(t, many, few+200, "a poll allocates per row")
	assert.Equal(t, int64(2021), got.Accepted)
}

// A health report of its own past MaxRuns waits as a main output does: counted and logged.
func TestRolloutsReportPastMaxRuns(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.MkdirAll(a, 0o700))
	require.NoError(t, os.MkdirAll(b, 0o700))
	// a: two main outputs and their report (a run of its own); b: the rest of MaxRuns.
	for _, n := range []string{"x.jsonl", "y.jsonl"} {
		require.NoError(t, os.WriteFile(filepath.Join(a, n), nil, 0o600))
	}
	report := filepath.Join(a, verdictsName)
	require.NoError(t, os.WriteFile(report, []byte(`{"verdict":"healthy"}`+"\n"), 0o600))
	for i := range MaxRuns - 2 {
		require.NoError(t, os.WriteFile(filepath.Join(b, fmt.Sprintf("m%04d.jsonl", i)), nil, 0o600))
	}
	core, logs := observer.New(zap.WarnLevel)
	rt := NewSource(newTestAggregator(t).NewSink, SourceOptions{
		Include: []string{filepath.Join(dir, "*", "*.jsonl")}, StartAtBeginning: true, PollInterval: time.Hour,
	}, nil, zap.New(core))
	require.NoError(t, rt.Start(stdcontext.Background()))
	t.Cleanup(func() { _ = rt.Shutdown(stdcontext.Background()) })
	assert.Len(t, rt.runs, MaxRuns)
	assert.NotContains(t, rt.runs, report)
	assert.Equal(t, 1, rt.waiting)
	rt.Poll(stdcontext.Background())
	entries := logs.FilterMessage("rollouts: more runs than the receiver follows at once; the rest wait until followed runs go").All()
	require.Len(t, entries, 1, "once a minute, not once a poll")
	assert.Equal(t, report, entries[0].ContextMap()["first_waiting"])
	assert.EqualValues(t, 1, entries[0].ContextMap()["waiting"])
}

// pollMallocs follows a main output that holds row; the function it returns appends row rows
// times and counts the allocations of the poll that reads them.
func pollMallocs(t *testing.T, row string) (func(rows int) uint64, *followtest.Counts) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	followtest.AppendFile(t, out, row)
	rt, got := newTestSource(t, newTestAggregator(t), filepath.Join(dir, "*.jsonl"), true, nil, 0)
	return func(rows int) uint64 {
		followtest.AppendFile(t, out, strings.Repeat(row, rows))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rt.poll(stdcontext.Background())
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}, got
}
