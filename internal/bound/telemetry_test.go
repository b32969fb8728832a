package bound

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
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
	assert.Equal(t, UnknownMetricsPass, cfg.UnknownMetrics)
	assert.Equal(t, "10m0s", cfg.SeriesIdleTimeout.String())
}
