package gymattrs

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/gym-telemetry/otelcol-gym/processor/gymattrs/internal/metadatatest"
)

// telemetryBatch makes each of the processor's metrics count something of its own (the rules
// themselves are internal/bound's tests): with cardinality_limit 2, one series is admitted per
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

// The processor hands the engine its own instruments: each of its metrics counts what its
// name says, under the processor's scope (metadatatest reads the processor's metadata.yaml).
func TestProcessorTelemetry(t *testing.T) {
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	cfg := createDefaultConfig().(*Config)
	cfg.CardinalityLimit = 2
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(context.Background(), metadatatest.NewSettings(tt), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, p.ConsumeMetrics(context.Background(), telemetryBatch()))
	require.NoError(t, p.Shutdown(context.Background()))

	require.Len(t, sink.AllMetrics(), 1)
	assert.Equal(t, 2+1+7, sink.AllMetrics()[0].DataPointCount(), "the admitted and overflow series, the gauge's, the histogram's")

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

// A configuration whose rules cannot be built is refused at creation.
func TestProcessorBadRules(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.FailureKinds = []string{""}
	_, err := NewFactory().CreateMetrics(context.Background(), metadatatest.NewSettings(componenttest.NewTelemetry()), cfg, new(consumertest.MetricsSink))
	require.Error(t, err)
}
