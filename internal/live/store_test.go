package live

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// batch builds pmetric.Metrics one resource at a time.
type batch struct{ md pmetric.Metrics }

func newBatch() *batch { return &batch{md: pmetric.NewMetrics()} }

func (b *batch) resource(attrs ...string) pmetric.MetricSlice {
	rm := b.md.ResourceMetrics().AppendEmpty()
	for i := 0; i+1 < len(attrs); i += 2 {
		rm.Resource().Attributes().PutStr(attrs[i], attrs[i+1])
	}
	return rm.ScopeMetrics().AppendEmpty().Metrics()
}

func putAttrs(m pcommon.Map, attrs []string) {
	for i := 0; i+1 < len(attrs); i += 2 {
		m.PutStr(attrs[i], attrs[i+1])
	}
}

func sum(ms pmetric.MetricSlice, name string, v float64, delta bool, attrs ...string) {
	m := ms.AppendEmpty()
	m.SetName(name)
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	if delta {
		s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	}
	dp := s.DataPoints().AppendEmpty()
	dp.SetDoubleValue(v)
	putAttrs(dp.Attributes(), attrs)
}

func gauge(ms pmetric.MetricSlice, name string, v float64, attrs ...string) {
	m := ms.AppendEmpty()
	m.SetName(name)
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetIntValue(int64(v))
	if v != math.Trunc(v) {
		dp.SetDoubleValue(v)
	}
	putAttrs(dp.Attributes(), attrs)
}

func hist(ms pmetric.MetricSlice, name string, bounds []float64, counts []uint64, total float64, attrs ...string) {
	m := ms.AppendEmpty()
	m.SetName(name)
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := h.DataPoints().AppendEmpty()
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	var n uint64
	for _, c := range counts {
		n += c
	}
	dp.SetCount(n)
	dp.SetSum(total)
	putAttrs(dp.Attributes(), attrs)
}

func serverRes(run, name string) []string {
	return []string{KeyRun, run, keyServiceName, "nemo-gym/" + name, keyInstance, run + "-" + name, keyServerName, name, keyHost, "node-1"}
}

// sampleBatch is one export of run "r1": a driver, a model server, the flight recorder's
// resource, and a price series.
func sampleBatch() pmetric.Metrics {
	b := newBatch()
	drv := b.resource(serverRes("r1", "driver")...)
	sum(drv, "gym.rollout.completed_total", 7, false, "nemo.gym.rollout.outcome", "scored", "nemo.gym.rollout.dispatch.name", "math")
	sum(drv, "gym.rollout.completed_total", 2, false, "nemo.gym.rollout.outcome", "failed", "nemo.gym.failure_kind", "transport_timeout", "nemo.gym.rollout.dispatch.name", "math")
	sum(drv, "gym.rollout.completed_total", 1, false, "nemo.gym.rollout.outcome", "failed", "nemo.gym.rollout.dispatch.name", "code")
	sum(drv, "gym.rollout.rewarded_total", 4, false, "nemo.gym.rollout.reward.range", "full", "nemo.gym.rollout.dispatch.name", "math", "nemo.gym.rollout.masked", "false")
	sum(drv, "gym.rollout.rewarded_total", 3, false, "nemo.gym.rollout.reward.range", "zero", "nemo.gym.rollout.dispatch.name", "math", "nemo.gym.rollout.masked", "false")
	hist(drv, "gym.rollout.tokens", []float64{100, 1000}, []uint64{1, 2, 0}, 1500, "gen_ai.token.type", "input", "gen_ai.response.model", "m1")
	hist(drv, "gym.event_loop.lag_ms", []float64{1, 10, 100}, []uint64{50, 40, 10, 0}, 300, "nemo.gym.event_loop", "main")
	gauge(drv, "process.memory.usage", 1<<20)
	sum(drv, "gym.unknown.thing_total", 99, false) // not read by the page
	mdl := b.resource(serverRes("r1", "model")...)
	hist(mdl, "gym.model_call.tokens", []float64{16, 64}, []uint64{0, 3, 1}, 200, "nemo.gym.model_call.token.type", "output", "nemo.gym.server.name", "model")
	gauge(mdl, "gym.process.gpu.utilization_percent", 80, "nemo.gym.gpu.index", "0")
	gauge(mdl, "gym.process.gpu.utilization_percent", 60, "nemo.gym.gpu.index", "1")
	flight := b.resource(KeyRun, "r1")
	gauge(flight, "gym.rollout.in_flight", 5, "nemo.gym.server.name", "agent", "nemo.gym.rollout.stage", "model_call")
	gauge(flight, "gym.rollout.in_flight", 2, "nemo.gym.server.name", "agent", "nemo.gym.rollout.stage", "verify")
	gauge(flight, "gym.rollout.stalled", 2, "nemo.gym.server.name", "agent", "nemo.gym.rollout.stage", "verify")
	gauge(flight, "gym.rollout.oldest_in_flight_age", 42.5)
	gauge(b.resource(), PriceMetric, 3, "gen_ai.response.model", "m1", "gen_ai.token.type", "input")
	return b.md
}

func newTestStore(lim Limits) (*Store, *clock.Fake) {
	clk := clock.NewFake(t0)
	return NewStore(lim, clk), clk
}

func TestStoreView(t *testing.T) {
	s, _ := newTestStore(DefaultLimits())
	s.Consume(sampleBatch())
	s.Consume(sampleBatch()) // cumulative: the same totals again replace, never add
	v := s.Run("r1")
	require.NotNil(t, v)
	assert.Equal(t, map[string]float64{"scored": 7, "failed": 3}, v.Completed)
	assert.Equal(t, 10.0, v.CompletedTotal)
	assert.Equal(t, []Count{{"transport_timeout", 2}, {schema.Absent, 1}}, v.Failures)
	assert.Equal(t, []RewardRow{{Dispatch: "math", ByRange: map[string]float64{"full": 4, "zero": 3}, Total: 7}}, v.Rewards)
	assert.Equal(t, []TokenRow{
		{Instrument: "gym.model_call.tokens", Type: "output", Server: "model", Tokens: 200, Samples: 4},
		{Instrument: "gym.rollout.tokens", Type: "input", Model: "m1", Tokens: 1500, Samples: 3},
	}, v.Tokens)
	assert.Equal(t, []FlightRow{{"agent", "verify", 2, 2}, {"agent", "model_call", 5, 0}}, v.Flight, "stalled first")
	assert.Equal(t, 7.0, v.InFlight)
	assert.Equal(t, 2.0, v.Stalled)
	require.NotNil(t, v.OldestAge)
	assert.Equal(t, 42.5, *v.OldestAge)
	require.Len(t, v.ServerRows, 2, "the flight recorder's resource names no server")
	drv, mdl := v.ServerRows[0], v.ServerRows[1]
	assert.Equal(t, "r1-driver", drv.Instance)
	require.NotNil(t, drv.Lag)
	assert.Equal(t, uint64(100), drv.Lag.Count)
	assert.InDelta(t, 3.0, *drv.Lag.Mean, 1e-9)
	assert.InDelta(t, 91.0, *drv.Lag.P99, 1e-9, "p99 within the (10, 100] bucket")
	assert.Equal(t, float64(1<<20), *drv.Memory)
	assert.Equal(t, 80.0, *mdl.GPUUtil, "the busiest GPU")
	require.NotNil(t, v.Cost, "price series arrived")
	assert.Equal(t, []Price{{"m1", "input", 3}}, v.Cost.Prices)
	assert.Nil(t, s.Run("r2"))
}

func TestDeltaAdds(t *testing.T) {
	s, _ := newTestStore(DefaultLimits())
	for range 3 {
		b := newBatch()
		sum(b.resource(serverRes("r1", "driver")...), "gym.rollout.completed_total", 2, true, "nemo.gym.rollout.outcome", "scored")
		s.Consume(b.md)
	}
	assert.Equal(t, 6.0, s.Run("r1").CompletedTotal)
}

// One series whatever the order of its attributes; another resource is another series.
func TestSeriesIdentity(t *testing.T) {
	s, _ := newTestStore(DefaultLimits())
	b := newBatch()
	ms := b.resource(serverRes("r1", "driver")...)
	sum(ms, "gym.rollout.completed_total", 3, false, "nemo.gym.rollout.outcome", "scored", "nemo.gym.rollout.dispatch.name", "math")
	sum(ms, "gym.rollout.completed_total", 4, false, "nemo.gym.rollout.dispatch.name", "math", "nemo.gym.rollout.outcome", "scored")
	sum(b.resource(serverRes("r1", "driver2")...), "gym.rollout.completed_total", 5, false, "nemo.gym.rollout.outcome", "scored")
	s.Consume(b.md)
	v := s.Run("r1")
	assert.Equal(t, 9.0, v.CompletedTotal, "4 replaced 3; driver2's 5 added")
	assert.Equal(t, 2, v.Series)
}

func TestNoRun(t *testing.T) {
	s, _ := newTestStore(DefaultLimits())
	b := newBatch()
	sum(b.resource(keyServiceName, "x"), "gym.rollout.completed_total", 1, false, "nemo.gym.rollout.outcome", "scored")
	s.Consume(b.md)
	require.Len(t, s.Runs(), 1)
	assert.Equal(t, NoRun, s.Runs()[0].ID)
}

func TestBounds(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxRuns, lim.MaxServers, lim.MaxSeries = 2, 1, 3
	s, clk := newTestStore(lim)
	for _, run := range []string{"a", "b", "c"} {
		b := newBatch()
		for _, srv := range []string{"s1", "s2"} {
			ms := b.resource(serverRes(run, srv)...)
			for _, o := range []string{"scored", "failed"} {
				sum(ms, "gym.rollout.completed_total", 1, false, "nemo.gym.rollout.outcome", o)
			}
		}
		s.Consume(b.md)
		clk.Advance(time.Second)
	}
	runs := s.Runs()
	require.Len(t, runs, 2)
	assert.Equal(t, "c", runs[0].ID, "the most recent first")
	assert.Equal(t, "b", runs[1].ID, "a, the least recently updated, was dropped")
	st := s.Status()
	assert.Equal(t, Dropped{Runs: 1, Servers: 3, Series: 3}, st.Dropped, "per run: s2 refused, its second series the fourth")
	assert.Equal(t, 3, s.Run("c").Series)
	assert.Len(t, s.Run("c").ServerRows, 1)
}

func TestExpiry(t *testing.T) {
	lim := DefaultLimits()
	lim.SeriesExpiration = time.Minute
	s, clk := newTestStore(lim)
	b := newBatch()
	sum(b.resource(serverRes("r1", "driver")...), "gym.rollout.completed_total", 1, false, "nemo.gym.rollout.outcome", "scored")
	s.Consume(b.md)
	clk.Advance(2 * time.Minute)
	s.Tick()
	v := s.Run("r1")
	require.NotNil(t, v, "the run stays while its charts have points")
	assert.Zero(t, v.Series)
	clk.Advance(lim.Horizon)
	s.Tick()
	assert.Nil(t, s.Run("r1"), "nothing left to chart")
}

func completedBatch(run string, n float64, types ...string) pmetric.Metrics {
	b := newBatch()
	ms := b.resource(serverRes(run, "driver")...)
	sum(ms, "gym.rollout.completed_total", n, false, "nemo.gym.rollout.outcome", "scored")
	for _, ty := range types {
		hist(ms, "gym.rollout.tokens", []float64{10}, []uint64{0, 1}, n, "gen_ai.token.type", ty)
	}
	return b.md
}

// The charts keep Horizon/Resolution points, at most MaxChartSeries series each with the rest
// in "other"; the rate per minute comes from the point a minute back.
func TestHistoryBounds(t *testing.T) {
	lim := DefaultLimits()
	lim.Resolution, lim.Horizon, lim.MaxChartSeries = 10*time.Second, 5*time.Minute, 2
	s, clk := newTestStore(lim)
	for i := range 100 {
		s.Consume(completedBatch("r1", float64(6*i), "input", "output", "reasoning", "cached_input"))
		s.Tick()
		clk.Advance(10 * time.Second)
	}
	h := s.History("r1")
	require.NotNil(t, h)
	assert.Len(t, h.T, 30, "5 minutes at 10s")
	assert.Equal(t, 10.0, h.ResolutionS)
	assert.Equal(t, 300.0, h.HorizonS)
	for i := 1; i < len(h.T); i++ {
		assert.Equal(t, h.T[i-1]+10, h.T[i])
	}
	names := []string{}
	for _, sr := range h.Charts["tokens"].Series {
		names = append(names, sr.Name)
		assert.Len(t, sr.Values, 30)
	}
	assert.Equal(t, []string{"rollout cached_input", "rollout input", otherSeries}, names, "the first two in name order, then other")
	last := h.Charts["tokens"].Series[2].Values[29]
	assert.Equal(t, float32(2*6*99), last, "two types folded into other")
	assert.Equal(t, float32(6*99), h.Charts["completed"].Series[0].Values[29])
	v := s.Run("r1")
	require.NotNil(t, v.PerMinute)
	assert.InDelta(t, 36.0, *v.PerMinute, 1e-9, "6 per 10s")
}

// A skipped slot has no point (null), and a second tick in one slot replaces its point.
func TestHistoryGaps(t *testing.T) {
	lim := DefaultLimits()
	lim.Resolution, lim.Horizon = 10*time.Second, time.Minute
	s, clk := newTestStore(lim)
	s.Consume(completedBatch("r1", 1))
	s.Tick()
	s.Consume(completedBatch("r1", 2))
	s.Tick()
	clk.Advance(30 * time.Second)
	s.Tick()
	h := s.History("r1")
	assert.Len(t, h.T, 4)
	vals := h.Charts["completed"].Series[0].Values
	b, err := vals.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, "[2,null,null,2]", string(b))
	assert.Nil(t, s.Run("r1").PerMinute, "no point a minute back")
}

func TestQuantile(t *testing.T) {
	bounds := []float64{1, 2, 4}
	assert.InDelta(t, 1.5, quantile(0.5, bounds, []uint64{0, 10, 0, 0}), 1e-9)
	assert.Equal(t, 4.0, quantile(0.99, bounds, []uint64{0, 0, 0, 5}), "the +Inf bucket: the highest bound")
	assert.True(t, math.IsNaN(quantile(0.99, bounds, []uint64{0, 0, 0, 0})))
	assert.True(t, math.IsNaN(quantile(0.99, bounds, []uint64{1})), "bounds and buckets disagree")
	assert.True(t, math.IsNaN(quantile(0.99, nil, []uint64{3})), "no bounds: only the +Inf bucket")
}

func TestParseSelfMetrics(t *testing.T) {
	text := `# HELP otelcol_receiver_accepted_metric_points_total Number of points.
# TYPE otelcol_receiver_accepted_metric_points_total counter
otelcol_receiver_accepted_metric_points_total{receiver="gym",transport="http"} 10
otelcol_receiver_accepted_metric_points_total{receiver="otlp",transport="grpc"} 5
otelcol_receiver_gym_lines_rejected{reason="invalid_json",x="a\"b"} 2 1700000000000
otelcol_receiver_gym_lines_rejected{reason="too_long"} 1
otelcol_exporter_queue_size{exporter="otlp"} 3
go_goroutines 12
broken{a="b" 1
`
	fams, bad, err := ParseSelfMetrics(strings.NewReader(text))
	require.NoError(t, err)
	assert.Equal(t, 1, bad)
	got := map[string]Family{}
	for _, f := range fams {
		got[f.Name] = f
	}
	assert.Equal(t, Family{Name: "otelcol_receiver_accepted_metric_points", Title: "metric points accepted", Total: 15,
		By: []Count{{"gym", 10}, {"otlp", 5}}}, got["otelcol_receiver_accepted_metric_points"])
	assert.Equal(t, 3.0, got["otelcol_receiver_gym_lines_rejected"].Total)
	assert.Equal(t, []Count{{"invalid_json", 2}, {"too_long", 1}}, got["otelcol_receiver_gym_lines_rejected"].By)
	assert.Equal(t, 3.0, got["otelcol_exporter_queue_size"].Total)
	assert.Len(t, fams, len(healthFamilies), "every family, at 0 when absent")
}

func TestLimitsCheck(t *testing.T) {
	require.NoError(t, DefaultLimits().Check())
	bad := DefaultLimits()
	bad.MaxRuns, bad.MaxChartSeries, bad.SeriesExpiration = 0, 0, 0
	bad.Resolution, bad.Horizon = time.Second, 10*time.Hour
	err := bad.Check()
	require.Error(t, err)
	for _, k := range []string{"max_runs", "max_chart_series", "series_expiration", "horizon"} {
		assert.Contains(t, err.Error(), k)
	}
}

// Points of odd shapes are taken without a panic: a histogram without bounds or buckets, an
// exponential histogram and a summary of an instrument the page reads, a point flagged as
// having no value, a price series beyond those kept (counted).
func TestOddPoints(t *testing.T) {
	s, _ := newTestStore(DefaultLimits())
	b := newBatch()
	ms := b.resource(serverRes("r1", "driver")...)
	hist(ms, "gym.event_loop.lag_ms", nil, []uint64{4}, 8)
	hist(ms, "gym.gc.pause_duration_ms", nil, nil, 0)
	m := ms.AppendEmpty()
	m.SetName("gym.event_loop.lag_ms")
	m.SetEmptyExponentialHistogram().DataPoints().AppendEmpty().SetCount(3)
	m = ms.AppendEmpty()
	m.SetName("gym.gc.pause_duration_ms")
	m.SetEmptySummary().DataPoints().AppendEmpty().SetCount(3)
	sum(ms, "gym.rollout.completed_total", 5, false, "nemo.gym.rollout.outcome", "scored")
	ms.At(ms.Len() - 1).Sum().DataPoints().At(0).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	prices := b.resource()
	for i := range maxPrices + 2 {
		gauge(prices, PriceMetric, 1, "gen_ai.response.model", fmt.Sprint("m", i), "gen_ai.token.type", "input")
	}
	s.Consume(b.md)
	v := s.Run("r1")
	require.NotNil(t, v)
	assert.Zero(t, v.CompletedTotal, "a point with no recorded value is no value")
	require.NotNil(t, v.ServerRows[0].Lag)
	assert.Equal(t, uint64(4), v.ServerRows[0].Lag.Count)
	assert.Equal(t, 2.0, *v.ServerRows[0].Lag.Mean)
	assert.Nil(t, v.ServerRows[0].Lag.P99, "no bounds: no quantile")
	assert.Nil(t, v.ServerRows[0].GCPause, "no sample")
	assert.Len(t, v.Cost.Prices, maxPrices)
	assert.Equal(t, uint64(2), s.Status().Dropped.Prices)
}
