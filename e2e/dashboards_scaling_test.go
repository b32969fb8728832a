//go:build linux

package e2e

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The Scaling dashboard and the gym.scaling rules read vLLM's, dcgm-exporter's and
// node_exporter's series beside Gym's: TestDashboardScaling proves them on the job collector's
// scrapes. The Rollouts in flight dashboard reads the flight recorder's series, made from Gym's
// spans: TestDashboardInFlight. The Cost dashboard and the gym.cost rules read the price series
// of a price table: TestDashboardCost. The Model calls, tools and sandboxes dashboard reads the
// rollout evidence of run files: TestDashboardEvidence. The runs of the other dashboard tests
// have none of these.
const scalingUID, scalingRecordPrefix = "gym-scaling", "gym:scaling_"
const inFlightUID = "gym-inflight"
const costUID, costRecordPrefix = "gym-cost", "gym:cost_"
const evidenceUID = "gym-evidence"

// ownTests: the dashboards a test of their own proves, with the prefix of their recording
// rules ("": none).
var ownTests = map[string]string{scalingUID: scalingRecordPrefix, inFlightUID: "", costUID: costRecordPrefix, evidenceUID: ""}

// splitDashboards parts the dashboards and recording rules into those of uid and the others
// that no test of their own proves.
func splitDashboards(uid string, dashboards []grafanaDashboard, records map[string]string) (mine, others []grafanaDashboard, myRecords, otherRecords map[string]string) {
	for _, d := range dashboards {
		_, own := ownTests[d.UID]
		switch {
		case d.UID == uid:
			mine = append(mine, d)
		case !own:
			others = append(others, d)
		}
	}
	myRecords, otherRecords = map[string]string{}, map[string]string{}
	for name, expr := range records {
		owner := "" // the prefix of the test's rules that name belongs to
		for _, prefix := range ownTests {
			if prefix != "" && strings.HasPrefix(name, prefix) {
				owner = prefix
			}
		}
		switch owner {
		case "":
			otherRecords[name] = expr
		case ownTests[uid]:
			myRecords[name] = expr
		}
	}
	return mine, others, myRecords, otherRecords
}

// ownDashboard is the dashboard uid that a test of its own proves (one, in a slice, as
// dashboardChecks takes them), its recording rules, and deploy/prometheus/gym.rules.yaml, which
// the test's Prometheus loads.
func ownDashboard(t *testing.T, uid string) (dashboards []grafanaDashboard, records map[string]string, rulesData []byte) {
	t.Helper()
	harness.PrometheusBinary(t)
	rulesData, err := os.ReadFile(filepath.Join(harness.Root, "deploy", "prometheus", "gym.rules.yaml"))
	require.NoError(t, err)
	all, _ := recordingRules(t, rulesData)
	dashboards, _, records, _ = splitDashboards(uid, loadDashboards(t), all)
	require.Len(t, dashboards, 1, "deploy/grafana/dashboards/%s.json", uid)
	return dashboards, records, rulesData
}

// scalingExporter is the job collector's metrics pipeline with the Prometheus exporter of
// config/otelcol-gym.yaml (its labels and translation) added on port.
func scalingExporter(t *testing.T, port int) string {
	t.Helper()
	exporter := shippedExporter(t, filepath.Join("config", "otelcol-gym.yaml"), "prometheus")
	exporter["endpoint"] = fmt.Sprintf("127.0.0.1:%d", port)
	return exporterOverlay(t, "prometheus", exporter, "otlp_http/managed", "file/metrics", "prometheus")
}

// TestDashboardScaling: otelcol-gym as Gym's job collector (deploy/otelcol-gym-submit on Gym's
// rendered configuration) scrapes vLLM, dcgm-exporter and node_exporter (captures written from
// their documented names, served on loopback) and receives a generated Gym run's events; a real
// Prometheus scrapes it with deploy/prometheus/gym.rules.yaml loaded. Every panel query and
// variable of the Scaling dashboard, and every gym.scaling recording rule, answers with data;
// the vLLM panel and the model-server verdict say what the captures imply.
func TestDashboardScaling(t *testing.T) {
	t.Parallel()
	dashboards, records, rulesData := ownDashboard(t, scalingUID)
	require.NotEmpty(t, records)

	backend := httptest.NewServer(&harness.OTLPBackend{})
	t.Cleanup(backend.Close)
	exporterPort := harness.Port(t)
	j := startGymSubmit(t, backend.URL, scalingExporter(t, exporterPort))
	prom := harness.StartPrometheusWith(t,
		harness.Config(t, "prometheus-gym.yml", map[string]any{
			"P": harness.Ports{Prometheus: exporterPort, Telemetry: j.ports.Telemetry}, "interval": "1s", "rules": true}),
		map[string]string{"gym.rules.yaml": string(rulesData)})

	// Gym's events (a generated run of 4 processes, process 0 the rollout driver, and the
	// model calls of Gym's newer releases) in three parts a few scrapes apart.
	_, bodies := generatedRun(t, "7", "4", "6000")
	require.Greater(t, len(bodies), 3)
	col := &harness.Collector{Process: j.p, GymURL: fmt.Sprintf("http://127.0.0.1:%d", j.ports.Gym)}
	post := func(body string) {
		status, ans := col.PostEvents(t, body)
		require.Equal(t, http.StatusOK, status)
		require.Zero(t, ans.Rejected+ans.Unknown, "%+v", ans)
	}
	third := len(bodies) / 3
	for k, part := range [][]string{bodies[:third], bodies[third : 2*third], bodies[2*third:]} {
		for _, body := range part {
			post(body)
		}
		body, _ := dashNewerEvents(k + 1)
		post(body)
		time.Sleep(2 * time.Second)
	}

	checks, vars, _ := dashboardChecks(t, dashboards, records)
	everyQueryAnswers(t, prom, checks, vars)

	// What the captures imply: vLLM's running requests as served, under the job's routing
	// service.name (Gym's resource processor), and the model-server verdict of the rules.
	capture := func(name string) string {
		data, err := os.ReadFile(filepath.Join("testdata", "gym-submit", name))
		require.NoError(t, err)
		return string(data)
	}
	vllm, dcgm := capture("vllm.prom"), capture("dcgm.prom")
	// The highest sample of a series name in a capture.
	sample := func(text, name string) float64 {
		v := math.Inf(-1)
		for _, line := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(line, name+"{"); ok {
				_, s := harness.ParseSample("{" + rest)
				x, err := strconv.ParseFloat(s, 64)
				require.NoError(t, err, line)
				v = math.Max(v, x)
			}
		}
		require.False(t, math.IsInf(v, -1), "no %s in the capture", name)
		return v
	}
	const job = "my-eval-service"
	for _, d := range dashboards {
		for _, p := range d.Panels {
			if p.Title == "vLLM requests running and waiting" {
				waitVector(t, prom, substitute(p.Targets[0].Expr), map[string]float64{
					fmt.Sprintf(`{job=%q,model_name="Qwen/Qwen2.5-7B-Instruct"}`, job): sample(vllm, "vllm:num_requests_running")})
			}
		}
	}
	// Gym's model calls arrive under the same job as vLLM's series (the verdicts join on it): the
	// streamed call to policy of each stage has a time to first token.
	waitVector(t, prom, `sum by (job, nemo_gym_server_name) (gym_model_call_ttft_ms_count)`, map[string]float64{
		fmt.Sprintf(`{job=%q,nemo_gym_server_name="policy"}`, job): dashNewerStages})
	saturated := 0.0
	if sample(vllm, "vllm:num_requests_waiting") > 0 &&
		(sample(dcgm, "DCGM_FI_DEV_GPU_UTIL") >= 90 || sample(vllm, "vllm:kv_cache_usage_perc") >= 0.9) {
		saturated = 1
	}
	waitVector(t, prom, "gym:scaling_model_server_saturated", map[string]float64{fmt.Sprintf(`{__name__="gym:scaling_model_server_saturated",job=%q}`, job): saturated})
	everyRuleHealthy(t, prom, sortedKeys(records))
}
