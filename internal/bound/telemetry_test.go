package bound

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/gym-telemetry/otelcol-gym/internal/bound/internal/metadatatest"
)

// The defaults are the processor's documented ones (docs/processor.md) and valid.
func TestDefaultConfig(t *testing.T) {
	cfg := DefaultConfig()
	require.NoError(t, cfg.Validate())
	assert.Equal(t, 2000, cfg.CardinalityLimit)
	assert.Equal(t, UnknownMetricsBound, cfg.UnknownMetrics)
	assert.Equal(t, "10m0s", cfg.SeriesIdleTimeout.String())
}

// Every series of the telemetry exists at 0 as soon as the Bounder is made, before any batch:
// a dashboard reads "none rejected yet" as 0, not as no data.
func TestTelemetryStartsAtZero(t *testing.T) {
	cfg := DefaultConfig()
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	_, err := New(&cfg, tel.NewTelemetrySettings())
	require.NoError(t, err)

	for _, name := range []string{"attributes_removed", "values_normalised", "points_merged", "points_overflowed", "points_mismatched", "points_unmerged"} {
		m, err := tel.GetMetric("otelcol_processor_gymattrs_" + name)
		require.NoError(t, err, name)
		dps := m.Data.(metricdata.Sum[int64]).DataPoints
		require.Len(t, dps, 1, name)
		assert.Zero(t, dps[0].Value, name)
	}
	m, err := tel.GetMetric("otelcol_processor_gymattrs_points_dropped")
	require.NoError(t, err)
	reasons := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		v, _ := dp.Attributes.Value("reason")
		reasons[v.AsString()] = dp.Value
	}
	want := map[string]int64{}
	for r := dropReason(1); r < numDropReasons; r++ {
		want[r.String()] = 0
	}
	assert.Equal(t, want, reasons)
	g, err := tel.GetMetric("otelcol_processor_gymattrs_state_entries")
	require.NoError(t, err)
	require.Len(t, g.Data.(metricdata.Gauge[int64]).DataPoints, 1)
	assert.Zero(t, g.Data.(metricdata.Gauge[int64]).DataPoints[0].Value)
}

// telemetryBatch makes each of the rules' metrics count something of its own (the rules
// themselves are the other tests'): with cardinality_limit 2, one series is admitted per
// instrument and the next goes to the overflow series.
func telemetryBatch() pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("nemo_gym.telemetry")

	m := sm.Metrics().AppendEmpty()
	m.SetName("gym.rollout.completed_total")
	m.SetUnit("1")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	point := func(kv ...string) {
		dp := sum.DataPoints().AppendEmpty()
		for i := 0; i < len(kv); i += 2 {
			dp.Attributes().PutStr(kv[i], kv[i+1])
		}
		dp.SetStartTimestamp(1)
		dp.SetTimestamp(2)
		dp.SetIntValue(1)
	}
	const outcome, dispatch = "nemo.gym.rollout.outcome", "nemo.gym.rollout.dispatch.name"
	// Every count differs from the others, so that two instruments swapped are seen.
	point(outcome, "scored", dispatch, "a", "note", "x", "k", "1", "j", "2") // admitted; 3 attributes removed
	point(outcome, "scored", dispatch, "a", "note", "y", "k", "1", "j", "2") // 3 removed, merged into the first
	point(outcome, "scored", dispatch, "a")                                  // merged
	for _, d := range []string{"b", "c", "d"} {
		point(outcome, "scored", dispatch, d) // overflowed (merged, but for the first)
	}
	point(outcome, "failed", dispatch, "a", "nemo.gym.failure_kind", "not registered") // normalised (unregistered), overflowed, merged
	for range 3 {
		point(outcome, "bogus", dispatch, "a") // dropped: rejected_value
	}

	g := sm.Metrics().AppendEmpty()
	g.SetName("gym.rollout.completed_total")
	g.SetUnit("1")
	g.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1) // mismatched: not the schema's kind,
	g.Gauge().DataPoints().AppendEmpty().SetIntValue(2)         // bounded by the generic rules: merged

	h := sm.Metrics().AppendEmpty()
	h.SetName("gym.driver.rollout.turns")
	h.SetUnit("{turn}")
	hist := h.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for range 7 {
		hdp := hist.DataPoints().AppendEmpty()
		hdp.SetTimestamp(pcommon.Timestamp(2))
		hdp.SetCount(1)
		hdp.ExplicitBounds().FromRaw([]float64{1, 2}) // no bucket counts: unmerged
	}
	return md
}

// Each of the rules' metrics counts what its name says, with the name, unit and description
// of metadata.yaml (metadatatest reads it), on the meter of the settings New is given.
func TestTelemetryCounts(t *testing.T) {
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	cfg := DefaultConfig()
	cfg.CardinalityLimit = 2
	b, err := New(&cfg, tt.NewTelemetrySettings())
	require.NoError(t, err)
	defer b.Shutdown()
	out, err := b.Process(context.Background(), telemetryBatch())
	require.NoError(t, err)
	assert.Equal(t, 2+1+7, out.DataPointCount(), "the admitted and overflow series, the gauge's, the histogram's")

	n := func(v int64) []metricdata.DataPoint[int64] { return []metricdata.DataPoint[int64]{{Value: v}} }
	metadatatest.AssertEqualProcessorGymattrsValuesNormalised(t, tt, n(1), metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorGymattrsPointsMismatched(t, tt, n(2), metricdatatest.IgnoreTimestamp())
	// Every reason's series exists from the start, at 0 until a point is dropped for it.
	dropped := []metricdata.DataPoint[int64]{
		{Value: 3, Attributes: attribute.NewSet(attribute.String("reason", "rejected_value"))},
	}
	for _, reason := range []string{"wrong_type", "ignored_health_check", "unscored_reward", "state_full", "unknown_metric", "no_recorded_value", "instrument_limit", "unmergeable_overflow"} {
		dropped = append(dropped, metricdata.DataPoint[int64]{Attributes: attribute.NewSet(attribute.String("reason", reason))})
	}
	metadatatest.AssertEqualProcessorGymattrsPointsDropped(t, tt, dropped, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorGymattrsPointsOverflowed(t, tt, n(4), metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorGymattrsPointsMerged(t, tt, n(2+3+1), metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorGymattrsUnknownPoints(t, tt, []metricdata.DataPoint[int64]{
		{Value: 2, Attributes: attribute.NewSet(attribute.String("instrument", "gym.rollout.completed_total"))},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorGymattrsAttributesRemoved(t, tt, n(6), metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorGymattrsPointsUnmerged(t, tt, n(7), metricdatatest.IgnoreTimestamp())
	// Series: the admitted one, the overflow series, the histogram's, the mismatched gauge's;
	// four keys folded; seven cumulative streams (unmerged histogram points are not tracked).
	metadatatest.AssertEqualProcessorGymattrsStateEntries(t, tt, n(4+4+7), metricdatatest.IgnoreTimestamp())
}

// The rules of a gymattrs processor and of gym_console share the telemetry's series: the state
// entries are their sum, each as of its last batch, and a component shut down takes its own
// out.
func TestStateEntriesSumOverBounders(t *testing.T) {
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	cfg := DefaultConfig()
	cfg.CardinalityLimit = 2
	entries := func(v int64) {
		t.Helper()
		metadatatest.AssertEqualProcessorGymattrsStateEntries(t, tt, []metricdata.DataPoint[int64]{{Value: v}}, metricdatatest.IgnoreTimestamp())
	}
	a, err := New(&cfg, tt.NewTelemetrySettings())
	require.NoError(t, err)
	_, err = a.Process(context.Background(), telemetryBatch())
	require.NoError(t, err)
	entries(4 + 4 + 7)

	b, err := New(&cfg, tt.NewTelemetrySettings())
	require.NoError(t, err)
	entries(4 + 4 + 7) // b starts with none: a's stand
	_, err = b.Process(context.Background(), telemetryBatch())
	require.NoError(t, err)
	entries(2 * (4 + 4 + 7))
	_, err = a.Process(context.Background(), pmetric.NewMetrics()) // a's state is unchanged
	require.NoError(t, err)
	entries(2 * (4 + 4 + 7))

	a.Shutdown()
	entries(4 + 4 + 7)
	b.Shutdown()
	entries(0)
}

// A MeterProvider whose type cannot be compared (a wrapper holding a func) is one of its own:
// its Bounders start, process and stop without a panic.
func TestStateEntriesUncomparableProvider(t *testing.T) {
	type funcProvider struct {
		noopmetric.MeterProvider
		shutdown func()
	}
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = funcProvider{MeterProvider: noopmetric.NewMeterProvider(), shutdown: func() {}}
	cfg := DefaultConfig()
	for range 2 {
		b, err := New(&cfg, set)
		require.NoError(t, err)
		_, err = b.Process(context.Background(), telemetryBatch())
		require.NoError(t, err)
		defer b.Shutdown()
	}
}
