package gymattrs

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gym-telemetry/otelcol-gym/processor/gymattrs/internal/metadata"
)

// The processor hands the rules its own telemetry settings: their metrics (internal/bound's
// metadata.yaml; what they count is internal/bound's test) are made on its meter provider as
// soon as it is created, every reason of points_dropped at 0.
func TestProcessorTelemetry(t *testing.T) {
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tt.NewTelemetrySettings()
	p, err := NewFactory().CreateMetrics(context.Background(), set, createDefaultConfig(), new(consumertest.MetricsSink))
	require.NoError(t, err)
	m, err := tt.GetMetric("otelcol_processor_gymattrs_points_dropped")
	require.NoError(t, err)
	assert.Len(t, m.Data.(metricdata.Sum[int64]).DataPoints, 9)
	require.NoError(t, p.Shutdown(context.Background()))
}

// A configuration whose rules cannot be built is refused at creation.
func TestProcessorBadRules(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.FailureKinds = []string{""}
	_, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, new(consumertest.MetricsSink))
	require.Error(t, err)
}
