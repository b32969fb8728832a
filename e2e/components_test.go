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
	"go.yaml.in/yaml/v3"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// TestValidateDistribution: the binary has the gymattrs processor, the gymrollouts connector,
// the gymlive exporter and the file_storage and bearertokenauth extensions, `validate` accepts a configuration that uses them, and names
// the key of a bad gymattrs setting.
func TestValidateDistribution(t *testing.T) {
	t.Parallel()
	harness.UseCollector()
	out, err := exec.Command(harness.Bin, "components").CombinedOutput()
	require.NoError(t, err, "%s", out)
	distribution := harness.Config(t, "distribution.yaml", nil)
	for _, name := range []string{"name: gymattrs", "name: file_storage", "name: bearertokenauth", "name: gym_console", "name: gymrollouts", "name: gymlive"} {
		assert.Contains(t, string(out), name, "otelcol-gym components")
	}
	// The standard components (docs/deployment.md, Components), each in its section, and the
	// http and https config providers.
	type component struct {
		Name   string `yaml:"name"`
		Scheme string `yaml:"scheme"`
		Module string `yaml:"module"`
	}
	var list struct {
		Receivers  []component `yaml:"receivers"`
		Processors []component `yaml:"processors"`
		Exporters  []component `yaml:"exporters"`
		Extensions []component `yaml:"extensions"`
		Connectors []component `yaml:"connectors"`
		Providers  []component `yaml:"providers"`
	}
	require.NoError(t, yaml.Unmarshal(out, &list))
	comps := map[string][]component{"receivers": list.Receivers, "processors": list.Processors,
		"exporters": list.Exporters, "extensions": list.Extensions, "connectors": list.Connectors, "providers": list.Providers}
	for section, names := range map[string][]string{
		"receivers":  {"gym", "otlp", "prometheus", "host_metrics"},
		"processors": {"gymattrs", "memory_limiter", "batch", "resource", "groupbyattrs"},
		"exporters":  {"otlp_grpc", "otlp_http", "prometheus", "prometheus_remote_write", "gymlive"},
		"extensions": {"file_storage", "bearertokenauth", "zpages", "health_check"},
		"connectors": {"gymrollouts"},
		"providers":  {"env", "file", "yaml", "http", "https"},
	} {
		var got []string
		for _, c := range comps[section] {
			got = append(got, c.Name+c.Scheme)
			if c.Module != "" && !strings.HasPrefix(c.Module, "github.com/gym-telemetry/") {
				assert.Regexp(t, ` v(0\.165\.[01]|1\.71\.0)$`, c.Module, "%s %s: one release", section, c.Name)
			}
		}
		for _, n := range names {
			assert.Contains(t, got, n, "otelcol-gym components: %s", section)
		}
		for _, c := range comps[section] {
			if section == "extensions" && (c.Name == "file_storage" || c.Name == "bearertokenauth") || c.Name == "gymrollouts" || c.Name == "gymlive" {
				assert.True(t, strings.HasPrefix(c.Module, "github.com/gym-telemetry/otelcol-gym "), "%s is ours (checked, counted): %s", c.Name, c.Module)
			}
		}
	}

	vout, err := validate(t, distribution)
	assert.NoError(t, err, vout)

	for _, c := range []struct{ from, to, want string }{
		{"cardinality_limit: 2000", "cardinality_limit: 1", "cardinality_limit"},
		{"unknown_metrics: bound", "unknown_metrics: keep", "unknown_metrics"},
		{"series_idle_timeout: 10m", "series_idle_timout: 10m", "series_idle_timout"},
		{"max_line_bytes: 4194304", "max_line_bytes: 10", "max_line_bytes"},
		{"cardinality_limit: 1500", "cardinality_limit: 0", "cardinality_limit"},
		{"stall_after: 2m", "stall_after: 30m", "finished_after"},
	} {
		bad := replaceOnce(t, distribution, c.from, c.to)
		vout, err := validate(t, bad)
		var exitErr *exec.ExitError
		if assert.ErrorAs(t, err, &exitErr, "validate accepted %q:\n%s", c.to, vout) {
			assert.Contains(t, vout, c.want)
		}
	}
}

func replaceOnce(t *testing.T, s, from, to string) string {
	t.Helper()
	require.Contains(t, s, from)
	return strings.Replace(s, from, to, 1)
}

// TestValidateDeploy: `otelcol-gym validate` accepts the node agent and gateway configurations
// of deploy/ with their defaults, with the Slurm launcher's override (the queue in memory), and
// names the variable's key when an environment variable gives a bad value.
func TestValidateDeploy(t *testing.T) {
	t.Parallel()
	harness.UseCollector()
	agent := filepath.Join(harness.Root, "deploy", "agent.yaml")
	gateway := filepath.Join(harness.Root, "deploy", "gateway.yaml")
	for _, args := range [][]string{
		{"--config", agent},
		{"--config", gateway},
		{"--config", agent, "--config", "yaml:exporters::otlp_grpc::sending_queue::storage: null"},
	} {
		out, err := exec.Command(harness.Bin, append([]string{"validate"}, args...)...).CombinedOutput()
		assert.NoError(t, err, "validate %v:\n%s", args, out)
	}
	cmd := exec.Command(harness.Bin, "validate", "--config", agent)
	cmd.Env = append(os.Environ(), "OTELCOL_GYM_COLLECTION_INTERVAL=soon")
	out, err := cmd.CombinedOutput()
	if assert.Error(t, err, "validate accepted collection_interval: soon") {
		assert.Contains(t, string(out), "collection_interval")
	}
}
