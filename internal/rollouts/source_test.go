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
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
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

func rolloutTailer(t *testing.T, agg *aggregate.Aggregator, include string, beginning bool, store follow.OffsetStore, max int64) (*Source, *followtest.Counts) {
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
			if responseInstruments[m.Name()] {
				continue // TestRolloutsResponseInstruments
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
	rt, got := rolloutTailer(t, agg, filepath.Join(dir, "*.jsonl"), true, nil, 0)
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
	rt, _ := rolloutTailer(t, agg, filepath.Join(dir, "*", "out.jsonl"), true, nil, 0)
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
	rolloutTailer(t, agg, filepath.Join(dir, "*.jsonl"), true, nil, 0)
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
	_, got := rolloutTailer(t, agg, filepath.Join(dir, "*.jsonl"), true, nil, 4096)
	assert.Equal(t, map[string]int64{"not_object": 1, "wrong_type": 1, "too_long": 1}, got.Rejected)
	assert.Equal(t, int64(3), got.Accepted)
	c := rolloutCounts(agg.Collect(aggregate.Scope{}))
	assert.Equal(t, int64(3), c["r.jsonl||completed_total|dispatch.name=m,outcome=scored"])
	assert.Equal(t, int64(1), c["r.jsonl||rewarded_total|dispatch.name=m,masked=false,reward.range=zero"])
}

func TestRolloutsRestartWithStore(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", `,"_ng_run_id":"r1"`)+mainRow("m", "1", ""))
	followtest.AppendFile(t, filepath.Join(dir, "r_failures.jsonl"), failureRow("timeout", "agent_timeout"))
	store := &followtest.MemStore{}

	agg := newTestAggregator(t)
	rt, _ := rolloutTailer(t, agg, filepath.Join(dir, "*.jsonl"), true, store, 0)
	half := mainRow("m", "0", "")
	followtest.AppendFile(t, out, half[:100]) // a row being written at shutdown
	require.NoError(t, rt.Shutdown(stdcontext.Background()))
	first := rolloutCounts(agg.Collect(aggregate.Scope{}))
	assert.Equal(t, int64(2), first["r.jsonl|r1|completed_total|dispatch.name=m,outcome=scored"])

	// While it is down: the row is finished, more are written, a manifest appears.
	followtest.AppendFile(t, out, half[100:]+mainRow("m", "1", ""))
	followtest.AppendFile(t, filepath.Join(dir, "r_failures.jsonl"), failureRow("timeout", "agent_timeout"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "r_manifest.json"), []byte(`{"run_id":"changed"}`), 0o600))

	agg2 := newTestAggregator(t)
	_, got := rolloutTailer(t, agg2, filepath.Join(dir, "*.jsonl"), false, store, 0)
	assert.Equal(t, map[string]int64{
		"r.jsonl|r1|completed_total|dispatch.name=m,outcome=scored":                                                                               2,
		"r.jsonl|r1|rewarded_total|dispatch.name=m,masked=false,reward.range=full":                                                                1,
		"r.jsonl|r1|rewarded_total|dispatch.name=m,masked=false,reward.range=zero":                                                                1,
		"r.jsonl|r1|completed_total|dispatch.name=math,failure_class=timeout,failure_kind=agent_timeout,failure_type=TimeoutError,outcome=failed": 1,
	}, rolloutCounts(agg2.Collect(aggregate.Scope{})), "only what was written since, under the same resource")
	assert.Equal(t, int64(3), got.Accepted)
}

// lockOffsets takes the tailer's Locker as the receiver's checkpoint does and returns the
// offsets it gives the checkpoint (those in store, when it has none of its own); release lets
// the tailer go on.
func lockOffsets(rt *Source, store *followtest.MemStore) (offsets []byte, release func()) {
	l := rt.Locker()
	l.Lock()
	offsets, ok := rt.Offsets()
	if !ok {
		store.Mu.Lock()
		offsets = store.Data
		store.Mu.Unlock()
	}
	return offsets, l.Unlock
}

func TestRolloutsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", ""))
	agg := newTestAggregator(t)
	store := &followtest.MemStore{}
	rt, got := rolloutTailer(t, agg, filepath.Join(dir, "*.jsonl"), true, store, 0)

	half := mainRow("m", "1", "")
	followtest.AppendFile(t, out, mainRow("m", "1", "")+half[:50])
	offsets, release := lockOffsets(rt, store)
	polled := make(chan struct{})
	go func() { rt.poll(stdcontext.Background()); close(polled) }()
	select {
	case <-polled:
		t.Fatal("a poll ran while the checkpoint was held")
	case <-time.After(100 * time.Millisecond):
	}
	var st rolloutState
	require.NoError(t, json.Unmarshal(offsets, &st))
	assert.Equal(t, int64(len(half)), st.Files[out].Offset, "the offsets of the rows applied, not of rows read ahead")
	assert.Equal(t, int64(1), got.Accepted)
	release()
	<-polled
	offsets, release = lockOffsets(rt, store)
	release()
	require.NoError(t, json.Unmarshal(offsets, &st))
	assert.Equal(t, int64(2*len(half)), st.Files[out].Offset, "before the partial row")
	assert.Equal(t, int64(2), st.Files[out].Lines)

	// Restored from those offsets, a new tailer reads only the rows after them.
	followtest.AppendFile(t, out, half[50:])
	agg2 := newTestAggregator(t)
	_, got2 := rolloutTailer(t, agg2, filepath.Join(dir, "*.jsonl"), true, &followtest.MemStore{Data: offsets}, 0)
	assert.Equal(t, int64(1), got2.Accepted)
}

func TestRolloutsTruncateAndForget(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run1")
	require.NoError(t, os.MkdirAll(run, 0o700))
	out := filepath.Join(run, "r.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", `,"_ng_run_id":"first"`)+mainRow("m", "1", ""))
	store := &followtest.MemStore{}
	agg := newTestAggregator(t)
	rt, got := rolloutTailer(t, agg, filepath.Join(dir, "*", "*.jsonl"), true, store, 0)
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
	rt, got := rolloutTailer(t, agg, filepath.Join(dir, "*.jsonl"), false, nil, 0)
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

// A checkpoint taken while a poll reads a long file comes between two rows, and its offsets are
// exactly the rows the aggregator holds at that moment.
func TestRolloutsCheckpointDuringLongPoll(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	row := mainRow("m", "1", "")
	const rows = 20000
	followtest.AppendFile(t, out, strings.Repeat(row, rows))
	agg := newTestAggregator(t)
	store := &followtest.MemStore{}
	rt, _ := rolloutTailer(t, agg, filepath.Join(dir, "none", "*.jsonl"), true, store, 0)
	rt.opts.Include = []string{filepath.Join(dir, "*.jsonl")}
	count := func() int64 {
		return rolloutCounts(agg.Collect(aggregate.Scope{}))["r.jsonl||completed_total|dispatch.name=m,outcome=scored"]
	}
	polled := make(chan struct{})
	go func() { rt.poll(stdcontext.Background()); close(polled) }()
	for count() == 0 { // the poll is reading the file
		time.Sleep(100 * time.Microsecond)
	}
	offsets, release := lockOffsets(rt, store)
	scored := count()
	release()
	<-polled
	var st rolloutState
	require.NoError(t, json.Unmarshal(offsets, &st))
	t.Logf("checkpoint at row %d of %d", scored, rows)
	assert.Less(t, scored, int64(rows), "the checkpoint waited for the poll to end")
	assert.Positive(t, scored)
	assert.Equal(t, scored*int64(len(row)), st.Files[out].Offset, "the offsets are the rows applied")
	assert.Equal(t, scored, st.Files[out].Lines)
	assert.Equal(t, int64(rows), rolloutCounts(agg.Collect(aggregate.Scope{}))["r.jsonl||completed_total|dispatch.name=m,outcome=scored"])
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
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	row := mainRow("m", "1", `,"ng_perf":{"num_turns":3}`)
	followtest.AppendFile(t, out, row)
	rt, got := rolloutTailer(t, newTestAggregator(t), filepath.Join(dir, "*.jsonl"), true, nil, 0)
	mallocs := func(rows int) uint64 {
		followtest.AppendFile(t, out, strings.Repeat(row, rows))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rt.poll(stdcontext.Background())
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	mallocs(10)
	few, many := mallocs(10), mallocs(2000)
	t.Logf("allocations: %d for a poll of 10 rows, %d for 2000 rows", few, many)
	assert.Less(t, many, few+200, "a poll allocates per row")
	assert.Equal(t, int64(2021), got.Accepted)
}

// ckptStore is a storage extension's client in memory.
type ckptStore struct {
	mu sync.Mutex
	kv map[string][]byte
}

func (s *ckptStore) Get(_ stdcontext.Context, k string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kv[k], nil
}

func (s *ckptStore) Set(_ stdcontext.Context, k string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv == nil {
		s.kv = map[string][]byte{}
	}
	s.kv[k] = append([]byte(nil), v...)
	return nil
}

// ckptTailer is a rollouts tailer joined to a checkpointer as the receiver joins them: the
// checkpoint restored, the tailer made with its section (which pulls its offsets under its
// Locker) before it starts.
func ckptTailer(t *testing.T, store *ckptStore, include string) (*Source, *checkpoint.Checkpointer, *aggregate.Aggregator, *followtest.Counts) {
	t.Helper()
	agg := newTestAggregator(t)
	c := checkpoint.New(store, agg)
	_, err := c.Restore(stdcontext.Background())
	require.NoError(t, err)
	section := c.Section("rollouts")
	got := followtest.NewCounts()
	rt := NewSource(agg.NewSink, SourceOptions{
		Include: []string{include}, StartAtBeginning: true, PollInterval: time.Hour, Store: section,
	}, got.Record, zap.NewNop()) // made with its section: joined
	return rt, c, agg, got
}

// savedOffsets reads the rollouts offsets of the stored checkpoint.
func savedOffsets(t *testing.T, store *ckptStore) rolloutState {
	t.Helper()
	c := checkpoint.New(store, newTestAggregator(t))
	_, err := c.Restore(stdcontext.Background())
	require.NoError(t, err)
	data, err := c.Section("rollouts").Load(stdcontext.Background())
	require.NoError(t, err)
	var st rolloutState
	require.NoError(t, json.Unmarshal(data, &st))
	return st
}

// A checkpoint taken before the tailer has opened a file the store knows (before it starts,
// or while the file's run is not followed) keeps that file's stored offset: a crash then
// resumes at the offset, and the restored totals are not counted again.
func TestRolloutsCheckpointKeepsOffsetsNotYetUsed(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", `,"_ng_run_id":"r1"`)+mainRow("m", "1", ""))
	followtest.AppendFile(t, filepath.Join(dir, "r_failures.jsonl"), failureRow("timeout", "agent_timeout"))
	store := &ckptStore{}
	ctx := stdcontext.Background()
	rt, c, _, got := ckptTailer(t, store, filepath.Join(dir, "*.jsonl"))
	require.NoError(t, rt.Start(ctx))
	require.NoError(t, rt.Shutdown(ctx))
	_, err := c.Save(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), got.Accepted)
	want := savedOffsets(t, store)
	require.Len(t, want.Files, 2)
	require.Equal(t, map[string]storedRun{out: {RunID: "r1"}}, want.Runs)

	// Restarted with a glob that does not match the run (as a run waits past MaxRuns): a
	// checkpoint before Start, and one after its first poll, keep the stored offsets.
	rt, c, _, got = ckptTailer(t, store, filepath.Join(dir, "none", "*.jsonl"))
	_, err = c.Save(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, savedOffsets(t, store), "a checkpoint before Start")
	require.NoError(t, rt.Start(ctx))
	_, err = c.Save(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, savedOffsets(t, store), "a checkpoint before the run is followed")
	require.NoError(t, rt.Shutdown(ctx))
	_, err = c.Save(ctx)
	require.NoError(t, err)
	assert.Zero(t, got.Accepted)

	// Restarted with the run matched again: only the row written since is read, on top of the
	// restored totals.
	followtest.AppendFile(t, out, mainRow("m", "0", ""))
	rt, c, agg, got := ckptTailer(t, store, filepath.Join(dir, "*.jsonl"))
	require.NoError(t, rt.Start(ctx))
	t.Cleanup(func() { _ = rt.Shutdown(ctx) })
	assert.Equal(t, int64(1), got.Accepted)
	counts := rolloutCounts(agg.Collect(aggregate.Scope{}))
	assert.Equal(t, int64(3), counts["r.jsonl|r1|completed_total|dispatch.name=m,outcome=scored"], "%v", counts)
	assert.Equal(t, int64(1), counts["r.jsonl|r1|completed_total|dispatch.name=math,failure_class=timeout,failure_kind=agent_timeout,failure_type=TimeoutError,outcome=failed"], "%v", counts)
	_ = c
}

// The stored offsets of a file gone at the first poll after a start are dropped, not carried
// over from checkpoint to checkpoint.
func TestRolloutsStoredOffsetsOfGoneFilesDropped(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	failures := filepath.Join(dir, "r_failures.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", `,"_ng_run_id":"r1"`))
	followtest.AppendFile(t, failures, failureRow("timeout", "agent_timeout"))
	other := filepath.Join(dir, "gone", "g.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(other), 0o700))
	followtest.AppendFile(t, other, mainRow("m", "1", `,"_ng_run_id":"g1"`))
	store := &followtest.MemStore{}
	rt, _ := rolloutTailer(t, newTestAggregator(t), filepath.Join(dir, "*", "*.jsonl"), true, store, 0)
	require.NoError(t, rt.Shutdown(stdcontext.Background()))
	// The store knows both runs.
	var a rolloutState
	require.NoError(t, json.Unmarshal(store.Data, &a))
	require.Contains(t, a.Files, other)
	require.Contains(t, a.Runs, other)
	a.Files[out] = storedRowFile{Head: "7b", Offset: 1, Lines: 1}
	a.Files[failures] = storedRowFile{Head: "7b", Offset: 1, Lines: 1}
	a.Runs[out] = storedRun{RunID: "r1"}
	store.Data, _ = json.Marshal(a)

	require.NoError(t, os.RemoveAll(filepath.Dir(other)))
	require.NoError(t, os.Remove(failures))
	rt, _ = rolloutTailer(t, newTestAggregator(t), filepath.Join(dir, "none", "*.jsonl"), true, store, 0)
	offsets, release := lockOffsets(rt, store)
	release()
	var st rolloutState
	require.NoError(t, json.Unmarshal(offsets, &st))
	assert.Equal(t, map[string]storedRowFile{out: {Head: "7b", Offset: 1, Lines: 1}}, st.Files)
	assert.Equal(t, map[string]storedRun{out: {RunID: "r1"}}, st.Runs)
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

// The offsets go to each checkpoint that takes the Locker (Offsets) and are saved once more at Shutdown, not at
// every poll: every checkpoint still has the offsets of exactly the rows applied, the final
// one (after Shutdown's last read) included.
func TestRolloutsOffsetsSavedForEveryCheckpoint(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	row := mainRow("m", "1", "")
	followtest.AppendFile(t, out, row+row)
	store := &ckptStore{}
	ctx := stdcontext.Background()
	rt, c, _, _ := ckptTailer(t, store, filepath.Join(dir, "*.jsonl"))
	require.NoError(t, rt.Start(ctx))
	t.Cleanup(func() { _ = rt.Shutdown(ctx) })
	offset := func() int64 {
		t.Helper()
		_, err := c.Save(ctx)
		require.NoError(t, err)
		return savedOffsets(t, store).Files[out].Offset
	}
	assert.Equal(t, int64(2*len(row)), offset())
	followtest.AppendFile(t, out, row)
	rt.poll(ctx)
	assert.Equal(t, int64(3*len(row)), offset())
	assert.Equal(t, int64(3*len(row)), offset(), "a checkpoint with no poll between")
	followtest.AppendFile(t, out, row+row[:10])
	require.NoError(t, rt.Shutdown(ctx)) // reads the fourth row
	assert.Equal(t, int64(4*len(row)), offset(), "the final checkpoint, after Shutdown")
	assert.Equal(t, int64(4*len(row)), offset())

	// A poll alone saves nothing into a store that pulls the offsets (a checkpoint section).
	pull := &followtest.PullStore{}
	rt2, _ := rolloutTailer(t, newTestAggregator(t), filepath.Join(dir, "*.jsonl"), true, pull, 0)
	require.NotNil(t, pull.Offsets, "made with its store: joined")
	followtest.AppendFile(t, out, row[10:])
	rt2.poll(ctx)
	assert.Zero(t, len(pull.Data), "a poll saved the offsets")
	offsets, release := lockOffsets(rt2, &pull.MemStore)
	release()
	var st rolloutState
	require.NoError(t, json.Unmarshal(offsets, &st))
	assert.Equal(t, int64(5*len(row)), st.Files[out].Offset)
}

// The section's format is unchanged by the move onto follow.Follower: offsets written in it
// (by an earlier version) restore, and the offsets given back are in it.
func TestRolloutsStoredFormat(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	row := mainRow("m", "1", `,"_ng_run_id":"from-row"`)
	followtest.AppendFile(t, out, row+row)
	head := []byte(row + row)[:follow.FingerprintBytes]
	stored := fmt.Sprintf(`{"files":{%q:{"head":%q,"offset":%d,"lines":1}},"runs":{%q:{"run_id":"r1"}}}`, out, fmt.Sprintf("%x", head), len(row), out)
	store := &followtest.MemStore{Data: []byte(stored)}
	agg := newTestAggregator(t)
	rt, got := rolloutTailer(t, agg, filepath.Join(dir, "*.jsonl"), false, store, 0)
	assert.Equal(t, int64(1), got.Accepted, "resumed after the stored row")
	assert.Equal(t, int64(1), rolloutCounts(agg.Collect(aggregate.Scope{}))["r.jsonl|r1|completed_total|dispatch.name=m,outcome=scored"], "under the stored run id")
	offsets, release := lockOffsets(rt, store)
	release()
	want := fmt.Sprintf(`{"files":{%q:{"head":%q,"offset":%d,"lines":2}},"runs":{%q:{"run_id":"r1"}}}`, out, fmt.Sprintf("%x", head), 2*len(row), out)
	assert.JSONEq(t, want, string(offsets))
}
