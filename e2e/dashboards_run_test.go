//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// A generated Gym run through the shipped configuration into a Prometheus with the rules.

// gymRun is a running collector on the shipped configuration, fed a realistic run, and the
// Prometheus that scrapes it with deploy/prometheus/gym.rules.yaml loaded.
type gymRun struct {
	col     *harness.Collector
	ports   harness.Ports
	prom    string
	implies runImplies
	extra   struct{ accepted, rejected, unknown, sdkScored, rows int }
}

// startGymRun feeds the run in three parts a few scrapes apart, so rates see it grow.
func startGymRun(t *testing.T) *gymRun {
	t.Helper()
	return startGymRunWith(t, gymRunSetup{prometheus: func(ports harness.Ports) string {
		return harness.Config(t, "prometheus-gym.yml", map[string]any{"P": ports, "interval": "3s", "rules": true})
	}})
}

// gymRunSetup is what a test changes around the run: overrides merged after the shipped
// configuration and dashboardsOverride (given the ports and the run files' directory), and
// Prometheus' configuration (gym.rules.yaml sits beside it).
type gymRunSetup struct {
	collector  func(ports harness.Ports, results string) []string
	prometheus func(ports harness.Ports) string
}

func startGymRunWith(t *testing.T, setup gymRunSetup) *gymRun {
	t.Helper()
	results := t.TempDir()
	col, ports := harness.StartDefaultCollectorWith(t, func(p harness.Ports) []string {
		more := []string{dashboardsOverride(t, results)}
		if setup.collector != nil {
			more = append(more, setup.collector(p, results)...)
		}
		return more
	})
	rules, err := os.ReadFile(filepath.Join(harness.Root, "deploy", "prometheus", "gym.rules.yaml"))
	require.NoError(t, err)
	run := &gymRun{col: col, ports: ports, prom: harness.StartPrometheusWith(t, setup.prometheus(ports), map[string]string{"gym.rules.yaml": string(rules)})}

	// A realistic run: 30,000 events of 6 Gym processes (process 0 is the rollout driver).
	data, bodies := generatedRun(t, "14", "6", "30000")
	run.implies = countRun(t, data)
	require.Greater(t, len(bodies), 6)

	post := func(part []string) {
		for i, body := range part {
			status, ans := col.PostEvents(t, body)
			require.Equal(t, http.StatusOK, status, "body %d", i)
			require.Zero(t, ans.Rejected+ans.Unknown, "body %d: %+v", i, ans)
		}
	}
	// Stage k of the newer instruments: a body of events and the run file's next rows.
	runFile := filepath.Join(results, "eval.jsonl")
	newer := func(k int) {
		body, lines := dashNewerEvents(k)
		status, ans := col.PostEvents(t, body)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, []int{lines, 0, 0}, []int{ans.Accepted, ans.Rejected, ans.Unknown}, "stage %d: %+v", k, ans)
		run.extra.accepted += lines
		f, err := os.OpenFile(runFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		_, err = f.WriteString(strings.Join(dashNewerRows[k-1], "\n") + "\n") // whole rows, each with its newline
		require.NoError(t, err)
		require.NoError(t, f.Close())
		run.extra.rows += len(dashNewerRows[k-1])
		// Gym's own OTLP-only instruments (dashboards_gymreal_test.go).
		postOTLP(t, fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP), dashRealOTLP(k))
	}
	third := len(bodies) / 3
	post(bodies[:third])
	newer(1)
	crafted, acc, rej, unk := craftedLines()
	status, ans := col.PostEvents(t, crafted)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []int{acc, rej, unk}, []int{ans.Accepted, ans.Rejected, ans.Unknown}, "%+v", ans)
	run.extra.accepted += acc
	run.extra.rejected, run.extra.unknown = rej, unk
	md, scored := otlpAgent()
	postOTLP(t, fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP), md)
	run.extra.sdkScored = scored
	time.Sleep(3 * time.Second)
	post(bodies[third : 2*third])
	newer(2)
	time.Sleep(3 * time.Second)
	post(bodies[2*third:])
	newer(dashNewerStages)
	require.Equal(t, dashNewerRowCount(), run.extra.rows)
	return run
}
