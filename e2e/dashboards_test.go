//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
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
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.yaml.in/yaml/v3"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/gymgen"
)

// The dashboards and rules of deploy/ against real data: the shipped configuration fed a
// generated Gym run (events), crafted lines (a rejected one, an unknown event, a cardinality
// bomb), OTLP through gymattrs, the events of Gym's newer releases and a Gym run file with
// responses (dashboards_newer_test.go), scraped by Debian's Prometheus with deploy's rules
// loaded.

// dashboardsOverride: the collector reads its own process (the Processes dashboard), collects
// every 300ms (the default configuration's override), follows the Gym run files of results
// (the Models dashboard), and keeps at most bombLimit series per instrument and resource (in
// the receiver and in gymattrs), so that the bombs stay small. The generated run has at most
// 64 series per instrument and resource.
func dashboardsOverride(t *testing.T, results string) string {
	t.Helper()
	return harness.Config(t, "dashboards-override.yaml", map[string]any{"results": filepath.Join(results, "*.jsonl")})
}

// bombSize attribute sets are sent to an instrument whose limit is 100: 99 keep their series,
// the other 51 fold into the overflow series.
const bombSize, bombOverflow = 150, 51

// dashboardVars are the values a panel's query gets in the test: every variable at All (.*),
// Grafana's intervals at what a 1s scrape gives.
var dashboardVars = map[string]string{
	"$__rate_interval": "30s", // 10 scrape intervals
	"$__interval":      "5s",
	"$__range":         "5m",
	"$run":             ".*",
	"$service":         ".*",
	"$instance":        ".*",
	"$dispatch":        ".*",
	"$server":          ".*",
	"$model":           ".*",
	"$collector":       ".*",
	"$receiver":        ".*",
}

func substitute(expr string) string {
	keys := make([]string, 0, len(dashboardVars))
	for k := range dashboardVars {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) }) // $__range before $run...
	for _, k := range keys {
		expr = strings.ReplaceAll(expr, "${"+strings.TrimPrefix(k, "$")+"}", dashboardVars[k])
		expr = strings.ReplaceAll(expr, k, dashboardVars[k])
	}
	return expr
}

// grafanaDashboard is the part of Grafana's dashboard JSON the test reads.
type grafanaDashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// queryVariable is a dashboard variable of type query: its name and its query's text.
type queryVariable struct{ name, query string }

// queryVariables are the dashboard's variables of type query (Grafana writes the query as a
// string or as an object with a query field).
func (d grafanaDashboard) queryVariables() []queryVariable {
	var out []queryVariable
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := v.Query
		if m, ok := q.(map[string]any); ok {
			q = m["query"]
		}
		s, _ := q.(string)
		out = append(out, queryVariable{v.Name, s})
	}
	return out
}

func loadDashboards(t *testing.T) []grafanaDashboard {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(harness.Root, "deploy", "grafana", "dashboards", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	var out []grafanaDashboard
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		var d grafanaDashboard
		require.NoError(t, json.Unmarshal(data, &d), p)
		require.NotEmpty(t, d.Panels, p)
		out = append(out, d)
	}
	return out
}

// recordingRules reads the recording rules (name -> expr) and the alert names of gym.rules.yaml.
func recordingRules(t *testing.T, data []byte) (records map[string]string, alerts []string) {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
				Alert  string `yaml:"alert"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(data, &f))
	records = map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = r.Expr
			} else {
				alerts = append(alerts, r.Alert)
			}
		}
	}
	return records, alerts
}

// runImplies is what the generated stream says, counted from its lines.
type runImplies struct {
	outcomes  map[string]float64 // rollout.completed by outcome
	sandboxes map[string]float64 // sandbox.active deltas by provider
	lines     int                // every line, resource lines included
}

func countRun(t *testing.T, data []byte) runImplies {
	t.Helper()
	r := runImplies{outcomes: map[string]float64{}, sandboxes: map[string]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		r.lines++
		var ev struct {
			Event    string `json:"event"`
			Outcome  string `json:"outcome"`
			Provider string `json:"provider"`
			Delta    int    `json:"delta"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		switch ev.Event {
		case "rollout.completed":
			r.outcomes[ev.Outcome]++
		case "sandbox.active":
			r.sandboxes[ev.Provider] += float64(ev.Delta)
		}
	}
	require.NoError(t, sc.Err())
	return r
}

// generatedRun is a run gymevents gen makes from a seed (Gym processes, process 0 the rollout
// driver, and events), in batches of 500 events: the stream and its bodies.
func generatedRun(t *testing.T, seed, processes, events string) ([]byte, []string) {
	t.Helper()
	stream := filepath.Join(t.TempDir(), "run.jsonl")
	out, err := exec.Command(gymeventsBin, "gen", "--seed", seed, "--processes", processes, "--events", events,
		"--batch", "500", "--out", stream).CombinedOutput()
	require.NoError(t, err, "gymevents gen: %s", out)
	data, err := os.ReadFile(stream)
	require.NoError(t, err)
	return data, gymgen.Bodies(data)
}

// craftedLines: a process whose resource is server `head` records a stage of server `math`,
// fails a rollout with an unregistered failure kind, and sends a line that is rejected and an
// unknown event; then a process that retries sandboxes of more providers than the
// cardinality limit: the providers past it fold into the overflow series.
func craftedLines() (body string, accepted, rejected, unknown int) {
	var b strings.Builder
	b.WriteString(`{"event":"resource","attributes":{"service.name":"nemo-gym/head","service.instance.id":"run1-head","nemo.run.id":"run1","nemo.gym.server.name":"head","nemo.gym.server.type":"orchestrator"}}` + "\n")
	b.WriteString(`{"event":"server.startup_stage","stage":"warmup","server_name":"math","server_type":"resources_servers","duration_ms":1234.5}` + "\n")
	b.WriteString(`{"event":"rollout.completed","outcome":"failed","dispatch_name":"d0","failure_class":"verifier","failure_kind":"Verifier crashed"}` + "\n")
	b.WriteString(`{"event":"event_loop.lag","loop":"main"}` + "\n") // rejected: no lag_ms
	b.WriteString(`{"event":"gym.future_event","x":1}` + "\n")       // unknown
	b.WriteString(`{"event":"resource","attributes":{"service.name":"nemo-gym/bomb","service.instance.id":"run1-bomb","nemo.run.id":"run1"}}` + "\n")
	for i := range bombSize {
		fmt.Fprintf(&b, `{"event":"sandbox.create_retry","provider":"provider-%d"}`+"\n", i)
	}
	return b.String(), 2 + 2 + bombSize, 1, 1
}

// otlpAgent is one export of a Gym SDK: bombSize scored rollouts, one per dispatch name, each
// with an undeclared attribute (gymattrs removes it and folds the dispatches past its
// cardinality limit into the overflow series, losing no count), and a cancelled request
// whose route is a raw URL (normalised to `unmatched`).
func otlpAgent() (md pmetric.Metrics, scored int) {
	md = pmetric.NewMetrics()
	sm := sdkScope(md, "", map[string]any{
		"service.name": "nemo-gym/sdk-agent", "service.instance.id": "run1-sdk-agent-0", "nemo.run.id": "run1",
		"nemo.gym.server.name": "simple_agent",
	})
	now := pcommon.NewTimestampFromTime(time.Now())
	start := now - pcommon.Timestamp(time.Minute)
	sum := func(name, unit string) pmetric.NumberDataPointSlice {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		return s.DataPoints()
	}
	completed := sum("gym.rollout.completed_total", "1")
	for i := range bombSize {
		dp := completed.AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(now)
		dp.SetIntValue(1)
		dp.Attributes().PutStr("nemo.gym.rollout.outcome", "scored")
		dp.Attributes().PutStr("nemo.gym.rollout.dispatch.name", fmt.Sprintf("sdk-dispatch-%04d", i))
		dp.Attributes().PutStr("user.id", fmt.Sprintf("u%d", i))
	}
	cancelled := sum("gym.server.requests.cancelled_total", "{request}")
	dp := cancelled.AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(now)
	dp.SetIntValue(3)
	dp.Attributes().PutStr("http.route", "/run/12345?verbose=1")
	dp.Attributes().PutStr("nemo.gym.request.phase", "before_response")
	return md, bombSize
}

// TestDashboardsAndRulesOnRealData runs every query of every dashboard in deploy/grafana
// (variables at All), every template variable, and every recording rule of
// deploy/prometheus/gym.rules.yaml against Prometheus scraping a real run, and fails on an
// error or an empty result. Then it checks a few panels against what the run implies, and that
// Prometheus evaluates every rule without error.
func TestDashboardsAndRulesOnRealData(t *testing.T) {
	t.Parallel()
	harness.PrometheusBinary(t)
	rulesData, err := os.ReadFile(filepath.Join(harness.Root, "deploy", "prometheus", "gym.rules.yaml"))
	require.NoError(t, err)
	all, alerts := recordingRules(t, rulesData)
	// The Scaling dashboard and its rules need vLLM, DCGM and node_exporter (TestDashboardScaling),
	// the Rollouts in flight dashboard Gym's spans (TestDashboardInFlight).
	_, dashboards, _, records := splitDashboards("", loadDashboards(t), all)
	require.NotEmpty(t, records)
	run := startGymRun(t)

	checks, vars, gymVars := dashboardChecks(t, dashboards, records)
	everyQueryAnswers(t, run.prom, checks, vars)

	// The Gym dashboards' variables offer Gym processes only: no empty value, and none of the
	// collector's own identities (the scrape jobs gym and otelcol, its service.name
	// otelcol-gym, a scrape target's address as instance).
	collectorIDs := map[string]bool{"": true, "gym": true, "otelcol": true, "otelcol-gym": true}
	for _, v := range gymVars {
		vals, err := labelValues(run.prom, v.query)
		require.NoError(t, err, v.name)
		for _, val := range vals {
			assert.False(t, collectorIDs[val] || strings.HasPrefix(val, "127.0.0.1:"),
				"%s offers %q, which is no Gym process's\n    %s", v.name, val, v.query)
		}
	}

	// The exporter's names: promtool check metrics finds nothing to say about a Gym metric
	// (no unit doubled, counters with _total, help text), and every series a dashboard names
	// is in the scrape.
	scrape, err := harness.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", run.ports.Prometheus))
	require.NoError(t, err)
	// What promtool may still say is about Gym's own spelling, which no translation changes:
	// an abbreviated unit (gym.event_loop.lag_ms), gym.gc.count's _count, gym.host.memory.total's
	// _total, a percentage (gym.process.cpu.percent, as Gym sends it). Another base unit or a
	// counter without _total must not be there.
	ownSpelling := []string{"metric names should not contain abbreviated units", `use base unit "ratio" instead of "percent"`,
		`non-histogram and non-summary metrics should not have "_count" suffix`,
		`non-counter metrics should not have "_total" suffix`}
	series := schemaSeries(loadSchemaInstruments(t))
	for _, problem := range promtoolCheckMetrics(t, scrape) {
		name, text, _ := strings.Cut(problem, " ")
		if !strings.HasPrefix(name, "gym_") || text == "no help text" { // help: the sender's description (the test's OTLP has none)
			continue
		}
		_, gymName := series[name]
		_, histogram := series[name+"_bucket"] // promtool names a histogram's family
		gymName = gymName || histogram
		assert.True(t, gymName && slices.Contains(ownSpelling, text), "promtool check metrics: %s", problem)
	}
	scraped := scrapedNames(scrape)
	for _, d := range dashboards {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				for _, m := range gymNameRE.FindAllStringSubmatch(tg.Expr, -1) {
					assert.True(t, scraped[m[1]], "%s: %q reads %s, which the exporter does not export", d.UID, p.Title, m[1])
				}
			}
		}
	}

	// A few panels against what the run implies.
	want := func(query string, wantVec map[string]float64) {
		t.Helper()
		waitVector(t, run.prom, query, wantVec)
	}
	panelQuery := func(uid, title string) string {
		for _, d := range dashboards {
			for _, p := range d.Panels {
				if d.UID == uid && p.Title == title {
					return substitute(p.Targets[0].Expr)
				}
			}
		}
		t.Fatalf("no panel %q in dashboard %s", title, uid)
		return ""
	}
	outcomes := map[string]float64{}
	for k, v := range run.implies.outcomes {
		outcomes[fmt.Sprintf("{nemo_gym_rollout_outcome=%q}", k)] = v
	}
	outcomes[`{nemo_gym_rollout_outcome="failed"}`]++ // the unregistered kind
	// OTLP: gymattrs keeps cardinality_limit-1 (99) dispatches as series of their own and
	// folds the other 51 into the overflow series, whose only attribute is the overflow marker.
	outcomes[`{nemo_gym_rollout_outcome="scored"}`] += float64(run.extra.sdkScored - bombOverflow)
	outcomes[`{nemo_gym_rollout_outcome="scored"}`] += float64(run.extra.rows) // every main-output row is a scored attempt
	outcomes[`{}`] = bombOverflow
	want(panelQuery("gym-rollouts", "Rollouts completed since start, by outcome"), outcomes)

	sandboxes := map[string]float64{}
	for k, v := range run.implies.sandboxes {
		sandboxes[fmt.Sprintf("{nemo_gym_sandbox_provider=%q}", k)] = v
	}
	want(panelQuery("gym-sandboxes", "Active sandboxes by provider"), sandboxes)

	// The stage of server math recorded by the resource head stays math.
	want(`sum by (nemo_gym_server_name) (gym_server_startup_stage_duration_ms_count{job="nemo-gym/head"})`,
		map[string]float64{`{nemo_gym_server_name="math"}`: 1})

	// The newer instruments against what dashboards_newer_test.go fed, computed by hand there.
	// Run files: tokens by type, truncated share, tool calls, finish reasons.
	want(panelQuery("gym-models", "Tokens since start, by type"), dashNewerTokens)
	want(panelQuery("gym-models", "Truncated share since start"), map[string]float64{`{}`: dashNewerTruncated})
	want(`sum(gym_rollout_tool_calls_sum)`, map[string]float64{`{}`: dashNewerToolCalls})
	want(`sum(gym_rollout_tool_calls_count)`, map[string]float64{`{}`: dashNewerToolCallRows})
	want(`sum by (nemo_gym_rollout_finish_reason) (gym_rollout_finish_total)`, map[string]float64{
		`{nemo_gym_rollout_finish_reason="completed"}`:         3,
		`{nemo_gym_rollout_finish_reason="max_output_tokens"}`: 2,
		`{nemo_gym_rollout_finish_reason="failed"}`:            1,
	})
	want(`sum(otelcol_receiver_gym_rollout_rows_accepted)`, map[string]float64{`{}`: float64(run.extra.rows)})
	// Events: model-call tokens and finish reasons of the ok calls only, the last snapshot's
	// waiters, the last memory sample, 2 of 3 verifications completed.
	want(`sum by (nemo_gym_server_name, nemo_gym_model_call_token_type) (gym_model_call_tokens_sum)`, dashNewerCallTokens)
	want(`sum by (nemo_gym_model_call_finish_reason) (gym_model_call_finish_total)`, map[string]float64{
		`{nemo_gym_model_call_finish_reason="stop"}`:   dashNewerStages,
		`{nemo_gym_model_call_finish_reason="length"}`: dashNewerStages,
	})
	want(`sum by (nemo_gym_model_call_outcome) (gym_model_call_duration_ms_count)`, map[string]float64{
		`{nemo_gym_model_call_outcome="ok"}`:      2 * dashNewerStages,
		`{nemo_gym_model_call_outcome="timeout"}`: dashNewerStages,
	})
	want(panelQuery("gym-concurrency-memory", "Queue depth (callers waiting for a slot)"), map[string]float64{
		`{nemo_gym_concurrency_component="model_client",nemo_gym_concurrency_limit_name="requests",nemo_gym_server_name="policy"}`: dashNewerStages,
		`{nemo_gym_concurrency_component="driver",nemo_gym_concurrency_limit_name="rollouts"}`:                                     0,
	})
	want(panelQuery("gym-concurrency-memory", "Server memory by server and type"), map[string]float64{
		`{memory_type="rss",nemo_gym_server_name="math"}`:  dashNewerStages * 100_000_000,
		`{memory_type="pss",nemo_gym_server_name="math"}`:  dashNewerStages * 80_000_000,
		`{memory_type="rss",nemo_gym_server_name="judge"}`: dashNewerStages * 50_000_000,
	})
	want(panelQuery("gym-rollouts", "Verification success rate"), map[string]float64{
		fmt.Sprintf(`{instance=%q,job=%q}`, dashNewerInstance, dashNewerJob): 2.0 / 3.0,
	})

	// Gym's own OTLP-only instruments against what dashboards_gymreal_test.go fed.
	want(panelQuery("gym-processes", "GPU utilisation by server and GPU"), dashRealGPUUtil)
	want(`sum by (nemo_gym_http_retry_reason) (gym_http_retry_total)`, dashRealRetries)
	want(`sum by (nemo_gym_tool_name) (gym_tool_call_duration_ms_count)`, dashRealToolRuns)
	want(`sum by (nemo_gym_agent_name, nemo_gym_benchmark_name) (gym_agent_turn_count_sum)`, dashRealTurns)

	// The collector's counters (the Collector dashboard's panels are their rates).
	want(`sum(otelcol_receiver_gym_lines_accepted)`, map[string]float64{`{}`: float64(run.implies.lines + run.extra.accepted)})
	// The other reasons' series are there at 0 from the start (TestCollectorDashboardAtZero).
	want(`sum by (receiver, reason) (otelcol_receiver_gym_lines_rejected) > 0`, map[string]float64{`{reason="missing_field",receiver="gym"}`: 1})
	want(`sum by (receiver) (otelcol_receiver_gym_lines_unknown)`, map[string]float64{`{receiver="gym"}`: 1})
	// The bomb's providers past the limit fold into the overflow series: 51 measurements.
	want(`sum by (receiver) (otelcol_receiver_gym_measurements_overflowed)`, map[string]float64{`{receiver="gym"}`: bombOverflow})

	// Prometheus evaluates every rule without error, and the overflow alert fires on this run
	// (the bomb's sandbox retries, and the OTLP dispatches past gymattrs' limit).
	everyRuleHealthy(t, run.prom, append(sortedKeys(all), alerts...))
	want(`group by (metric, job) (ALERTS{alertname="GymSeriesOverflowing", alertstate="firing"})`, map[string]float64{
		`{job="nemo-gym/bomb",metric="gym_sandbox_create_retry_total"}`:   1,
		`{job="nemo-gym/sdk-agent",metric="gym_rollout_completed_total"}`: 1,
	})
	// The model client's waits time out again after Prometheus has seen the last total (on a
	// loaded machine the first scrapes can come after every stage was fed): the alert fires,
	// for that limit only (the driver's limit has no admission timeout).
	body, lines := dashNewerTimeouts(2*dashNewerStages + 2)
	status, ans := run.col.PostEvents(t, body)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, lines, ans.Accepted, "%+v", ans)
	want(`sum(gym_concurrency_admission_timeouts_total)`, map[string]float64{`{}`: 2*dashNewerStages + 2})
	want(`group by (job, nemo_gym_concurrency_component, nemo_gym_concurrency_limit_name) (ALERTS{alertname="GymAdmissionTimeouts", alertstate="firing"})`, map[string]float64{
		fmt.Sprintf(`{job=%q,nemo_gym_concurrency_component="model_client",nemo_gym_concurrency_limit_name="requests"}`, dashNewerJob): 1,
	})
}

// TestCollectorDashboardAtZero: a fresh collector on the shipped configuration, before any
// line: its telemetry endpoint holds otelcol_receiver_gym_lines_rejected at 0 for every reason
// docs/receiver.md lists, and every panel of the Collector dashboard, as the rejected-lines
// recording rule, answers 0 (not "No data", which reads as a broken pipeline).
func TestCollectorDashboardAtZero(t *testing.T) {
	t.Parallel()
	harness.PrometheusBinary(t)
	_, ports := harness.StartDefaultCollector(t)

	doc, err := os.ReadFile(filepath.Join(harness.Root, "docs", "receiver.md"))
	require.NoError(t, err)
	const intro = "Reasons (the `reason` attribute of `otelcol_receiver_gym_lines_rejected`):"
	_, list, ok := strings.Cut(string(doc), intro)
	require.True(t, ok, "docs/receiver.md lists the rejection reasons")
	list, _, _ = strings.Cut(list, ".\n")
	var reasons []string
	for _, m := range regexp.MustCompile("`([a-z_0-9]+)`").FindAllStringSubmatch(list, -1) {
		reasons = append(reasons, m[1])
	}
	require.GreaterOrEqual(t, len(reasons), 10, "%q", list)
	text, err := harness.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Telemetry))
	require.NoError(t, err)
	rejected := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "otelcol_receiver_gym_lines_rejected{"); ok {
			ls, v := harness.ParseSample("{" + rest)
			rejected[ls["reason"]] = v
		}
	}
	for _, r := range reasons {
		assert.Equal(t, "0", rejected[r], "otelcol_receiver_gym_lines_rejected{reason=%q} on a fresh collector", r)
	}

	rulesData, err := os.ReadFile(filepath.Join(harness.Root, "deploy", "prometheus", "gym.rules.yaml"))
	require.NoError(t, err)
	records, _ := recordingRules(t, rulesData)
	checks := []queryCheck{{"recording rule gym:receiver_lines_rejected:rate5m", records["gym:receiver_lines_rejected:rate5m"]}}
	require.NotEmpty(t, checks[0].query)
	for _, d := range loadDashboards(t) {
		if d.UID != "gym-collector" {
			continue
		}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				checks = append(checks, queryCheck{fmt.Sprintf("%q (%s)", p.Title, tg.RefID), substitute(tg.Expr)})
			}
		}
	}
	require.Greater(t, len(checks), 5)
	prom := harness.StartPrometheusWith(t, harness.Config(t, "prometheus-gym.yml", map[string]any{"P": ports, "interval": "1s", "rules": false}), nil)
	var failing []string
	err = harness.Eventually(60*time.Second, time.Second, func() error {
		failing = failing[:0]
		for _, c := range checks {
			got, err := harness.PromQuery(prom, c.query)
			switch {
			case err != nil:
				failing = append(failing, fmt.Sprintf("%s: %v", c.name, err))
			case len(got) == 0:
				failing = append(failing, fmt.Sprintf("%s: no data\n    %s", c.name, c.query))
			default:
				for labels, v := range got {
					if v != 0 {
						failing = append(failing, fmt.Sprintf("%s: %s is %v, not 0", c.name, labels, v))
					}
				}
			}
		}
		if len(failing) > 0 {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "on a fresh collector:\n  %s\nscrape targets: %s", strings.Join(failing, "\n  "), targetHealth(prom))
}
