package bound

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// A Bounder is not built with an instrument missing: record would panic on its first batch.
func TestNewNeedsEveryInstrument(t *testing.T) {
	cfg := DefaultConfig()
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	full := testTelemetry(t, tel)
	_, err := New(&cfg, full)
	require.NoError(t, err)

	missing := full
	missing.PointsDropped = nil
	missing.StateEntries = nil
	_, err = New(&cfg, missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PointsDropped")
	assert.Contains(t, err.Error(), "StateEntries")
	assert.NotContains(t, err.Error(), "PointsMerged")
}

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
	_, err := New(&cfg, testTelemetry(t, tel))
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
