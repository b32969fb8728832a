package gymfilestorage

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// The configuration is contrib's, validated by contrib's Validate.
func TestConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	for _, id := range []string{"file_storage", "file_storage/checkpoints"} {
		cfg := NewFactory().CreateDefaultConfig()
		sub, err := cm.Sub(id)
		require.NoError(t, err)
		require.NoError(t, sub.Unmarshal(cfg))
		require.NoError(t, confmap.Validate(cfg), id)
	}
	cfg := NewFactory().CreateDefaultConfig().(*filestorage.Config)
	sub, err := cm.Sub("file_storage/checkpoints")
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(cfg))
	assert.Equal(t, "/var/lib/otelcol-gym", cfg.Directory)
	assert.Equal(t, 2*time.Second, cfg.Timeout)
	assert.True(t, cfg.CreateDirectory)

	bad := NewFactory().CreateDefaultConfig().(*filestorage.Config)
	bad.Directory = filepath.Join(t.TempDir(), "missing")
	assert.Error(t, confmap.Validate(bad), "contrib's Validate: a directory that does not exist")
}
