//go:build linux

package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// TestDashboardInFlight: the shipped configuration (the flight recorder's stall_after and
// collection_interval shortened) takes Gym's spans by OTLP, those of TestFlightRecorder (a
// rollout that finished, one busy in model calls, one silent after a sandbox command); a real
// Prometheus scrapes it with deploy/prometheus/gym.rules.yaml loaded. Every panel query and
// variable of the Rollouts in flight dashboard answers with data, its table of stalled rollouts
// names the silent one's run, server and stage alone, and GymRolloutsStalled is pending for
// that run and server (its `for` not yet passed).
func TestDashboardInFlight(t *testing.T) {
	t.Parallel()
	dashboards, _, rulesData := ownDashboard(t, inFlightUID)

	_, ports := harness.StartDefaultCollector(t, "connectors:\n  gymrollouts:\n    collection_interval: 200ms\n    stall_after: 1s\n")
	prom := harness.StartPrometheusWith(t,
		harness.Config(t, "prometheus-gym.yml", map[string]any{"P": ports, "interval": "1s", "rules": true}),
		map[string]string{"gym.rules.yaml": string(rulesData)})
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/traces", ports.OTLPHTTP)
	postOK(t, url, flightRollouts(t, 0))
	stopBusy := busyRollout(t, url, 0)
	defer stopBusy()

	checks, vars, _ := dashboardChecks(t, dashboards, nil)
	everyQueryAnswers(t, prom, checks, vars)

	silent := `nemo_gym_server_name="sandbox",nemo_run_id="run-e2e"`
	tables := 0
	for _, p := range dashboards[0].Panels {
		if p.Type == "table" {
			tables++
			waitVector(t, prom, substitute(p.Targets[0].Expr), map[string]float64{
				`{nemo_gym_rollout_stage="sandbox",` + silent + `}`: 1})
		}
	}
	require.Equal(t, 1, tables, "the table of stalled rollouts")
	waitVector(t, prom, `ALERTS{alertname="GymRolloutsStalled"}`, map[string]float64{
		`{__name__="ALERTS",alertname="GymRolloutsStalled",alertstate="pending",` + silent + `,severity="warning"}`: 1})
}
