//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The checks of the dashboards and rules tests: every query answers, every rule is healthy, the
// scraped names pass promtool.

// labelValues answers Grafana's label_values(selector, label) from Prometheus' label API.
func labelValues(base, query string) ([]string, error) {
	m := regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`).FindStringSubmatch(strings.TrimSpace(query))
	if m == nil {
		return nil, fmt.Errorf("not a label_values(selector, label) query: %s", query)
	}
	var values []string
	if err := harness.PromAPI(base, "/api/v1/label/"+m[2]+"/values?match[]="+url.QueryEscape(m[1]), &values); err != nil {
		return nil, fmt.Errorf("%s: %w", query, err)
	}
	return values, nil
}

// queryCheck is a query a dashboard or a rule runs, with a name to report it by.
type queryCheck struct{ name, query string }

// dashboardChecks are every panel query of the dashboards and every recording rule (checks),
// and every query variable (vars; gymVars: those of the Gym dashboards, not the Collector's).
func dashboardChecks(t *testing.T, dashboards []grafanaDashboard, records map[string]string) (checks, vars, gymVars []queryCheck) {
	t.Helper()
	for _, d := range dashboards {
		for _, v := range d.queryVariables() {
			c := queryCheck{fmt.Sprintf("%s: variable %s", d.Title, v.name), substitute(v.query)}
			vars = append(vars, c)
			if d.UID != "gym-collector" {
				gymVars = append(gymVars, c)
			}
		}
		for _, p := range d.Panels {
			require.NotEmpty(t, p.Targets, "%s: panel %q has no query", d.Title, p.Title)
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "%s: panel %q %s", d.Title, p.Title, tg.RefID)
				checks = append(checks, queryCheck{fmt.Sprintf("%s: %s (%s)", d.Title, p.Title, tg.RefID), substitute(tg.Expr)})
			}
		}
	}
	for name, expr := range records {
		checks = append(checks, queryCheck{"recording rule " + name, expr})
	}
	t.Logf("%d dashboards: %d panel queries and recording rules, %d variables", len(dashboards), len(checks), len(vars))
	return checks, vars, gymVars
}

// everyQueryAnswers waits until every check answers with data and every variable lists a value
// (the first scrapes may still be missing some), and fails with those that never did.
func everyQueryAnswers(t *testing.T, prom string, checks, vars []queryCheck) {
	t.Helper()
	var failing []string
	err := harness.Eventually(120*time.Second, time.Second, func() error {
		failing = failing[:0]
		for _, c := range checks {
			got, err := harness.PromQuery(prom, c.query)
			switch {
			case err != nil:
				failing = append(failing, fmt.Sprintf("%s: %v\n    %s", c.name, err, c.query))
			case len(got) == 0:
				failing = append(failing, fmt.Sprintf("%s: empty\n    %s", c.name, c.query))
			}
		}
		for _, v := range vars {
			vals, err := labelValues(prom, v.query)
			switch {
			case err != nil:
				failing = append(failing, fmt.Sprintf("%s: %v", v.name, err))
			case len(vals) == 0:
				failing = append(failing, fmt.Sprintf("%s: no values\n    %s", v.name, v.query))
			}
		}
		if len(failing) > 0 {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "queries with an error or no data:\n  %s\nscrape targets: %s", strings.Join(failing, "\n  "), targetHealth(prom))
}

// promtoolBinary is the promtool beside the Prometheus the tests run, else the one on PATH.
func promtoolBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(harness.PrometheusBinary(t)), "promtool")
	if _, err := os.Stat(bin); err != nil {
		bin, err = exec.LookPath("promtool")
		require.NoError(t, err, "promtool ships with Debian's prometheus")
	}
	return bin
}

// promtoolCheckMetrics runs `promtool check metrics` on a scrape and returns its complaints,
// one per line ("name: problem"). Exit status 3 means it found some.
func promtoolCheckMetrics(t *testing.T, text string) []string {
	t.Helper()
	cmd := exec.Command(promtoolBinary(t), "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 3) {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	var problems []string
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			problems = append(problems, line)
		}
	}
	return problems
}

// scrapedNames are the series names of a Prometheus text scrape.
func scrapedNames(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			out[line[:i]] = true
		}
	}
	return out
}

// everyRuleHealthy waits until Prometheus has evaluated each named rule without error.
func everyRuleHealthy(t *testing.T, prom string, names []string) {
	t.Helper()
	err := harness.Eventually(90*time.Second, time.Second, func() error {
		health, err := ruleHealth(prom)
		if err != nil {
			return err
		}
		for _, name := range names {
			if h, ok := health[name]; !ok || h != "ok" {
				return fmt.Errorf("rule %s: health %q (of %v)", name, h, health)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// ruleHealth returns the health of every rule Prometheus loaded, by record or alert name.
func ruleHealth(base string) (map[string]string, error) {
	var data struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := harness.PromAPI(base, "/api/v1/rules", &data); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			out[r.Name] = r.Health
			if r.LastError != "" {
				out[r.Name] += ": " + r.LastError
			}
		}
	}
	return out, nil
}

// targetHealth says how Prometheus' last scrape of each target went (for failure messages).
func targetHealth(base string) string {
	var data struct {
		ActiveTargets []struct {
			ScrapePool         string  `json:"scrapePool"`
			Health             string  `json:"health"`
			LastError          string  `json:"lastError"`
			LastScrapeDuration float64 `json:"lastScrapeDuration"`
		} `json:"activeTargets"`
	}
	if err := harness.PromAPI(base, "/api/v1/targets", &data); err != nil {
		return err.Error()
	}
	var parts []string
	for _, tg := range data.ActiveTargets {
		parts = append(parts, fmt.Sprintf("%s: %s %.2fs %s", tg.ScrapePool, tg.Health, tg.LastScrapeDuration, tg.LastError))
	}
	return strings.Join(parts, "; ")
}
