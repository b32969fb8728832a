package harness

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gym-telemetry/otelcol-gym/internal/bound"
)

// The generated load is what the OTLP benchmarks count on: every value is one the gymattrs
// rules keep or normalise, never one they reject, so each export of a resource comes out as
// DeclaredSeries points.
func TestGenOTLPIsKeptByTheRules(t *testing.T) {
	load, err := GenOTLP(OTLPShape{Resources: 2, Exports: 2, Workers: 2, Combos: 3, Seed: 1})
	require.NoError(t, err)
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	cfg := bound.DefaultConfig()
	b, err := bound.New(&cfg, tt.NewTelemetrySettings())
	require.NoError(t, err)
	defer b.Shutdown()
	for _, export := range load.Bodies {
		for _, body := range export {
			req := pmetricotlp.NewExportRequest()
			require.NoError(t, req.UnmarshalProto(body))
			out, err := b.Process(context.Background(), req.Metrics())
			require.NoError(t, err)
			assert.Equal(t, load.DeclaredSeries, out.DataPointCount())
		}
	}
	dropped, err := tt.GetMetric("otelcol_processor_gymattrs_points_dropped")
	require.NoError(t, err)
	for _, dp := range dropped.Data.(metricdata.Sum[int64]).DataPoints {
		assert.Zero(t, dp.Value, "%v", dp.Attributes.ToSlice())
	}
}
