package gymrollouts

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/connector/gymrollouts/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/internal/configtest"
)

// loadConfig is the block metadata.Type/name of testdata/config.yaml over the defaults.
func loadConfig(t *testing.T, name string) (*Config, error) {
	return configtest.Load(t, metadata.Type, name, createDefaultConfig())
}

func TestDefaultConfig(t *testing.T) {
	cfg, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.Equal(t, 15*time.Second, cfg.CollectionInterval)
	assert.Equal(t, 10000, cfg.MaxRollouts)
	assert.Equal(t, 5*time.Minute, cfg.StallAfter)
	assert.Equal(t, 30*time.Minute, cfg.FinishedAfter)
	assert.Nil(t, cfg.Storage, "no storage unless one is named")
}

func TestCustomConfig(t *testing.T) {
	cfg, err := loadConfig(t, "custom")
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, cfg.CollectionInterval)
	assert.Equal(t, 500, cfg.MaxRollouts)
	assert.Equal(t, 90*time.Second, cfg.StallAfter)
	assert.Equal(t, 10*time.Minute, cfg.FinishedAfter)
	require.NotNil(t, cfg.Storage)
	assert.Equal(t, "file_storage", cfg.Storage.String())
}

// Each bad configuration is refused with a message that names the key.
func TestInvalidConfig(t *testing.T) {
	for name, want := range map[string]string{
		"bad_interval": "collection_interval",
		"bad_max":      "max_rollouts",
		"bad_stall":    "stall_after",
		"bad_finished": "finished_after",
		"unknown_key":  "stall_afer",
	} {
		_, err := loadConfig(t, name)
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), want, name)
		}
	}
}
