//go:build linux

package e2e

import (
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// VictoriaMetrics beside Prometheus as the gateway's backend (docs/dashboards.md,
// "VictoriaMetrics"): the same generated run through two gateways of deploy/gateway.yaml, one
// writing into a remote-write Prometheus and one into VictoriaMetrics, and every dashboard
// query and rule expression asked of both at one instant.

// TestGatewayIntoVictoriaMetrics feeds the run of TestDashboardsAndRulesOnRealData (the shipped
// configuration, dashboardsOverride) and exports it to two gateways (deploy/gateway.yaml as it
// is, only its environment set), one per backend, so both hold the very same samples (same
// timestamps, same values). The collector's own metrics (the Collector dashboard, the rules
// on otelcol_*), which no gateway carries, are scraped by a Prometheus that remote-writes them
// into both. Then every panel query, recording rule and alert expression is asked of both at
// the same evaluation time: VictoriaMetrics must answer each without error, with exactly
// Prometheus' series (label sets) and values within victoriaTolerance, except where
// counterRollup says why not; every variable must list the same values. The differences of
// rate() and increase() that matter are asserted on their own.
func TestGatewayIntoVictoriaMetrics(t *testing.T) {
	t.Parallel()
	harness.PrometheusBinary(t)
	vm := harness.StartVictoriaMetrics(t)
	prom := harness.StartRemoteWritePrometheus(t)
	gwPorts := map[string]int{}
	for name, backend := range map[string]string{"prometheus": prom, "victoria": vm} {
		gwPorts[name] = harness.Port(t)
		startDeployed(t, "gateway-"+name, "gateway.yaml", []string{
			fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", gwPorts[name]),
			"OTELCOL_GYM_REMOTE_WRITE_URL=" + backend + "/api/v1/write",
			"OTELCOL_GYM_STORAGE_DIR=" + t.TempDir(), // one each: the flight recorder's state
		})
	}

	rulesData, err := os.ReadFile(filepath.Join(harness.Root, "deploy", "prometheus", "gym.rules.yaml"))
	require.NoError(t, err)
	all, _ := recordingRules(t, rulesData)
	// The dashboards and rules of TestDashboardsAndRulesOnRealData: the others need vLLM, DCGM,
	// node_exporter, spans or a price table, which this run has not.
	_, dashboards, _, records := splitDashboards("", loadDashboards(t), all)
	checks, vars, _ := dashboardChecks(t, dashboards, records)
	alerts := alertExprs(t, rulesData)
	require.NotEmpty(t, alerts)

	run := startGymRunWith(t, gymRunSetup{
		collector: func(harness.Ports, string) []string {
			return []string{fmt.Sprintf(`# The run also goes to both gateways.
exporters:
  otlp_grpc/prometheus:
    endpoint: 127.0.0.1:%d
    tls:
      insecure: true
  otlp_grpc/victoria:
    endpoint: 127.0.0.1:%d
    tls:
      insecure: true
service:
  pipelines:
    metrics:
      exporters: [prometheus, otlp_grpc/prometheus, otlp_grpc/victoria]
`, gwPorts["prometheus"], gwPorts["victoria"])}
		},
		// The collector's own metrics, scraped once and written into both backends.
		prometheus: func(p harness.Ports) string {
			return fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: otelcol
    static_configs: [{targets: ["127.0.0.1:%d"]}]
remote_write:
  - url: %s/api/v1/write
    queue_config: {batch_send_deadline: 1s}
  - url: %s/api/v1/write
    queue_config: {batch_send_deadline: 1s}
`, p.Telemetry, prom, vm)
		},
	})

	// One instant for both, 3 s after the last line was fed: every rate window still holds
	// the run. Once Prometheus answers every query, and that instant is 5 s past (a gateway
	// answers the collector once it has written; the scraper flushes every second), both
	// backends hold every sample up to it, and their answers at it no longer change.
	at := time.Now().Add(3 * time.Second)
	everyQueryAnswers(t, prom, checks, vars)
	panels := len(checks)
	checks = append(checks, alerts...)
	var cmp backendComparison
	err = harness.Eventually(180*time.Second, 2*time.Second, func() error {
		if time.Since(at) < 5*time.Second {
			return harness.ErrNotYet
		}
		cmp = compareBackends(prom, vm, checks, at)
		for _, name := range cmp.empty {
			if !strings.HasPrefix(name, "alert ") {
				cmp.diffs = append(cmp.diffs, name+": no series on Prometheus")
			}
		}
		cmp.diffs = append(cmp.diffs, compareVariables(prom, vm, vars)...)
		if len(cmp.diffs) > 0 {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "VictoriaMetrics differs from Prometheus:\n  %s", strings.Join(cmp.diffs, "\n  "))
	require.GreaterOrEqual(t, cmp.nonEmpty, panels, "every panel query and recording rule has series on both")
	t.Logf("%d queries (%d with series, %d of them exact) and %d variables agree on both backends; "+
		"rate/increase values differ by up to (|VictoriaMetrics / Prometheus - 1|, by range) %v",
		len(checks), cmp.nonEmpty, cmp.exact, len(vars), cmp.maxRatio)

	// increase() counts a counter that appears inside the window from 0 on VictoriaMetrics
	// only: the one unregistered failure kind the crafted lines sent (its counter appears at 1
	// and stays there) is no increase on Prometheus. The alert also fires on a series that is
	// new, so both backends raise it, for the same run, job and class.
	unregistered := alertExpr(t, alerts, "GymUnregisteredFailureKind")
	want := map[string]float64{`{job="nemo-gym/head",nemo_gym_failure_class="verifier",nemo_run_id="run1"}`: 1}
	got, err := vectorAt(vm, unregistered, at)
	require.NoError(t, err)
	require.Equal(t, want, got, "VictoriaMetrics")
	got, err = vectorAt(prom, unregistered, at)
	require.NoError(t, err)
	require.Equal(t, want, got, "Prometheus")
	got, err = vectorAt(prom, `sum by (nemo_run_id, job, nemo_gym_failure_class) (increase(gym_rollout_completed_total{nemo_gym_failure_kind="unregistered"}[10m]))`, at)
	require.NoError(t, err)
	for k, v := range got {
		require.Zero(t, v, "Prometheus' increase() alone misses the kind seen once (%s)", k)
	}
	// And it counts exactly what the counter holds, where Prometheus extrapolates from its
	// first sample: increase over a window longer than the run is the total.
	timeouts := `sum(gym_concurrency_admission_timeouts_total)`
	total, err := vectorAt(vm, timeouts, at)
	require.NoError(t, err)
	require.NotEmpty(t, total)
	got, err = vectorAt(vm, `sum(increase(gym_concurrency_admission_timeouts_total[10m]))`, at)
	require.NoError(t, err)
	require.Equal(t, total, got, "VictoriaMetrics' increase() is the counter's total")
	got, err = vectorAt(prom, `sum(increase(gym_concurrency_admission_timeouts_total[10m]))`, at)
	require.NoError(t, err)
	require.Less(t, got[`{}`], total[`{}`], "Prometheus' increase() misses the counter's first value")

	// PromQuery reads VictoriaMetrics as it reads Prometheus: a panel against what the run
	// implies.
	sandboxes := map[string]float64{}
	for k, v := range run.implies.sandboxes {
		sandboxes[fmt.Sprintf("{nemo_gym_sandbox_provider=%q}", k)] = v
	}
	waitVector(t, vm, substitute(panelExpr(t, dashboards, "gym-sandboxes", "Active sandboxes by provider")), sandboxes)
	waitVector(t, vm, `sum(gym_rollout_completed_total{job="nemo-gym/sdk-agent"})`, map[string]float64{`{}`: bombSize})
}

// victoriaTolerance is how far apart the two answers of one query may be, relative to the
// larger: float sums in another order.
const victoriaTolerance = 1e-9

// counterRollup finds the functions whose values MetricsQL computes otherwise than PromQL:
// rate() and increase() take the last sample before the window as their base, count a series
// that starts inside the window from 0, and do not extrapolate to the window's ends. Their
// answers must have the same series, each 0 on both or on neither, not the same values.
var counterRollup = regexp.MustCompile(`\b(rate|increase)\(`)

// rangeRE finds a range vector's range.
var rangeRE = regexp.MustCompile(`\[[0-9]+[smh]\]`)

// alertExprs are the alert expressions of gym.rules.yaml, as checks.
func alertExprs(t *testing.T, data []byte) []queryCheck {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(data, &f))
	var out []queryCheck
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, queryCheck{"alert " + r.Alert, r.Expr})
			}
		}
	}
	return out
}

// alertExpr is the expression of the alert named name.
func alertExpr(t *testing.T, alerts []queryCheck, name string) string {
	t.Helper()
	for _, a := range alerts {
		if a.name == "alert "+name {
			return a.query
		}
	}
	t.Fatalf("no alert %s in gym.rules.yaml", name)
	return ""
}

// panelExpr is the first query of a dashboard's panel.
func panelExpr(t *testing.T, dashboards []grafanaDashboard, uid, title string) string {
	t.Helper()
	for _, d := range dashboards {
		for _, p := range d.Panels {
			if d.UID == uid && p.Title == title {
				return p.Targets[0].Expr
			}
		}
	}
	t.Fatalf("no panel %q in dashboard %s", title, uid)
	return ""
}

// backendComparison is what compareBackends found.
type backendComparison struct {
	diffs    []string // an error, another set of series, a value out of tolerance
	empty    []string // the checks with no series on Prometheus
	nonEmpty int      // checks with series on both
	exact    int      // of those, checks whose values were compared within victoriaTolerance
	// the largest |VictoriaMetrics / Prometheus - 1| of a counterRollup value, by the query's
	// first range ([30s], [5m], ...)
	maxRatio map[string]float64
}

// compareBackends asks every check of both backends at one instant.
func compareBackends(prom, vm string, checks []queryCheck, at time.Time) backendComparison {
	c := backendComparison{maxRatio: map[string]float64{}}
	for _, q := range checks {
		want, err := vectorAt(prom, q.query, at)
		if err != nil {
			c.diffs = append(c.diffs, fmt.Sprintf("%s: Prometheus: %v", q.name, err))
			continue
		}
		got, err := vectorAt(vm, q.query, at)
		if err != nil {
			c.diffs = append(c.diffs, fmt.Sprintf("%s: VictoriaMetrics: %v", q.name, err))
			continue
		}
		// MetricsQL leaves NaN out of its answers (0/0 where a rate is 0): a NaN series of
		// Prometheus is one VictoriaMetrics does not list.
		for k, v := range want {
			if math.IsNaN(v) {
				delete(want, k)
			}
		}
		if len(want) == 0 {
			c.empty = append(c.empty, q.name)
		} else if len(got) > 0 {
			c.nonEmpty++
		}
		rollup := counterRollup.MatchString(q.query)
		if !rollup && len(want) > 0 {
			c.exact++
		}
		if d := vectorDiff(want, got, !rollup); d != "" {
			c.diffs = append(c.diffs, fmt.Sprintf("%s: %s\n    %s", q.name, d, q.query))
		}
		window := rangeRE.FindString(q.query)
		for k, w := range want {
			if g, ok := got[k]; ok && rollup && w != 0 {
				c.maxRatio[window] = math.Max(c.maxRatio[window], math.Abs(g/w-1))
			}
		}
	}
	return c
}

// vectorDiff says how got (VictoriaMetrics) differs from want (Prometheus), in its series and,
// when values is set, in their values (else only where one is 0 and the other not); "" when it
// does not.
func vectorDiff(want, got map[string]float64, values bool) string {
	var out []string
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("missing %s (Prometheus: %v)", k, want[k]))
		case math.IsNaN(g) || math.IsInf(g, 0) != math.IsInf(want[k], 0):
			out = append(out, fmt.Sprintf("%s: %v, Prometheus %v", k, g, want[k]))
		case !values && (g == 0) != (want[k] == 0):
			out = append(out, fmt.Sprintf("%s: %v, Prometheus %v (one of them 0)", k, g, want[k]))
		case values && !closeEnough(want[k], g):
			out = append(out, fmt.Sprintf("%s: %v, Prometheus %v", k, g, want[k]))
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("extra %s = %v", k, got[k]))
		}
	}
	return strings.Join(out, "; ")
}

func closeEnough(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= victoriaTolerance*math.Max(math.Abs(a), math.Abs(b))
}

// compareVariables: every variable lists the same values on both backends.
func compareVariables(prom, vm string, vars []queryCheck) []string {
	var diffs []string
	for _, v := range vars {
		want, err := labelValues(prom, v.query)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: Prometheus: %v", v.name, err))
			continue
		}
		got, err := labelValues(vm, v.query)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: VictoriaMetrics: %v", v.name, err))
			continue
		}
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(want, got) {
			diffs = append(diffs, fmt.Sprintf("%s: %q, Prometheus %q", v.name, got, want))
		}
	}
	return diffs
}

// vectorAt is harness.PromQuery evaluated at a given instant (the same one on both backends),
// with its labels written as PromQuery writes them.
func vectorAt(base, query string, at time.Time) (map[string]float64, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	path := "/api/v1/query?query=" + url.QueryEscape(query) + "&time=" + strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
	if err := harness.PromAPI(base, path, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("result type %s", data.ResultType)
	}
	out := map[string]float64{}
	for _, r := range data.Result {
		parts := make([]string, 0, len(r.Metric))
		for _, k := range sortedKeys(r.Metric) {
			parts = append(parts, fmt.Sprintf("%s=%q", k, r.Metric[k]))
		}
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("value %v", r.Value[1])
		}
		out["{"+strings.Join(parts, ",")+"}"] = v
	}
	return out, nil
}
