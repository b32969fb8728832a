package flight

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/pdatatest"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// sp is one span a test sends: its rollout id, name, and the sender's end time.
type sp struct {
	id, name string
	end      time.Time
	err      bool
}

// traces is one batch of a sender whose resource names run and server.
func traces(run, server string, spans ...sp) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	if run != "" {
		rs.Resource().Attributes().PutStr(KeyRun, run)
	}
	rs.Resource().Attributes().PutStr(KeyServer, server)
	ss := rs.ScopeSpans().AppendEmpty()
	for _, s := range spans {
		span := ss.Spans().AppendEmpty()
		span.SetName(s.name)
		span.SetStartTimestamp(pcommon.NewTimestampFromTime(s.end.Add(-time.Second)))
		span.SetEndTimestamp(pcommon.NewTimestampFromTime(s.end))
		span.SetTraceID(pcommon.TraceID{1, byte(len(s.id))})
		span.SetSpanID(pcommon.SpanID{2, byte(len(s.name))})
		if s.id != "" {
			span.Attributes().PutStr(KeyRolloutID, s.id)
		}
		if s.err {
			span.Status().SetCode(ptrace.StatusCodeError)
		}
	}
	return td
}

func newTest(cfg Config) (*Recorder, *clock.Fake) {
	c := clock.NewFake(t0)
	return New(cfg, c), c
}

var testCfg = Config{MaxRollouts: 100, StallAfter: 5 * time.Minute, FinishedAfter: 30 * time.Minute}

// points reads a collection: "metric|run|server|stage" -> value.
func points(md pmetric.Metrics) map[string]float64 {
	out := map[string]float64{}
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		run := str(rm.Resource().Attributes(), KeyRun)
		ms := rm.ScopeMetrics().At(0).Metrics()
		for j := 0; j < ms.Len(); j++ {
			m := ms.At(j)
			var dps pmetric.NumberDataPointSlice
			if m.Type() == pmetric.MetricTypeGauge {
				dps = m.Gauge().DataPoints()
			} else {
				dps = m.Sum().DataPoints()
			}
			for k := 0; k < dps.Len(); k++ {
				dp := dps.At(k)
				key := fmt.Sprintf("%s|%s|%s|%s", m.Name(), run, str(dp.Attributes(), KeyServer), str(dp.Attributes(), KeyStage))
				if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble {
					out[key] = dp.DoubleValue()
				} else {
					out[key] = float64(dp.IntValue())
				}
			}
		}
	}
	return out
}

func collect(r *Recorder) (map[string]float64, []plog.LogRecord) {
	md, ld := pmetric.NewMetrics(), plog.NewLogs()
	r.Collect(md, ld)
	var recs []plog.LogRecord
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		lrs := ld.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords()
		for j := 0; j < lrs.Len(); j++ {
			recs = append(recs, lrs.At(j))
		}
	}
	return points(md), recs
}

// TestFinishedBusySilent: of three rollouts, the finished one is not in flight, the busy one
// (a span every minute) never stalls, the silent one stalls after stall_after, is logged once,
// and is taken as finished after finished_after.
func TestFinishedBusySilent(t *testing.T) {
	r, c := newTest(testCfg)
	r.ConsumeTraces(traces("run-1", "math_agent",
		sp{id: "done", name: "gym.agent.responses", end: t0},
		sp{id: "busy", name: "gym.model.chat_completions", end: t0},
		sp{id: "silent", name: "gym.sandbox.exec", end: t0}))
	r.ConsumeTraces(traces("run-1", "orchestrator", sp{id: "done", name: RolloutSpan, end: t0}))
	got, logs := collect(r)
	assert.Equal(t, map[string]float64{
		"gym.rollout.in_flight|run-1|math_agent|model_call": 1,
		"gym.rollout.in_flight|run-1|math_agent|sandbox":    1,
		"gym.rollout.oldest_in_flight_age|run-1||":          0,
	}, got)
	assert.Empty(t, logs)

	for i := 0; i < 6; i++ { // six minutes: the busy one's spans go on
		c.Advance(time.Minute)
		r.ConsumeTraces(traces("run-1", "math_model", sp{id: "busy", name: "HTTP POST", end: t0.Add(time.Duration(i) * time.Minute), err: i == 0}))
	}
	got, logs = collect(r)
	assert.Equal(t, map[string]float64{
		"gym.rollout.in_flight|run-1|math_model|http":       1,
		"gym.rollout.in_flight|run-1|math_agent|sandbox":    1,
		"gym.rollout.in_flight|run-1|math_agent|model_call": 0, // drained: once more at zero
		"gym.rollout.stalled|run-1|math_agent|sandbox":      1,
		"gym.rollout.stalls_total|run-1|math_agent|sandbox": 1,
		"gym.rollout.oldest_in_flight_age|run-1||":          360,
	}, got)
	require.Len(t, logs, 1)
	a := logs[0].Attributes().AsRaw()
	assert.Equal(t, "gym.rollout.stalled", logs[0].EventName())
	assert.Equal(t, plog.SeverityNumberWarn, logs[0].SeverityNumber())
	assert.Equal(t, map[string]any{KeyRolloutID: "silent", KeyRun: "run-1", KeyServer: "math_agent", KeyStage: "sandbox",
		"nemo.gym.rollout.elapsed_s": 360.0, "nemo.gym.rollout.idle_s": 360.0, "nemo.gym.rollout.last_span": "gym.sandbox.exec",
		"nemo.gym.rollout.calls": int64(1), "nemo.gym.rollout.errors": int64(0)}, a)
	assert.Contains(t, logs[0].Body().Str(), "rollout silent stalled: no span for 6m0s")
	assert.Equal(t, pcommon.TraceID{1, 6}, logs[0].TraceID(), "the last span's trace")
	assert.Equal(t, pcommon.SpanID{2, byte(len("gym.sandbox.exec"))}, logs[0].SpanID())

	_, logs = collect(r)
	assert.Empty(t, logs, "a stall is logged once")

	c.Advance(25 * time.Minute) // the silent one: 31 minutes; the busy one: 25
	got, logs = collect(r)
	assert.Equal(t, 1.0, got["gym.rollout.in_flight|run-1|math_model|http"])
	assert.Equal(t, 1.0, got["gym.rollout.stalled|run-1|math_model|http"], "the busy one went quiet")
	assert.Equal(t, 0.0, got["gym.rollout.in_flight|run-1|math_agent|sandbox"], "the silent one finished")
	assert.Equal(t, 0.0, got["gym.rollout.stalled|run-1|math_agent|sandbox"])
	require.Len(t, logs, 2) // by first seen: the busy one's stall, the silent one's end
	assert.Equal(t, "gym.rollout.stalled", logs[0].EventName())
	assert.Equal(t, "busy", logs[0].Attributes().AsRaw()[KeyRolloutID])
	assert.Equal(t, "gym.rollout.finished", logs[1].EventName())
	assert.Equal(t, true, logs[1].Attributes().AsRaw()["nemo.gym.rollout.silent"])
	assert.Equal(t, int64(1), r.Stats().Expired)

	// Taken as finished after its silence, it is forgotten: its next span starts it again.
	r.ConsumeTraces(traces("run-1", "math_agent", sp{id: "silent", name: "gym.verify", end: t0}))
	got, logs = collect(r)
	assert.Equal(t, 1.0, got["gym.rollout.in_flight|run-1|math_agent|verify"])
	assert.Empty(t, logs)
	assert.Equal(t, int64(0), r.Stats().LateSpans)
}

// TestResumeAndLate: a stalled rollout whose span arrives resumes (logged), its gym.rollout
// span finishes it (logged only when stalled), and a span after it is late, not a new rollout.
func TestResumeAndLate(t *testing.T) {
	r, c := newTest(testCfg)
	r.ConsumeTraces(traces("", "agent", sp{id: "a", name: "gym.verify", end: t0}))
	c.Advance(6 * time.Minute)
	got, logs := collect(r)
	assert.Equal(t, 1.0, got["gym.rollout.stalled||agent|verify"], "no run: the empty resource")
	require.Len(t, logs, 1)
	c.Advance(time.Minute)
	r.ConsumeTraces(traces("", "agent", sp{id: "a", name: "gym.model.responses", end: t0}))
	got, logs = collect(r)
	assert.Equal(t, 0.0, got["gym.rollout.stalled||agent|verify"])
	assert.Equal(t, 1.0, got["gym.rollout.in_flight||agent|model_call"])
	require.Len(t, logs, 1)
	assert.Equal(t, "gym.rollout.resumed", logs[0].EventName())
	assert.Equal(t, 420.0, logs[0].Attributes().AsRaw()["nemo.gym.rollout.idle_s"])
	r.ConsumeTraces(traces("", "agent", sp{id: "a", name: RolloutSpan, end: t0}, sp{id: "a", name: "HTTP POST", end: t0}))
	got, logs = collect(r)
	assert.Equal(t, 0.0, got["gym.rollout.in_flight||agent|model_call"])
	assert.Empty(t, logs, "a rollout that was not stalled finishes without a log record")
	assert.Equal(t, int64(1), r.Stats().LateSpans)

	// finished_after past its last span, the finished rollout is forgotten (and its run's
	// stall counter with it); a span with its id then starts a new rollout.
	c.Advance(29 * time.Minute)
	collect(r)
	assert.Equal(t, 1, r.Kept(), "kept finished_after past its last span")
	c.Advance(2 * time.Minute)
	got, _ = collect(r)
	assert.Equal(t, 0, r.Kept())
	assert.Empty(t, got, "nothing in flight, no counter of a run no longer kept")
	r.ConsumeTraces(traces("", "agent", sp{id: "a", name: "gym.verify", end: t0}))
	got, _ = collect(r)
	assert.Equal(t, 1.0, got["gym.rollout.in_flight||agent|verify"])
}

// TestStallSeriesBounded: past maxStallSeries stall counters, a new series' stall is counted in
// its run's overflow series.
func TestStallSeriesBounded(t *testing.T) {
	r, c := newTest(Config{MaxRollouts: maxStallSeries + 10, StallAfter: time.Minute, FinishedAfter: time.Hour})
	for i := range maxStallSeries + 5 {
		r.ConsumeTraces(traces("r", fmt.Sprint("server-", i), sp{id: fmt.Sprint(i), name: "gym.verify", end: t0}))
	}
	c.Advance(2 * time.Minute)
	md := pmetric.NewMetrics()
	r.Collect(md, plog.NewLogs())
	var series, overflow int
	for _, m := range metricsOf(md, MetricStalls) {
		for _, dp := range m.Sum().DataPoints().All() {
			series++
			if _, ok := dp.Attributes().Get("otel.metric.overflow"); ok {
				overflow++
				assert.Equal(t, int64(5), dp.IntValue(), "the five stalls beyond the limit")
			}
		}
	}
	assert.Equal(t, maxStallSeries+1, series)
	assert.Equal(t, 1, overflow)
}

func metricsOf(md pmetric.Metrics, name string) []pmetric.Metric { return pdatatest.Named(md, name) }

// TestSkewedSender: a sender whose clock is hours ahead or behind changes nothing: idle time is
// the collector's, from when it received the spans.
func TestSkewedSender(t *testing.T) {
	for _, skew := range []time.Duration{-5 * time.Hour, 7 * time.Hour} {
		r, c := newTest(testCfg)
		r.ConsumeTraces(traces("r", "s", sp{id: "busy", name: "gym.verify", end: t0.Add(skew)}, sp{id: "silent", name: "gym.verify", end: t0.Add(skew)}))
		for i := 0; i < 10; i++ {
			c.Advance(time.Minute)
			r.ConsumeTraces(traces("r", "s", sp{id: "busy", name: "gym.verify", end: t0.Add(skew + time.Duration(i)*time.Minute)}))
		}
		got, _ := collect(r)
		assert.Equal(t, 2.0, got["gym.rollout.in_flight|r|s|verify"], "skew %s", skew)
		assert.Equal(t, 1.0, got["gym.rollout.stalled|r|s|verify"], "skew %s: neither both nor none", skew)
	}
}

// TestMaxRollouts: past max_rollouts the oldest is forgotten (a finished one first), an
// in-flight one counted as evicted.
func TestMaxRollouts(t *testing.T) {
	r, c := newTest(Config{MaxRollouts: 3, StallAfter: time.Minute, FinishedAfter: time.Hour})
	for i := 0; i < 3; i++ {
		r.ConsumeTraces(traces("r", "s", sp{id: fmt.Sprint("r", i), name: "gym.verify", end: t0}))
		c.Advance(time.Second)
	}
	r.ConsumeTraces(traces("r", "s", sp{id: "r1", name: RolloutSpan, end: t0}))
	r.ConsumeTraces(traces("r", "s", sp{id: "r3", name: "gym.verify", end: t0}))
	assert.Equal(t, int64(0), r.Stats().Evicted, "the finished r1 went first")
	r.ConsumeTraces(traces("r", "s", sp{id: "r4", name: "gym.verify", end: t0}))
	assert.Equal(t, int64(1), r.Stats().Evicted, "then the oldest in flight, r0")
	got, _ := collect(r)
	assert.Equal(t, 3.0, got["gym.rollout.in_flight|r|s|verify"])
	assert.Equal(t, 1.0, got["gym.rollout.oldest_in_flight_age|r||"], "r2, seen a second ago, is the oldest now")
	_, kept := r.byID[rolloutKey{"r", "r0"}]
	assert.False(t, kept)
}

// TestInvalidAndCapped: a rollout id that is not a string is counted; long strings are capped.
func TestInvalidAndCapped(t *testing.T) {
	r, _ := newTest(testCfg)
	td := traces("r", strings.Repeat("s", 1000), sp{name: "gym.verify", end: t0}, sp{id: strings.Repeat("x", 1000), name: strings.Repeat("n", 1000), end: t0})
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().PutInt(KeyRolloutID, 7)
	r.ConsumeTraces(td)
	assert.Equal(t, int64(1), r.Stats().InvalidSpans)
	require.Len(t, r.byID, 1)
	for _, ro := range r.byID {
		assert.Len(t, ro.id, maxStringBytes)
		assert.Len(t, ro.server, maxStringBytes)
		assert.Len(t, ro.lastSpan, maxStringBytes)
		assert.Equal(t, StageOther, ro.stage)
	}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	err := Config{MaxRollouts: 0, StallAfter: time.Minute, FinishedAfter: time.Second}.Validate()
	assert.ErrorContains(t, err, "max_rollouts")
	assert.ErrorContains(t, err, "finished_after")
	assert.ErrorContains(t, Config{MaxRollouts: 1, FinishedAfter: time.Second}.Validate(), "stall_after")
}

// BenchmarkKnownRollout: a span of a rollout already in flight allocates nothing.
func BenchmarkKnownRollout(b *testing.B) {
	r, _ := newTest(testCfg)
	td := traces("run", "model", sp{id: "a", name: "gym.model.chat_completions", end: t0}, sp{id: "a", name: "HTTP POST", end: t0})
	r.ConsumeTraces(td)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.ConsumeTraces(td)
	}
}

func TestKnownRolloutAllocatesNothing(t *testing.T) {
	r, _ := newTest(testCfg)
	td := traces("run", "model", sp{id: "a", name: "gym.model.chat_completions", end: t0}, sp{id: "a", name: "HTTP POST", end: t0})
	r.ConsumeTraces(td)
	assert.Zero(t, testing.AllocsPerRun(100, func() { r.ConsumeTraces(td) }))
}

// TestEvidenceScopeIgnored: the spans the gym receiver makes from a run file's rollout
// evidence (a finished rollout's history) are never taken for live activity.
func TestEvidenceScopeIgnored(t *testing.T) {
	r, _ := newTest(testCfg)
	td := traces("run", "agent", sp{id: "a", name: "chat m", end: t0}, sp{id: "b", name: "execute_tool bash", end: t0})
	td.ResourceSpans().At(0).ScopeSpans().At(0).Scope().SetName(schema.EvidenceScopeName)
	r.ConsumeTraces(td)
	got, logs := collect(r)
	assert.Equal(t, 0, r.Kept())
	assert.Empty(t, got)
	assert.Empty(t, logs)
	// The same spans under another scope are a rollout's live spans.
	td.ResourceSpans().At(0).ScopeSpans().At(0).Scope().SetName("gym")
	r.ConsumeTraces(td)
	assert.Equal(t, 2, r.Kept())
}
