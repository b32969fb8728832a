package gymreceiver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
	"github.com/gym-telemetry/otelcol-gym/internal/rollouts"
	"github.com/gym-telemetry/otelcol-gym/internal/rollouts/rolloutstest"
	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadatatest"
)

// The run files' traces through the receiver (internal/rollouts/source_traces.go): one trace per
// main-output row with rollout evidence, handed on synchronously, with the traced offsets in the
// receiver's storage beside the checkpoint.

// spansPerRow is what evidenceRows' row makes: the root, 2 invocations, 3 model calls, 2 tool
// calls, 2 sandboxes.
const spansPerRow = 10

// evidenceRows are rows first..first+n-1 of one run (run-ev), each internal/rollouts' golden
// evidence row 0 with its own task index and rollout id (first-0, ...): one trace each.
func evidenceRows(t *testing.T, first, n int) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "internal", "rollouts", "testdata", "evidence", "eval.jsonl"))
	require.NoError(t, err)
	line, _, _ := bytes.Cut(data, []byte("\n"))
	return rolloutstest.EvidenceRows(t, line, first, n)
}

func appendFile(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// tracesConfig reads the run files of dir, polling often, collecting at shutdown only, with
// storage when st is set.
func tracesConfig(dir string, withStorage bool) *Config {
	cfg := rolloutsConfig(filepath.Join(dir, "*.jsonl"))
	cfg.Rollouts.Get().PollInterval = 5 * time.Millisecond
	if withStorage {
		cfg.Storage = &storageID
	}
	return cfg
}

// runBoth runs one receiver in a metrics and a traces pipeline (the shared component the
// factory makes for one configuration), as a collector does; stop shuts it down.
func runBoth(t *testing.T, set receiver.Settings, cfg *Config, host component.Host, traces consumer.Traces) (*consumertest.MetricsSink, func()) {
	t.Helper()
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.MetricsSink)
	m, err := NewFactory().CreateMetrics(context.Background(), set, cfg, sink)
	require.NoError(t, err)
	tr, err := NewFactory().CreateTraces(context.Background(), set, cfg, traces)
	require.NoError(t, err)
	require.NoError(t, m.Start(context.Background(), host))
	require.NoError(t, tr.Start(context.Background(), host))
	return sink, func() {
		require.NoError(t, tr.Shutdown(context.Background()))
		require.NoError(t, m.Shutdown(context.Background()))
	}
}

func nopSettings() receiver.Settings { return receivertest.NewNopSettings(metadata.Type) }

// spanKeys are the spans of td: trace id/span id, with the rollout id of each.
func spanKeys(td ptrace.Traces, into map[string]string) {
	for i := range td.ResourceSpans().Len() {
		for j := range td.ResourceSpans().At(i).ScopeSpans().Len() {
			ss := td.ResourceSpans().At(i).ScopeSpans().At(j).Spans()
			for k := range ss.Len() {
				s := ss.At(k)
				id, _ := s.Attributes().Get("nemo.gym.rollout.id")
				into[s.TraceID().String()+"/"+s.SpanID().String()] = id.Str()
			}
		}
	}
}

// rolloutsOf are the rollout ids of the sink's spans, each with its number of spans; dup counts
// the spans the sink holds more than once.
func rolloutsOf(sink *consumertest.TracesSink) (rollouts map[string]int, keys map[string]string, dup int) {
	rollouts, keys = map[string]int{}, map[string]string{}
	for _, td := range sink.AllTraces() {
		one := map[string]string{}
		spanKeys(td, one)
		for k, r := range one {
			if _, ok := keys[k]; ok {
				dup++
			}
			keys[k] = r
			rollouts[r]++
		}
	}
	return rollouts, keys, dup
}

func waitSpans(t *testing.T, sink *consumertest.TracesSink, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return sink.SpanCount() >= n }, 10*time.Second, time.Millisecond, "want %d spans", n)
}

func telemetrySum(t *testing.T, tt *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tt.GetMetric(name)
	require.NoError(t, err, name)
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		n += dp.Value
	}
	return n
}

// The traced offsets survive a restart: each life appends rows and hands their spans on; a
// life ends gracefully (its checkpoint holds every row) or is killed (storage as it is once
// the spans were handed on: the metrics checkpoint older than the traced offsets, or none at
// all). Over every life each span is handed on exactly once, the rows appended after a restart
// are traced, and the metrics count each row once.
func TestTracedOffsetsSurviveRestarts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crash []bool // how each life ends
	}{
		{"checkpoint older than the traced offsets", []bool{false, true, false}},
		{"no checkpoint at all", []bool{true, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "eval.jsonl")
			st := storagetest.NewMem(nil)
			seen := map[string]int{} // span key -> times handed on, over every life
			rows := 0
			for life, crash := range tc.crash {
				appendFile(t, path, evidenceRows(t, rows, 3+life))
				first := rows
				rows += 3 + life
				ckptBefore := st.Value(checkpoint.Key)

				sink := new(consumertest.TracesSink)
				metrics, stop := runBoth(t, nopSettings(), tracesConfig(dir, true), storageHost(st), sink)
				waitSpans(t, sink, (rows-first)*spansPerRow)
				if crash {
					crashed := st.CrashCopy() // kill -9 once the spans were handed on
					assert.Equal(t, ckptBefore, crashed.Value(checkpoint.Key), "life %d: no checkpoint since the last life's", life)
					assert.NotEmpty(t, crashed.Value(tracedKey), "life %d: the traced offsets are saved", life)
					stop()
					st = crashed
				} else {
					stop()
					assert.Equal(t, int64(rows), scoredTotal(lastMetrics(t, metrics)), "life %d: every row counted once", life)
				}
				got, keys, dup := rolloutsOf(sink)
				assert.Zero(t, dup, "life %d", life)
				want := map[string]int{}
				for i := first; i < rows; i++ {
					want[fmt.Sprintf("%d-0", i)] = spansPerRow
				}
				assert.Equal(t, want, got, "life %d: the spans of its new rows, and none of an earlier life's", life)
				for k := range keys {
					seen[k]++
				}
			}
			assert.Len(t, seen, rows*spansPerRow)
			for k, n := range seen {
				assert.Equal(t, 1, n, "span %s handed on %d times", k, n)
			}
		})
	}
}

// A batch the traces pipeline refuses is dropped, counted and logged; the rows' metrics count,
// and the rows appended later are traced.
func TestTracesRefusedBatchIsCountedAndTheNextGo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "eval.jsonl")
	appendFile(t, path, evidenceRows(t, 0, 2))

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	set := metadatatest.NewSettings(tt)
	core, logs := observer.New(zapcore.WarnLevel)
	set.Logger = zap.New(core)

	sink := new(consumertest.TracesSink)
	var calls, refused atomic.Int64
	refusing, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
		if calls.Add(1) == 1 {
			refused.Store(int64(td.SpanCount()))
			return errors.New("refused by the test")
		}
		return sink.ConsumeTraces(ctx, td)
	})
	require.NoError(t, err)
	metrics, stop := runBoth(t, set, tracesConfig(dir, true), storageHost(storagetest.NewMem(nil)), refusing)
	require.Eventually(t, func() bool { return calls.Load() >= 1 }, 10*time.Second, time.Millisecond)
	appendFile(t, path, evidenceRows(t, 2, 3))
	waitSpans(t, sink, 5*spansPerRow-int(refused.Load()))
	stop()

	require.Positive(t, refused.Load())
	assert.Equal(t, refused.Load(), telemetrySum(t, tt, "otelcol_receiver_gym_rollout_spans_dropped"))
	assert.Equal(t, int64(5*spansPerRow)-refused.Load(), telemetrySum(t, tt, "otelcol_receiver_gym_rollout_spans_sent"))
	got, _, dup := rolloutsOf(sink)
	assert.Zero(t, dup)
	assert.Equal(t, map[string]int{"2-0": spansPerRow, "3-0": spansPerRow, "4-0": spansPerRow}, got, "the rows after the refused batch")
	warned := logs.FilterMessageSnippet("refused a batch").All()
	require.Len(t, warned, 1)
	assert.Equal(t, refused.Load(), warned[0].ContextMap()["spans"])
	assert.Contains(t, warned[0].ContextMap()["error"], "refused by the test")
	assert.Equal(t, int64(5), scoredTotal(lastMetrics(t, metrics)), "the refused batch's rows count")
}

// rollouts.traces: false hands no span on, and the metrics are those of traces on, exactly.
func TestTracesOffKeepsTheMetrics(t *testing.T) {
	dir := t.TempDir()
	appendFile(t, filepath.Join(dir, "eval.jsonl"), evidenceRows(t, 0, 4))
	run := func(traces bool) (*consumertest.MetricsSink, *consumertest.TracesSink) {
		cfg := tracesConfig(dir, false)
		cfg.Rollouts.Get().Traces = traces
		sink := new(consumertest.TracesSink)
		metrics, stop := runBoth(t, nopSettings(), cfg, componenttest.NewNopHost(), sink)
		if traces {
			waitSpans(t, sink, 4*spansPerRow)
		} else {
			time.Sleep(100 * time.Millisecond) // polls: every row read
		}
		stop()
		return metrics, sink
	}
	onMetrics, onTraces := run(true)
	offMetrics, offTraces := run(false)
	assert.Equal(t, 4*spansPerRow, onTraces.SpanCount())
	assert.Zero(t, offTraces.SpanCount())
	assert.Empty(t, offTraces.AllTraces(), "no call at all")
	on, off := lastMetrics(t, onMetrics), lastMetrics(t, offMetrics)
	assert.Equal(t, int64(4), scoredTotal(off))
	require.NoError(t, pmetrictest.CompareMetrics(on, off,
		pmetrictest.IgnoreTimestamp(), pmetrictest.IgnoreStartTimestamp(),
		pmetrictest.IgnoreResourceMetricsOrder(), pmetrictest.IgnoreMetricsOrder(),
		pmetrictest.IgnoreScopeMetricsOrder(), pmetrictest.IgnoreMetricDataPointsOrder()))
}

// snapshotAt is a storage extension that takes a crash copy of its data (what a kill -9 leaves)
// right after the first checkpoint saved while take says so, with what take returned then.
type snapshotAt struct {
	*storagetest.Mem
	take func() (int, bool)

	mu    sync.Mutex
	copy  *storagetest.Mem
	taken int
}

func (s *snapshotAt) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return snapshotClient{s}, nil
}

type snapshotClient struct{ s *snapshotAt }

func (c snapshotClient) Get(ctx context.Context, k string) ([]byte, error) {
	return c.s.Get(ctx, k)
}
func (c snapshotClient) Delete(ctx context.Context, k string) error { return c.s.Delete(ctx, k) }
func (c snapshotClient) Close(ctx context.Context) error            { return c.s.Close(ctx) }

func (c snapshotClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	return c.s.Batch(ctx, ops...)
}

func (c snapshotClient) Set(ctx context.Context, k string, v []byte) error {
	if err := c.s.Set(ctx, k, v); err != nil {
		return err
	}
	if k == checkpoint.Key {
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		if n, ok := c.s.take(); ok && c.s.copy == nil {
			c.s.copy, c.s.taken = c.s.CrashCopy(), n
		}
	}
	return nil
}

// A checkpoint that comes in while the source reads a long file waits for the next row, and
// the spans of the rows before it are handed on (their traced offsets saved) first: killed
// right after that checkpoint, the collector restarted on what it left hands on the spans of
// the rows after it, and every row's spans have been handed on exactly once.
// The main output starts empty (as Gym creates it) or with a row.
func TestTracesHandedOnBeforeAWaitingCheckpoint(t *testing.T) {
	for _, initial := range []int{0, 1} {
		t.Run(fmt.Sprintf("%d rows at start", initial), func(t *testing.T) { testTracesBeforeCheckpoint(t, initial) })
	}
}

func testTracesBeforeCheckpoint(t *testing.T, initial int) {
	const rows = 3000 // more than one batch (rollouts.MaxSpanBatch) and a long poll
	require.Greater(t, rows*spansPerRow, 2*rollouts.MaxSpanBatch)
	dir := t.TempDir()
	path := filepath.Join(dir, "eval.jsonl")
	appendFile(t, path, evidenceRows(t, 0, initial))

	sink := new(consumertest.TracesSink)
	st := &snapshotAt{Mem: storagetest.NewMem(nil)}
	// The first checkpoint taken mid-poll: some spans of the appended rows handed on, not all.
	st.take = func() (int, bool) {
		n := sink.SpanCount()
		return n, n > initial*spansPerRow && n < rows*spansPerRow
	}
	cfg := tracesConfig(dir, true)
	cfg.CollectionInterval = 2 * time.Millisecond
	_, stop := runBoth(t, nopSettings(), cfg, storagetest.Host{storageID: st}, sink)
	appendFile(t, path, evidenceRows(t, initial, rows-initial)) // read by a poll, while the checkpoints go on
	waitSpans(t, sink, rows*spansPerRow)
	stop()
	st.mu.Lock()
	crashed, before := st.copy, st.taken
	st.mu.Unlock()
	require.NotNil(t, crashed, "no checkpoint came in mid-file")
	t.Logf("killed after a checkpoint with %d spans of %d handed on", before, rows*spansPerRow)

	first := map[string]string{}
	var n int
	for _, td := range sink.AllTraces() { // the spans handed on before the kill, in order
		if n >= before {
			break
		}
		spanKeys(td, first)
		n += td.SpanCount()
	}
	require.Equal(t, before, n, "the kill is between two hand-offs")

	again := new(consumertest.TracesSink)
	metrics, stop := runBoth(t, nopSettings(), tracesConfig(dir, true), storageHost(crashed), again)
	waitSpans(t, again, rows*spansPerRow-before)
	time.Sleep(50 * time.Millisecond) // polls: nothing more comes
	stop()
	_, keys, dup := rolloutsOf(again)
	assert.Zero(t, dup)
	all := map[string]int{}
	for k := range first {
		all[k]++
	}
	for k := range keys {
		all[k]++
	}
	assert.Len(t, all, rows*spansPerRow, "every row's spans")
	twice := 0
	for _, c := range all {
		if c > 1 {
			twice++
		}
	}
	assert.Zero(t, twice, "spans handed on again after the restart")
	assert.Equal(t, int64(rows), scoredTotal(lastMetrics(t, metrics)), "every row counted once")
}
