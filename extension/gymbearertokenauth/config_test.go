package gymbearertokenauth

import (
	"path/filepath"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/bearertokenauthextension"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// The configuration is contrib's, validated by contrib's Validate.
func TestConfig(t *testing.T) {
	t.Setenv("GYM_TOKEN", "x")
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*bearertokenauthextension.Config)
	sub, err := cm.Sub("bearertokenauth")
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, "/etc/otelcol-gym-token/token", cfg.Filename)

	bad := NewFactory().CreateDefaultConfig().(*bearertokenauthextension.Config)
	assert.Error(t, confmap.Validate(bad), "contrib's Validate: neither a token nor a file")
}
