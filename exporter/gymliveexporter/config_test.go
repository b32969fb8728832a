package gymliveexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/exporter/gymliveexporter/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/internal/configtest"
	"github.com/gym-telemetry/otelcol-gym/internal/live"
)

// loadConfig is the block metadata.Type/name of testdata/config.yaml over the defaults.
func loadConfig(t *testing.T, name string) (*Config, error) {
	return configtest.Load(t, metadata.Type, name, createDefaultConfig())
}

func TestDefaultConfig(t *testing.T) {
	cfg, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:8890", cfg.NetAddr.Endpoint)
	assert.Equal(t, "http://127.0.0.1:8888/metrics", cfg.SelfMetrics)
	assert.Equal(t, live.DefaultLimits(), cfg.Limits)
	assert.Equal(t, 10*time.Second, cfg.ReadHeaderTimeout)
}

func TestCustomConfig(t *testing.T) {
	cfg, err := loadConfig(t, "custom")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:18890", cfg.NetAddr.Endpoint)
	assert.Equal(t, 8, cfg.MaxConnections)
	assert.Equal(t, 4, cfg.MaxConcurrentRequests)
	assert.Equal(t, "http://localhost:18888/metrics", cfg.SelfMetrics)
	assert.Equal(t, live.Limits{MaxRuns: 4, MaxServers: 8, MaxSeries: 100, MaxChartSeries: 3, Resolution: 5 * time.Second,
		Horizon: time.Hour, SeriesExpiration: 10 * time.Minute}, cfg.Limits)
	cfg, err = loadConfig(t, "no_self_metrics")
	require.NoError(t, err)
	assert.Empty(t, cfg.SelfMetrics)
}

// Each bad configuration is refused with a message that names the key.
func TestInvalidConfig(t *testing.T) {
	for name, want := range map[string][]string{
		"bad_self_metrics": {"self_metrics", "loopback"},
		"bad_limits":       {"max_runs", "max_concurrent_requests"},
		"bad_horizon":      {"horizon"},
		"unknown_key":      {"max_rnus"},
	} {
		_, err := loadConfig(t, name)
		if assert.Error(t, err, name) {
			for _, w := range want {
				assert.Contains(t, err.Error(), w, name)
			}
		}
	}
}
