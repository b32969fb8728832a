package gymliveexporter

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/confignet"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/exporter/gymliveexporter/internal/metadata"
)

// The exporter serves what it consumed on its endpoint (TCP or a Unix socket, as the Slurm
// recipe has it), and stops serving at shutdown.
func TestExporterServes(t *testing.T) {
	t.Run("tcp", func(t *testing.T) {
		cfg := createDefaultConfig()
		cfg.NetAddr.Endpoint = "127.0.0.1:0"
		testServes(t, cfg, http.DefaultClient, func(e *liveExporter) string { return "http://" + e.addr })
	})
	t.Run("unix", func(t *testing.T) {
		cfg := createDefaultConfig()
		cfg.NetAddr.Transport = confignet.TransportTypeUnix
		cfg.NetAddr.Endpoint = filepath.Join(t.TempDir(), "live.sock")
		client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", cfg.NetAddr.Endpoint)
		}}}
		testServes(t, cfg, client, func(*liveExporter) string { return "http://live" })
	})
}

func testServes(t *testing.T, cfg *Config, client *http.Client, base func(*liveExporter) string) {
	cfg.SelfMetrics = ""
	e, err := newLiveExporter(exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))

	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("nemo.run.id", "run-7")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("gym.rollout.completed_total")
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := s.DataPoints().AppendEmpty()
	dp.SetIntValue(12)
	dp.Attributes().PutStr("nemo.gym.rollout.outcome", "scored")
	require.NoError(t, e.ConsumeMetrics(context.Background(), md))

	resp, err := client.Get(base(e) + "/api/v1/runs/run-7")
	require.NoError(t, err)
	var v struct {
		Run struct {
			Completed map[string]float64 `json:"completed"`
		} `json:"run"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	resp.Body.Close()
	assert.Equal(t, map[string]float64{"scored": 12}, v.Run.Completed)

	require.NoError(t, e.Shutdown(context.Background()))
	resp, err = client.Get(base(e) + "/api/v1/runs")
	if err == nil {
		resp.Body.Close()
	}
	assert.Error(t, err, "closed at shutdown")
}
