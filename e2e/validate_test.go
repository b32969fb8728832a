//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

func validate(t *testing.T, config string) (string, error) {
	t.Helper()
	harness.UseCollector()
	path := config
	if filepath.Ext(config) != ".yaml" {
		path = filepath.Join(t.TempDir(), "config.yaml")
		require.NoError(t, os.WriteFile(path, []byte(config), 0o600))
	}
	out, err := exec.Command(harness.Bin, "validate", "--config", path).CombinedOutput()
	return string(out), err
}

// TestValidate: `otelcol-gym validate` accepts the shipped default, the README's example and the
// example price table, and rejects a bad gym key, or a price table it cannot read or that is
// not valid, with a message that names it.
func TestValidate(t *testing.T) {
	t.Parallel()
	t.Run("default config", func(t *testing.T) {
		out, err := validate(t, filepath.Join(harness.Root, "config", "otelcol-gym.yaml"))
		assert.NoError(t, err, out)
	})
	t.Run("minimal config", func(t *testing.T) {
		out, err := validate(t, gymConfig(t, ""))
		assert.NoError(t, err, out)
	})
	t.Run("every component", func(t *testing.T) {
		out, err := validate(t, harness.Config(t, "all-components.yaml", nil))
		assert.NoError(t, err, out)
	})
	t.Run("the example price table", func(t *testing.T) {
		out, err := validate(t, gymConfig(t, "    prices: "+filepath.Join(harness.Root, "config", "prices.example.yaml")))
		assert.NoError(t, err, out)
	})
	badPrices := filepath.Join(harness.Root, "receiver", "gymreceiver", "testdata", "prices-bad.yaml")
	for _, c := range []struct {
		name, gym, want string
	}{
		{"unknown key", "    colection_interval: 5s", "colection_interval"},
		{"bad price table", "    prices: " + badPrices, "prices: " + badPrices + `: models: "model-a": input: -1 is not a price`},
		{"missing price table", "    prices: /nonexistent/prices.yaml", "prices: open /nonexistent/prices.yaml: no such file or directory"},
		{"bad rollouts key", "    rollouts:\n      include: [/results/*.jsonl]\n      start_at: middle", "rollouts.start_at"},
		{"bad value", "    max_line_bytes: 10", "max_line_bytes"},
		{"bad duration", "    collection_interval: -1s", "collection_interval"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := validate(t, gymConfig(t, c.gym))
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "validate accepted a config with %q:\n%s", c.gym, out)
			assert.Contains(t, out, c.want)
		})
	}
}

func gymConfig(t *testing.T, gymLines string) string {
	t.Helper()
	return harness.Config(t, "validate.yaml", map[string]any{"gym": gymLines})
}

// TestValidateREADME: every YAML block of README.md that is a whole collector configuration
// (it has a service: section) validates.
func TestValidateREADME(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(harness.Root, "README.md"))
	require.NoError(t, err)
	blocks := 0
	for i, part := range strings.Split(string(data), "```yaml\n")[1:] {
		block, _, ok := strings.Cut(part, "```")
		require.True(t, ok, "unterminated yaml block %d", i+1)
		if !strings.Contains(block, "\nservice:") {
			continue
		}
		blocks++
		out, err := validate(t, block)
		assert.NoError(t, err, "README.md yaml block %d:\n%s\n%s", i+1, block, out)
	}
	assert.NotZero(t, blocks, "README.md has no yaml block with a service: section")
}
