//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// TestDefaultResourcesStayApart: one agent (deploy/agent.yaml) gets events with no resource
// line over HTTP, its Unix socket and two events files: four default resources (gym.source
// http, unix, and file with each file's log.file.path), which name no service and so give
// Prometheus no job or instance. Through the gateway (deploy/gateway.yaml) into a real
// Prometheus, each stays its own series, with its own exact total: gym.source and
// log.file.path are among the labels every series carries (they were not, and the four
// resources' points landed in one series, each collection overwriting the others').
func TestDefaultResourcesStayApart(t *testing.T) {
	t.Parallel()
	prom, gwPort := startGatewayToPrometheus(t)
	dir := t.TempDir()
	logs, sock, gymPort := filepath.Join(dir, "gym"), filepath.Join(dir, "gym.sock"), harness.Port(t)
	require.NoError(t, os.MkdirAll(logs, 0o700))
	startDeployed(t, "agent", "agent.yaml", []string{
		fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", gwPort),
		"OTELCOL_GYM_STORAGE_DIR=" + filepath.Join(dir, "state"),
		fmt.Sprintf("OTELCOL_GYM_EVENTS_ENDPOINT=127.0.0.1:%d", gymPort),
		"OTELCOL_GYM_EVENTS_SOCKET=" + sock,
		"OTELCOL_GYM_EVENT_FILES=" + filepath.Join(logs, "*.events.jsonl"),
		"OTELCOL_GYM_FILES_POLL_INTERVAL=100ms",
		"OTELCOL_GYM_COLLECTION_INTERVAL=300ms",
		"OTELCOL_GYM_PROCESS_STATS=false",
		"OTELCOL_GYM_RUN_FILES=" + filepath.Join(dir, "results", "*.jsonl"),
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		fmt.Sprintf("OTELCOL_GYM_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		"OTELCOL_GYM_NODE_NAME=node-d",
	})
	a, b := filepath.Join(logs, "a.events.jsonl"), filepath.Join(logs, "b.events.jsonl")
	harness.AppendFile(t, a, lines("", 0, 3, false))
	harness.AppendFile(t, b, lines("", 0, 4, false))
	code, answer := harness.Post(t, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/v1/events", gymPort), lines("", 0, 1, false), nil)
	require.Equal(t, http.StatusOK, code, answer)
	require.NoError(t, harness.Eventually(10*time.Second, 50*time.Millisecond, func() error {
		_, err := os.Stat(sock)
		return err
	}))
	harness.SendStream(t, "unix", sock, lines("", 0, 2, false))

	want := map[string]float64{"http": 1, "unix": 2, "file " + a: 3, "file " + b: 4}
	var got map[string]float64
	err := harness.Eventually(60*time.Second, 250*time.Millisecond, func() error {
		series, err := harness.PromRaw(prom, `gym_rollout_completed_total{host_name="node-d"}`)
		if err != nil {
			return err
		}
		got = map[string]float64{}
		for _, s := range series {
			key := s.Labels["gym_source"]
			if p := s.Labels["log_file_path"]; p != "" {
				key += " " + p
			}
			total, _ := counterTotal(s.Samples)
			got[key] += total
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "Prometheus' series by source: %v, want %v", got, want)
}
