package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// TestComposeStackPrometheus runs the Prometheus half of deploy/compose for real: the collector
// on the shipped configuration merged with the stack's override (deploy/compose/otelcol-gym.yaml),
// Debian's Prometheus on the stack's prometheus.yml with deploy/prometheus/gym.rules.yaml, fed
// the dashboards test's run. Only what a compose network gives is rewritten for loopback: a
// service's address (otelcol-gym:9464) becomes the test's port, a container path becomes the
// test's directory, and the scrape and rule intervals are shortened so that the run takes
// seconds. Every dashboard query, every variable and every recording rule answers.
// (deploy/compose_test.go checks the compose file itself against the Compose specification.)
func TestComposeStackPrometheus(t *testing.T) {
	t.Parallel()
	harness.PrometheusBinary(t)
	override := readComposeFile(t, "otelcol-gym.yaml")
	promConfig := readComposeFile(t, "prometheus.yml")

	run := startGymRunWith(t, gymRunSetup{
		collector: func(p harness.Ports, results string) []string {
			return []string{rewriteAll(t, "deploy/compose/otelcol-gym.yaml", override, []string{
				"0.0.0.0:13133", fmt.Sprintf("127.0.0.1:%d", p.Health),
				"0.0.0.0:4317", fmt.Sprintf("127.0.0.1:%d", p.OTLPGRPC),
				"0.0.0.0:4318", fmt.Sprintf("127.0.0.1:%d", p.OTLPHTTP),
				"0.0.0.0:4390", fmt.Sprintf("127.0.0.1:%d", p.Gym),
				"0.0.0.0:9464", fmt.Sprintf("127.0.0.1:%d", p.Prometheus),
				"0.0.0.0:8890", fmt.Sprintf("127.0.0.1:%d", p.Live),
				"host: 0.0.0.0", "host: 127.0.0.1",
				"port: 8888", fmt.Sprintf("port: %d", p.Telemetry),
				"/var/lib/gym/results/", results + "/",
			})}
		},
		prometheus: func(p harness.Ports) string {
			return rewriteAll(t, "deploy/compose/prometheus.yml", promConfig, []string{
				"otelcol-gym:9464", fmt.Sprintf("127.0.0.1:%d", p.Prometheus),
				"otelcol-gym:8888", fmt.Sprintf("127.0.0.1:%d", p.Telemetry),
				"/etc/prometheus/gym.rules.yaml", "gym.rules.yaml", // beside the configuration
				"scrape_interval: 15s", "scrape_interval: 3s",
				"evaluation_interval: 30s", "evaluation_interval: 1s",
			})
		},
	})

	rulesData, err := os.ReadFile(filepath.Join(harness.Root, "deploy", "prometheus", "gym.rules.yaml"))
	require.NoError(t, err)
	all, alerts := recordingRules(t, rulesData)
	_, dashboards, _, records := splitDashboards("", loadDashboards(t), all) // no vLLM, DCGM, node, spans here
	require.NotEmpty(t, records)
	checks, vars, _ := dashboardChecks(t, dashboards, records)
	everyQueryAnswers(t, run.prom, checks, vars)
	// The rules the stack loads evaluate without error.
	everyRuleHealthy(t, run.prom, append(sortedKeys(all), alerts...))
}

func readComposeFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(harness.Root, "deploy", "compose", name))
	require.NoError(t, err)
	return string(data)
}

// rewriteAll replaces each old with its new (pairs), failing when an old is not in the text:
// then the file changed and the test no longer runs what the stack runs. No 0.0.0.0 may be
// left: the test listens on loopback only.
func rewriteAll(t *testing.T, name, text string, pairs []string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		require.Contains(t, text, pairs[i], "%s no longer holds %q", name, pairs[i])
		text = strings.ReplaceAll(text, pairs[i], pairs[i+1])
	}
	require.NotContains(t, text, "0.0.0.0", "%s: an address the test did not rewrite", name)
	return text
}
