package gymattrs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/configtest"
	"github.com/gym-telemetry/otelcol-gym/processor/gymattrs/internal/metadata"
)

// loadConfig is the block metadata.Type/name of testdata/config.yaml over the defaults.
func loadConfig(t *testing.T, name string) (*Config, error) {
	return configtest.Load(t, metadata.Type, name, createDefaultConfig().(*Config))
}

func TestDefaultConfig(t *testing.T) {
	cfg, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.Equal(t, 2000, cfg.CardinalityLimit, "the schema's default_cardinality_limit")
	assert.Empty(t, cfg.FailureKinds)
	assert.Empty(t, cfg.HealthChecks)
	assert.Empty(t, cfg.IgnoredHealthChecks)
	assert.Equal(t, "bound", cfg.UnknownMetrics, "nothing unbounded by default")
	assert.Equal(t, 10*time.Minute, cfg.SeriesIdleTimeout)
	assert.False(t, cfg.GenAIConventions, "the GenAI conventions are opt in")
	assert.True(t, cfg.InstancePerProcess, "an instance id per process")
}

// unknown_metrics: pass stays available, an explicit choice.
func TestUnknownMetricsPassConfig(t *testing.T) {
	cfg, err := loadConfig(t, "pass")
	require.NoError(t, err)
	assert.Equal(t, "pass", cfg.UnknownMetrics)
	cfg, err = loadConfig(t, "bound")
	require.NoError(t, err)
	assert.Equal(t, "bound", cfg.UnknownMetrics)
}

func TestCustomConfig(t *testing.T) {
	cfg, err := loadConfig(t, "custom")
	require.NoError(t, err)
	assert.Equal(t, 500, cfg.CardinalityLimit)
	assert.Equal(t, []string{"lab_quirk"}, cfg.FailureKinds)
	assert.Equal(t, []string{"lab_check"}, cfg.HealthChecks)
	assert.Equal(t, []string{"agent_turn_hollow"}, cfg.IgnoredHealthChecks)
	assert.Equal(t, "drop", cfg.UnknownMetrics)
	assert.Equal(t, 30*time.Minute, cfg.SeriesIdleTimeout)
	assert.True(t, cfg.GenAIConventions)
	assert.False(t, cfg.InstancePerProcess)
}

// Each bad configuration is refused with a message that names the key.
func TestInvalidConfig(t *testing.T) {
	for name, want := range map[string]string{
		"bad_limit":   "cardinality_limit",
		"bad_kind":    "failure_kinds[0]",
		"bad_ignored": "ignored_health_checks[1]",
		"bad_unknown": "unknown_metrics",
		"bad_idle":    "series_idle_timeout",
		"bad_genai":   "genai_conventions",
		"unknown_key": "cardinality_limt",
		"bad_pid":     "instance_per_process",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}
