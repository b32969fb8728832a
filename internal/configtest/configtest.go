// Package configtest loads a component's testdata/config.yaml the way the collector does, for
// the components' configuration tests.
package configtest

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// Load unmarshals the block `typ/name` (`typ` for name "") of testdata/config.yaml into cfg,
// the component's default configuration, then validates it as the collector would: the
// error is the unmarshal's or the validation's.
func Load[C component.Config](t *testing.T, typ component.Type, name string, cfg C) (C, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(typ, name).String())
	require.NoError(t, err)
	if err := sub.Unmarshal(cfg); err != nil {
		return cfg, err
	}
	return cfg, confmap.Validate(cfg)
}
