package gymrollouts

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/gym-telemetry/otelcol-gym/connector/gymrollouts/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/connector/gymrollouts/internal/metadatatest"
	"github.com/gym-telemetry/otelcol-gym/internal/flight"
	"github.com/gym-telemetry/otelcol-gym/internal/pdatatest"
	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
)

func spans(ids ...string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(flight.KeyRun, "run-1")
	ss := rs.ScopeSpans().AppendEmpty()
	for _, id := range ids {
		s := ss.Spans().AppendEmpty()
		s.SetName("gym.verify")
		s.Attributes().PutStr(flight.KeyRolloutID, id)
		s.Attributes().PutStr(flight.KeyServer, "math")
	}
	return td
}

// TestBothSidesRecordOnce: a connector used traces-to-metrics and traces-to-logs is one
// recorder; each side receives every span, and each span is recorded once.
func TestBothSidesRecordOnce(t *testing.T) {
	f := NewFactory()
	cfg := createDefaultConfig()
	cfg.CollectionInterval = time.Hour // collected by hand below
	set := connectortest.NewNopSettings(metadata.Type)
	metrics, logs := new(consumertest.MetricsSink), new(consumertest.LogsSink)
	toMetrics, err := f.CreateTracesToMetrics(context.Background(), set, cfg, metrics)
	require.NoError(t, err)
	toLogs, err := f.CreateTracesToLogs(context.Background(), set, cfg, logs)
	require.NoError(t, err)
	host := componenttest.NewNopHost()
	require.NoError(t, toMetrics.Start(context.Background(), host))
	require.NoError(t, toLogs.Start(context.Background(), host))

	for _, side := range []interface {
		ConsumeTraces(context.Context, ptrace.Traces) error
	}{toMetrics, toLogs} {
		require.NoError(t, side.ConsumeTraces(context.Background(), spans("a", "b")))
	}
	r := toMetrics.(*side).Unwrap()
	assert.Same(t, r, toLogs.(*side).Unwrap(), "one recorder for the two sides")
	r.collect(context.Background())
	require.Len(t, metrics.AllMetrics(), 1)
	md := metrics.AllMetrics()[0]
	m := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0)
	assert.Equal(t, flight.MetricInFlight, m.Name())
	assert.Equal(t, int64(2), m.Gauge().DataPoints().At(0).IntValue(), "two rollouts, each recorded once")
	assert.Empty(t, logs.AllLogs(), "nothing stalled")

	require.NoError(t, toMetrics.Shutdown(context.Background()))
	require.NoError(t, toLogs.Shutdown(context.Background()))
}

// TestLogsSideAlone: without a metrics side, the logs side records the spans.
func TestLogsSideAlone(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.CollectionInterval = time.Hour
	toLogs, err := NewFactory().CreateTracesToLogs(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, new(consumertest.LogsSink))
	require.NoError(t, err)
	require.NoError(t, toLogs.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, toLogs.Shutdown(context.Background())) }()
	require.NoError(t, toLogs.ConsumeTraces(context.Background(), spans("a")))
	r := toLogs.(*side).Unwrap()
	assert.Equal(t, flight.Stats{}, r.rec.Stats())
	assert.Equal(t, 1, r.rec.Kept(), "recorded by the logs side")
}

// TestOwnTelemetry: the recorder's counts reach the connector's own metrics, each once.
func TestOwnTelemetry(t *testing.T) {
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	cfg := createDefaultConfig()
	cfg.CollectionInterval, cfg.MaxRollouts = time.Hour, 1
	c, err := NewFactory().CreateTracesToMetrics(context.Background(), metadatatest.NewSettings(tt), cfg, new(consumertest.MetricsSink))
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, c.Shutdown(context.Background())) }()
	bad := spans("a", "b") // two rollouts for one place: one evicted
	bad.ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty().Attributes().PutInt(flight.KeyRolloutID, 3)
	require.NoError(t, c.ConsumeTraces(context.Background(), bad))
	r := c.(*side).Unwrap()
	r.collect(context.Background())
	r.collect(context.Background()) // nothing new: nothing added
	metadatatest.AssertEqualConnectorGymrolloutsRolloutsEvicted(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualConnectorGymrolloutsSpansInvalid(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
}

// TestRefusedCollectionCounted: a collection the metrics pipeline refuses is counted by its
// points, never dropped silently.
func TestRefusedCollectionCounted(t *testing.T) {
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	cfg := createDefaultConfig()
	cfg.CollectionInterval = time.Hour
	c, err := NewFactory().CreateTracesToMetrics(context.Background(), metadatatest.NewSettings(tt), cfg, consumertest.NewErr(errors.New("memory limit")))
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, c.Shutdown(context.Background())) }()
	require.NoError(t, c.ConsumeTraces(context.Background(), spans("a", "b")))
	r := c.(*side).Unwrap()
	md, ld := pmetric.NewMetrics(), plog.NewLogs()
	r.rec.Collect(md, ld)
	require.Positive(t, md.DataPointCount())
	r.collect(context.Background())
	r.collect(context.Background())
	metadatatest.AssertEqualConnectorGymrolloutsPointsRefused(t, tt,
		[]metricdata.DataPoint[int64]{{Value: int64(2 * md.DataPointCount())}}, metricdatatest.IgnoreTimestamp())
}

// TestStorage: with storage, a connector started again (a collector restarted) goes on with
// the rollouts the last one kept; without the extension it names, it does not start.
func TestStorage(t *testing.T) {
	f := NewFactory()
	cfg := createDefaultConfig()
	cfg.CollectionInterval = time.Hour
	id := component.MustNewID("file_storage")
	cfg.Storage = &id
	mem := storagetest.NewMem(nil)
	host := storagetest.Host{id: mem}
	start := func() (connector.Traces, *consumertest.MetricsSink) {
		metrics := new(consumertest.MetricsSink)
		c, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, metrics)
		require.NoError(t, err)
		require.NoError(t, c.Start(context.Background(), host))
		return c, metrics
	}
	c, _ := start()
	require.NoError(t, c.ConsumeTraces(context.Background(), spans("a", "b")))
	require.NoError(t, c.Shutdown(context.Background()))

	c, metrics := start()
	c.(*side).Unwrap().collect(context.Background())
	require.NoError(t, c.Shutdown(context.Background()))
	require.Len(t, metrics.AllMetrics(), 1)
	m := pdatatest.Metric(t, metrics.AllMetrics()[0], flight.MetricInFlight)
	assert.Equal(t, int64(2), m.Gauge().DataPoints().At(0).IntValue(), "both rollouts restored")

	c, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, new(consumertest.MetricsSink))
	require.NoError(t, err)
	assert.ErrorContains(t, c.Start(context.Background(), componenttest.NewNopHost()), `storage: no extension "file_storage"`)
}
