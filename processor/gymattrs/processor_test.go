package gymattrs

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
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

// In a traces or a logs pipeline the processor bounds the resources (the resource rule of the
// metrics), counted in the same telemetry: a 1 MiB service.name reaches the next consumer cut
// at 256 bytes; the spans and records themselves pass untouched.
func TestProcessorTracesAndLogsResources(t *testing.T) {
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tt.NewTelemetrySettings()
	long := strings.Repeat("x", 1<<20)

	traces := new(consumertest.TracesSink)
	tp, err := NewFactory().CreateTraces(context.Background(), set, createDefaultConfig(), traces)
	require.NoError(t, err)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", long)
	rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName(long)
	require.NoError(t, tp.ConsumeTraces(context.Background(), td))
	got := traces.AllTraces()[0].ResourceSpans().At(0)
	name, _ := got.Resource().Attributes().Get("service.name")
	assert.Len(t, name.Str(), 256)
	assert.Len(t, got.ScopeSpans().At(0).Spans().At(0).Name(), 1<<20, "a span is not the rule's")

	logs := new(consumertest.LogsSink)
	lp, err := NewFactory().CreateLogs(context.Background(), set, createDefaultConfig(), logs)
	require.NoError(t, err)
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().Resource().Attributes().PutStr("nemo.run.id", long)
	require.NoError(t, lp.ConsumeLogs(context.Background(), ld))
	run, _ := logs.AllLogs()[0].ResourceLogs().At(0).Resource().Attributes().Get("nemo.run.id")
	assert.Len(t, run.Str(), 256)

	m, err := tt.GetMetric("otelcol_processor_gymattrs_resource_values_cut")
	require.NoError(t, err)
	total := int64(0)
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		total += dp.Value
	}
	assert.Equal(t, int64(2), total)
	require.NoError(t, tp.Shutdown(context.Background()))
	require.NoError(t, lp.Shutdown(context.Background()))
}
