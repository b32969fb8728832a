package gymliveexporter

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gym-telemetry/otelcol-gym/exporter/gymliveexporter/internal/metadatatest"
)

// startTelemetry starts the exporter on a free loopback port with telemetry the test reads.
func startTelemetry(t *testing.T, cfg *Config) (*liveExporter, *componenttest.Telemetry) {
	t.Helper()
	cfg.NetAddr.Endpoint = "127.0.0.1:0"
	cfg.SelfMetrics = ""
	tt := componenttest.NewTelemetry()
	e, err := newLiveExporter(metadatatest.NewSettings(tt), cfg)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		assert.NoError(t, e.Shutdown(context.Background()))
		assert.NoError(t, tt.Shutdown(context.Background()))
	})
	return e, tt
}

// counted is the telemetry sum name (of the data points whose reason is reason, or all).
func counted(t *testing.T, tt *componenttest.Telemetry, name, reason string) int64 {
	t.Helper()
	m, err := tt.GetMetric(name)
	if err != nil {
		return 0 // nothing recorded yet
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, ok := dp.Attributes.Value("reason"); reason == "" || ok && v.AsString() == reason {
			n += dp.Value
		}
	}
	return n
}

// slowClient connects and sends the start of a request whose headers never end.
func slowClient(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
	require.NoError(t, err)
	return c
}

// closedByServer waits (up to 10 s) for the server to close c: a read returns EOF or a reset.
func closedByServer(t *testing.T, c net.Conn) bool {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && (!errors.As(err, &ne) || !ne.Timeout())
}

// With every connection taken by clients still sending their headers, a normal request is
// served at once: it evicts the one that has waited longest (counted), instead of waiting in
// the listen backlog until a slow client's header timeout.
func TestSlowClientsEvicted(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxConnections = 2
	cfg.ReadHeaderTimeout = time.Minute // only eviction can free a slot within the test
	e, tt := startTelemetry(t, cfg)
	first := slowClient(t, e.addr)
	require.Eventually(t, func() bool { return counted(t, tt, "otelcol_exporter_gymlive_connections", "") == 1 }, 5*time.Second, 5*time.Millisecond)
	second := slowClient(t, e.addr)
	require.Eventually(t, func() bool { return counted(t, tt, "otelcol_exporter_gymlive_connections", "") == 2 }, 5*time.Second, 5*time.Millisecond)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + e.addr + "/api/v1/runs")
	require.NoError(t, err, "served while both slots are held")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, closedByServer(t, first), "the oldest slow client is closed")
	assert.Equal(t, int64(1), counted(t, tt, "otelcol_exporter_gymlive_connections_closed", closedEvicted))
	require.NoError(t, second.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, err = second.Read(make([]byte, 1))
	var ne net.Error
	assert.True(t, errors.As(err, &ne) && ne.Timeout(), "the younger slow client is still open: %v", err)
	assert.Zero(t, counted(t, tt, "otelcol_exporter_gymlive_connections_closed", closedHeaderTimeout))
}

// A client that does not finish its headers within read_header_timeout is closed and counted,
// whether it sent part of them or nothing; its slot is free again.
func TestSlowClientsHeaderTimeout(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.ReadHeaderTimeout = 200 * time.Millisecond
	e, tt := startTelemetry(t, cfg)
	partial := slowClient(t, e.addr)
	silent, err := net.Dial("tcp", e.addr)
	require.NoError(t, err)
	defer silent.Close()
	assert.True(t, closedByServer(t, partial))
	assert.True(t, closedByServer(t, silent))
	require.Eventually(t, func() bool {
		return counted(t, tt, "otelcol_exporter_gymlive_connections_closed", closedHeaderTimeout) == 2 &&
			counted(t, tt, "otelcol_exporter_gymlive_connections", "") == 0
	}, 5*time.Second, 5*time.Millisecond)

	// A normal request is not counted.
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + e.addr + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.Eventually(t, func() bool { return counted(t, tt, "otelcol_exporter_gymlive_connections", "") == 0 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, int64(2), counted(t, tt, "otelcol_exporter_gymlive_connections_closed", closedHeaderTimeout))
}

// A point the page rejects is counted in the exporter's telemetry, by reason.
func TestPointsRejectedCounted(t *testing.T) {
	e, tt := startTelemetry(t, createDefaultConfig())
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("nemo.run.id", "run-7")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	m := ms.AppendEmpty()
	m.SetName("gym.rollout.in_flight")
	dps := m.SetEmptyGauge().DataPoints()
	dps.AppendEmpty().SetDoubleValue(math.NaN())
	dps.AppendEmpty().SetDoubleValue(math.Inf(-1))
	dps.AppendEmpty().SetIntValue(math.MaxInt64)
	dps.AppendEmpty().SetIntValue(3)
	require.NoError(t, e.ConsumeMetrics(context.Background(), md))
	assert.Equal(t, int64(2), counted(t, tt, "otelcol_exporter_gymlive_points_rejected", "non_finite"))
	assert.Equal(t, int64(1), counted(t, tt, "otelcol_exporter_gymlive_points_rejected", "out_of_range"))
	assert.Equal(t, 3.0, e.store.Run("run-7").InFlight)
}
