//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// TestPrometheus feeds two Gym processes through the shipped default configuration and asks
// Debian's Prometheus, scraping the prometheus exporter, PromQL questions about them. The
// metric names are the exporter's translation (UnderscoreEscapingWithoutSuffixes): `.` becomes
// `_` and nothing is added (gym_event_loop_lag_ms_bucket, gym_rollout_completed_total, which
// ends in `_total` in Gym's schema), resource attributes named in the config
// (nemo.run.id, host.name) become labels, service.name/service.instance.id become job/instance,
// and every resource attribute is on target_info.
func TestPrometheus(t *testing.T) {
	t.Parallel()
	harness.PrometheusBinary(t) // fail or skip before starting anything
	col, ports := harness.StartDefaultCollector(t)
	prom := harness.StartPrometheus(t, fmt.Sprintf("127.0.0.1:%d", ports.Prometheus))

	for i, body := range harness.ReadBodies(t, filepath.Join("testdata", "prom-stream.jsonl")) {
		status, ans := col.PostEvents(t, body)
		require.Equal(t, http.StatusOK, status, "body %d", i+1)
		require.Zero(t, ans.Rejected+ans.Unknown, "body %d: %+v", i+1, ans)
	}

	cases := []struct {
		query string
		want  map[string]float64
	}{
		{
			// completed rollouts by outcome
			`sum by (nemo_gym_rollout_outcome) (gym_rollout_completed_total{nemo_run_id="e2e-prom"})`,
			map[string]float64{
				`{nemo_gym_rollout_outcome="scored"}`:  3,
				`{nemo_gym_rollout_outcome="failed"}`:  2,
				`{nemo_gym_rollout_outcome="omitted"}`: 1,
			},
		},
		{
			// 8 lag samples over both processes: 4 in (0.5, 1], 4 in (2.5, 5]. The 0.75
			// quantile is rank 6, the 2nd of 4 in (2.5, 5]: 2.5 + 2.5 * 2/4.
			`histogram_quantile(0.75, sum by (le) (gym_event_loop_lag_ms_bucket{nemo_run_id="e2e-prom"}))`,
			map[string]float64{`{}`: 3.75},
		},
		{
			// gym.sandbox.active summed over processes: driver docker +2; code_gen docker +1,
			// modal +1 -1 +1
			`sum(gym_sandbox_active{nemo_run_id="e2e-prom"})`,
			map[string]float64{`{}`: 4},
		},
		{
			// The resource's server type is on target_info (a label of every series only
			// for the attributes no instrument uses per point): join on job and instance.
			`sum by (job, nemo_gym_server_type) (gym_sandbox_active * on (job, instance) group_left (nemo_gym_server_type) target_info)`,
			map[string]float64{
				`{job="nemo-gym/driver",nemo_gym_server_type="orchestrator"}`:        2,
				`{job="nemo-gym/code_gen",nemo_gym_server_type="resources_servers"}`: 2,
			},
		},
		{
			// One instance per process: Gym's id and the resource's process.pid (gymattrs).
			`sum by (instance) (gym_event_loop_lag_ms_count)`,
			map[string]float64{
				`{instance="e2e-prom-driver-0-pid4242"}`:   6,
				`{instance="e2e-prom-code_gen-0-pid4243"}`: 2,
			},
		},
	}
	for _, c := range cases {
		waitVector(t, prom, c.query, c.want)
	}
}

func equalVectors(got, want map[string]float64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || g < w-1e-9 || g > w+1e-9 {
			return false
		}
	}
	return true
}

// TestAlertRunbookURLs: every alert of deploy/prometheus/gym.rules.yaml links its runbook with
// an absolute runbook_url (a relative path means nothing to Alertmanager or a pager), all on
// one base that docs/alerts.md names, each anchor a heading of docs/alerts.md.
func TestAlertRunbookURLs(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(harness.Root, "deploy", "prometheus", "gym.rules.yaml"))
	require.NoError(t, err)
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(data, &f))
	doc, err := os.ReadFile(filepath.Join(harness.Root, "docs", "alerts.md"))
	require.NoError(t, err)
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			anchors[strings.ToLower(strings.TrimSpace(h))] = true
		}
	}
	bases := map[string]bool{}
	alerts := 0
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			_, relative := r.Annotations["runbook"]
			assert.False(t, relative, "%s: a `runbook` annotation (use runbook_url)", r.Alert)
			raw := r.Annotations["runbook_url"]
			u, err := url.Parse(raw)
			if !assert.NoError(t, err, "%s: runbook_url %q", r.Alert, raw) {
				continue
			}
			assert.True(t, u.IsAbs() && u.Scheme == "https" && u.Host != "", "%s: runbook_url %q is not an absolute https URL", r.Alert, raw)
			assert.Equal(t, strings.ToLower(r.Alert), u.Fragment, "%s: runbook_url %q", r.Alert, raw)
			assert.True(t, anchors[u.Fragment], "%s: docs/alerts.md has no heading for #%s", r.Alert, u.Fragment)
			bases[strings.TrimSuffix(raw, "#"+u.Fragment)] = true
		}
	}
	require.NotZero(t, alerts)
	require.Len(t, bases, 1, "one runbook base for every alert (the one to rewrite): %v", bases)
	for base := range bases {
		assert.Contains(t, string(doc), "`"+base+"`", "docs/alerts.md names the runbook base")
	}
}

// TestRunStalledWindowRecipe runs the command docs/alerts.md gives to change GymRunStalled's
// window to 30 minutes: it rewrites that alert alone, and promtool's unit test of the result
// finds the new window everywhere (a run stalled from its start is silent until 30 minutes,
// one whose completions stop at 10m fires 30 minutes later, not 10).
func TestRunStalledWindowRecipe(t *testing.T) {
	t.Parallel()
	promtool := promtoolBinary(t)
	doc, err := os.ReadFile(filepath.Join(harness.Root, "docs", "alerts.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n### GymRunStalled\n")
	require.True(t, ok, "docs/alerts.md has no GymRunStalled section")
	section, _, _ = strings.Cut(section, "\n### ")
	m := regexp.MustCompile(`(?s)sed '([^']+)' \\\s+(\S+) >`).FindStringSubmatch(section)
	require.NotNil(t, m, "no sed command in the GymRunStalled section")
	require.Equal(t, "deploy/prometheus/gym.rules.yaml", m[2])
	original := filepath.Join(harness.Root, m[2])
	rewritten, err := exec.Command("sed", m[1], original).Output()
	require.NoError(t, err, "sed %s", m[1])

	type rulesFile struct {
		Groups []struct {
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	rules := func(data []byte) map[string]map[string]any {
		var f rulesFile
		require.NoError(t, yaml.Unmarshal(data, &f))
		out := map[string]map[string]any{}
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				name, _ := r["alert"].(string)
				if name == "" {
					name, _ = r["record"].(string)
				}
				out[name] = r
			}
		}
		return out
	}
	before, err := os.ReadFile(original)
	require.NoError(t, err)
	was, now := rules(before), rules(rewritten)
	require.Equal(t, len(was), len(now))
	for name, r := range was {
		if name != "GymRunStalled" {
			assert.Equal(t, r, now[name], "%s changed", name)
		}
	}
	stalled := now["GymRunStalled"]
	require.NotNil(t, stalled)
	assert.NotContains(t, stalled["expr"], "10m")
	assert.Equal(t, 3, strings.Count(stalled["expr"].(string), "30m"), "the window's three places:\n%s", stalled["expr"])

	annotations := stalled["annotations"].(map[string]any)
	alert := func(run string) map[string]any {
		return map[string]any{
			"exp_labels": map[string]string{"severity": "warning", "nemo_run_id": run},
			"exp_annotations": map[string]any{
				"summary":     fmt.Sprintf("Run %s has 16 rollouts in flight and completed none in 30 minutes", run),
				"description": annotations["description"],
				"runbook_url": annotations["runbook_url"],
			},
		}
	}
	at := func(eval string, alerts ...map[string]any) map[string]any {
		return map[string]any{"alertname": "GymRunStalled", "eval_time": eval, "exp_alerts": append([]map[string]any{}, alerts...)}
	}
	tests := map[string]any{
		"rule_files":          []string{"gym.rules.yaml"},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval": "1m",
			"input_series": []map[string]string{
				{"series": `gym_driver_rollouts_resident{nemo_run_id="r1",job="nemo-gym/driver"}`, "values": "16x50"},
				{"series": `gym_driver_rollouts_resident{nemo_run_id="r2",job="nemo-gym/driver"}`, "values": "16x50"},
				{"series": `gym_rollout_completed_total{nemo_run_id="r2",job="nemo-gym/driver",nemo_gym_rollout_outcome="scored"}`, "values": "0+5x10 50x40"},
			},
			"alert_rule_test": []any{at("29m"), at("35m", alert("r1")), at("41m", alert("r1"), alert("r2"))},
		}},
	}
	testYAML, err := yaml.Marshal(tests)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gym.rules.yaml"), rewritten, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "window.test.yaml"), testYAML, 0o600))
	cmd := exec.Command(promtool, "test", "rules", "window.test.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool test rules on the rewritten rules:\n%s\n%s", out, testYAML)
}

// TestRemoteWriteNamesAsScrape: the gateway's remote write (deploy/gateway.yaml) names Gym's
// series as a scrape of the default configuration's prometheus exporter does, so the dashboards
// and rules work on either backend: the same metrics go through both (the default collector
// exports to its prometheus exporter and to a gateway), and both Prometheus end up with the same
// Gym and process names, each a series name of an instrument of metadata.yaml.
func TestRemoteWriteNamesAsScrape(t *testing.T) {
	t.Parallel()
	remote, gwPort := startGatewayToPrometheus(t)
	col, ports := harness.StartDefaultCollector(t, harness.Config(t, "remote-write-as-scrape.yaml", map[string]any{"gateway": gwPort}))
	scraped := harness.StartPrometheus(t, fmt.Sprintf("127.0.0.1:%d", ports.Prometheus))

	bodies := harness.ReadBodies(t, filepath.Join("testdata", "prom-stream.jsonl"))
	for k := 1; k <= dashNewerStages; k++ {
		body, _ := dashNewerEvents(k)
		bodies = append(bodies, body)
	}
	crafted, _, _, _ := craftedLines()
	for i, body := range append(bodies, crafted) {
		status, _ := col.PostEvents(t, body)
		require.Equal(t, http.StatusOK, status, "body %d", i+1)
	}
	md, _ := otlpAgent()
	postOTLP(t, fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP), md)

	series := schemaSeries(loadSchemaInstruments(t))
	// Names the fed data gives, whatever the translation: every one must be in both.
	must := []string{"gym_rollout_completed_total", "gym_event_loop_lag_ms_bucket", "gym_model_call_tokens_count",
		"gym_server_memory_usage", "gym_verify_success_rate", "gym_sandbox_create_retry_total", "process_cpu_time"}
	var inScrape, inRemote []string
	err := harness.Eventually(120*time.Second, time.Second, func() error {
		var err error
		if inScrape, err = schemaNames(scraped); err != nil {
			return err
		}
		if inRemote, err = schemaNames(remote); err != nil {
			return err
		}
		for _, m := range must {
			if !slices.Contains(inScrape, m) || !slices.Contains(inRemote, m) {
				return harness.ErrNotYet
			}
		}
		if !slices.Equal(inScrape, inRemote) {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "scrape: %v\nremote write: %v", inScrape, inRemote)
	for _, n := range inScrape {
		assert.Contains(t, series, n, "%s is no series name of an instrument of metadata.yaml", n)
	}
}

// schemaNames lists the gym_* and process_* metric names a Prometheus holds, sorted.
func schemaNames(base string) ([]string, error) {
	var names []string
	if err := harness.PromAPI(base, "/api/v1/label/__name__/values", &names); err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "gym_") || strings.HasPrefix(n, "process_") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}
