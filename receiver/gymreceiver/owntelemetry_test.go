package gymreceiver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gym-telemetry/otelcol-gym/internal/transport"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadatatest"
)

// sumsBy reads an int64 Sum of tt by the value of the attributes keys (joined with "|").
func sumsBy(t *testing.T, tt *componenttest.Telemetry, name string, keys ...string) map[string]int64 {
	t.Helper()
	m, err := tt.GetMetric(name)
	require.NoError(t, err, name)
	s, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is %T", name, m.Data)
	out := map[string]int64{}
	for _, dp := range s.DataPoints {
		k := ""
		for i, key := range keys {
			v, _ := dp.Attributes.Value(attribute.Key(key))
			if i > 0 {
				k += "|"
			}
			k += v.AsString()
		}
		out[k] += dp.Value
	}
	return out
}

// startNamedReceiver starts a gym receiver with the given id on shared telemetry.
func startNamedReceiver(t *testing.T, tt *componenttest.Telemetry, id component.ID, next consumer.Metrics) (url string, stop func()) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	addr := freeAddr(t)
	cfg.HTTP.GetOrInsertDefault().NetAddr.Endpoint = addr
	cfg.CollectionInterval = time.Hour // the collection comes from Shutdown
	cfg.Process.Enabled = false
	set := metadatatest.NewSettings(tt)
	set.ID = id
	stop = started(t, set, cfg, next)
	return "http://" + addr + transport.EventsPath, stop
}

// Two gym receivers in one collector: their line counters and the collector's standard
// receiver metrics stay apart by the receiver attribute, as the collector's own receivers do.
func TestOwnTelemetryKeepsTwoReceiversApart(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	a, b := component.MustNewIDWithName("gym", "a"), component.MustNewIDWithName("gym", "b")
	sinkA := new(consumertest.MetricsSink)
	urlA, stopA := startNamedReceiver(t, tt, a, sinkA)
	urlB, stopB := startNamedReceiver(t, tt, b, consumertest.NewErr(errors.New("the next consumer is down")))

	res := `{"event":"resource","attributes":{"service.name":"nemo-gym/math","service.instance.id":"i0"}}` + "\n"
	lag := `{"event":"event_loop.lag","loop":"main","lag_ms":1.5}` + "\n"
	bad := `{"event":"event_loop.lag","loop":"main"}` + "\n"
	status, _, _ := post(t, urlA, []byte(res+lag+lag+lag), nil)
	require.Equal(t, http.StatusOK, status)
	status, _, _ = post(t, urlB, []byte(res+lag+bad), nil)
	require.Equal(t, http.StatusOK, status)
	stopA()
	stopB()

	require.Equal(t, map[string]int64{"gym/a": 4, "gym/b": 2},
		sumsBy(t, tt, "otelcol_receiver_gym_lines_accepted", "receiver"))
	rejected := sumsBy(t, tt, "otelcol_receiver_gym_lines_rejected", "receiver")
	require.Equal(t, int64(1), rejected["gym/b"])
	require.Zero(t, rejected["gym/a"])

	// The collection of gym/a went on: every data point it held is accepted; gym/b's next
	// consumer failed, so its points are refused.
	var points int
	for _, md := range sinkA.AllMetrics() {
		points += md.DataPointCount()
	}
	require.Positive(t, points)
	accepted := sumsBy(t, tt, "otelcol_receiver_accepted_metric_points", "receiver", "transport")
	refused := sumsBy(t, tt, "otelcol_receiver_refused_metric_points", "receiver", "transport")
	require.Equal(t, int64(points), accepted["gym/a|http"])
	require.Zero(t, refused["gym/a|http"])
	require.Zero(t, accepted["gym/b|http"])
	require.Positive(t, refused["gym/b|http"])
}

func TestTransportsOf(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.Empty(t, transportsOf(cfg)) // no block configured: no transport
	cfg.HTTP.GetOrInsertDefault()
	require.Equal(t, "http", transportsOf(cfg))
	cfg.Stream.GetOrInsertDefault().Transport = "tcp"
	cfg.Files.GetOrInsertDefault()
	require.Equal(t, "http,tcp,file", transportsOf(cfg))
}

// http.max_connections: a connection over it waits until one closes and is then served (never
// refused), and reaching the limit is counted.
func TestHTTPMaxConnections(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	cfg := createDefaultConfig().(*Config)
	addr := freeAddr(t)
	hc := cfg.HTTP.GetOrInsertDefault()
	hc.NetAddr.Endpoint = addr
	hc.MaxConnections = 1
	cfg.CollectionInterval = time.Hour
	cfg.Process.Enabled = false
	sink := new(consumertest.MetricsSink)
	r, err := NewFactory().CreateMetrics(context.Background(), metadatatest.NewSettings(tt), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))

	held, err := net.Dial("tcp", addr) // takes the one slot and sends nothing
	require.NoError(t, err)
	res := `{"event":"resource","attributes":{"service.name":"nemo-gym/math","service.instance.id":"i0"}}` + "\n"
	lag := `{"event":"event_loop.lag","loop":"main","lag_ms":1.5}` + "\n"
	done := make(chan int, 1)
	go func() {
		status, _, _ := post(t, "http://"+addr+transport.EventsPath, []byte(res+lag), nil)
		done <- status
	}()
	require.Eventually(t, func() bool {
		m, err := tt.GetMetric("otelcol_receiver_gym_http_max_connections_reached")
		return err == nil && m.Data.(metricdata.Sum[int64]).DataPoints[0].Value >= 1
	}, 10*time.Second, 10*time.Millisecond, "the limit is reached and counted")
	select {
	case status := <-done:
		t.Fatalf("answered %d while the one slot was held", status)
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, held.Close())
	select {
	case status := <-done:
		require.Equal(t, http.StatusOK, status)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting connection was not served after the slot came back")
	}
	require.NoError(t, r.Shutdown(context.Background()))
	require.Equal(t, map[string]int64{"gym": 2}, sumsBy(t, tt, "otelcol_receiver_gym_lines_accepted", "receiver"))
	// Reached with the held connection, and again with the one that waited.
	require.Equal(t, map[string]int64{"gym": 2}, sumsBy(t, tt, "otelcol_receiver_gym_http_max_connections_reached", "receiver"))
}

// A started receiver that has seen no line exports each of its counters at 0, every rejection
// reason included, and the standard accepted/refused metric points at 0: the Collector
// dashboard shows "none yet" as 0, not as no data.
func TestOwnTelemetryStartsAtZero(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	startNamedReceiver(t, tt, component.MustNewID("gym"), new(consumertest.MetricsSink))

	for _, name := range []string{
		"otelcol_receiver_gym_lines_accepted", "otelcol_receiver_gym_lines_unknown",
		"otelcol_receiver_gym_measurements_overflowed", "otelcol_receiver_gym_http_bodies_too_slow",
		"otelcol_receiver_gym_http_max_connections_reached",
		"otelcol_receiver_accepted_metric_points", "otelcol_receiver_refused_metric_points",
	} {
		require.Equal(t, map[string]int64{"gym": 0}, sumsBy(t, tt, name, "receiver"), name)
	}
	want := map[string]int64{}
	for _, reason := range []string{"too_long", "invalid_utf8", "invalid_json", "wrong_type", "missing_field",
		"out_of_range", "invalid_value", "too_deep", "too_many_attributes", "partial_line", "too_many_resources"} {
		want["gym|"+reason] = 0
	}
	require.Equal(t, want, sumsBy(t, tt, "otelcol_receiver_gym_lines_rejected", "receiver", "reason"))
	m, err := tt.GetMetric("otelcol_receiver_gym_resources")
	require.NoError(t, err)
	g := m.Data.(metricdata.Gauge[int64])
	require.Len(t, g.DataPoints, 1)
	require.Zero(t, g.DataPoints[0].Value)
	// Without a rollouts block, process stats or storage, their series stay out.
	_, err = tt.GetMetric("otelcol_receiver_gym_rollout_rows_rejected")
	require.Error(t, err)
	_, err = tt.GetMetric("otelcol_receiver_gym_process_errors")
	require.Error(t, err)
}
