//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The dashboards' queries against the schema's source of truth, metadata.yaml: every Gym series
// a panel reads is an instrument's, under the exporter's names, and every selector of an
// instrument that carries the attribute of a dashboard variable (dispatch, server, model) filters
// by it.

// attrVariables are the dashboard variables that select by a data-point attribute.
var attrVariables = []struct{ name, attr string }{
	{"dispatch", "nemo.gym.rollout.dispatch.name"},
	{"server", "nemo.gym.server.name"},
	{"model", "gen_ai.response.model"},
}

// schemaInstrument is what the test reads of an instrument of metadata.yaml.
type schemaInstrument struct {
	Kind       string
	Attributes []string
}

// loadSchemaInstruments reads the instruments of metadata.yaml: name -> kind and attribute keys.
func loadSchemaInstruments(t *testing.T) map[string]schemaInstrument {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(harness.Root, "metadata.yaml"))
	require.NoError(t, err)
	var f struct {
		Instruments map[string]struct {
			Kind       string      `yaml:"kind"`
			Attributes []yaml.Node `yaml:"attributes"`
		} `yaml:"instruments"`
	}
	require.NoError(t, yaml.Unmarshal(data, &f))
	out := map[string]schemaInstrument{}
	for name, in := range f.Instruments {
		si := schemaInstrument{Kind: in.Kind}
		for _, a := range in.Attributes {
			switch a.Kind {
			case yaml.ScalarNode:
				si.Attributes = append(si.Attributes, a.Value)
			case yaml.MappingNode:
				var m struct {
					Key string `yaml:"key"`
				}
				require.NoError(t, a.Decode(&m))
				si.Attributes = append(si.Attributes, m.Key)
			}
		}
		out[name] = si
	}
	require.NotEmpty(t, out)
	return out
}

// promSeriesNames are the names the exporter gives an instrument (translation_strategy
// UnderscoreEscapingWithoutSuffixes): `_` for `.`, a histogram's _bucket, _sum and _count.
func promSeriesNames(name, kind string) []string {
	base := strings.ReplaceAll(name, ".", "_")
	if kind == "histogram" {
		return []string{base + "_bucket", base + "_sum", base + "_count"}
	}
	return []string{base}
}

// schemaSeries maps every Prometheus series name of the schema to its instrument.
func schemaSeries(instruments map[string]schemaInstrument) map[string]string {
	out := map[string]string{}
	for name, in := range instruments {
		for _, s := range promSeriesNames(name, in.Kind) {
			out[s] = name
		}
	}
	return out
}

var (
	// selectorRE is a series selector: a name and its matchers.
	selectorRE = regexp.MustCompile(`\b([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^{}]*)\}`)
	// gymNameRE is a name that looks like a series of the schema (label names such as
	// nemo_gym_server_name do not start at a word boundary), and whether a selector follows.
	gymNameRE = regexp.MustCompile(`\b((?:gym|process)_[a-zA-Z0-9_]*)\b(\{?)`)
)

// perRunDashboards read series by run alone (the generator's per_run): the flight recorder's,
// one resource per run made in the collector, and the cost rules', summed over processes.
var perRunDashboards = map[string]bool{inFlightUID: true, costUID: true, evidenceUID: true}

// procMatchers are the matchers of a Gym process's variables, by variable.
var procMatchers = map[string]string{"run": `nemo_run_id=~"$run"`, "service": `job=~"$service"`, "instance": `instance=~"$instance"`}

// TestDashboardSelectorsFollowMetadata: in every Gym dashboard, each Gym series a query names is
// an instrument of metadata.yaml, read through a selector with the run, service and instance
// matchers (the run's alone on the per-run dashboards, perRunDashboards), and with the matcher of each attribute variable whose attribute the instrument
// carries (the dashboard then has that variable); every attribute variable of a dashboard
// filters at least one of its selectors.
func TestDashboardSelectorsFollowMetadata(t *testing.T) {
	t.Parallel()
	instruments := loadSchemaInstruments(t)
	series := schemaSeries(instruments)
	for _, d := range loadDashboards(t) {
		if d.UID == "gym-collector" {
			continue
		}
		vars := map[string]bool{}
		for _, v := range d.Templating.List {
			vars[v.Name] = true
		}
		// A dashboard of per-run series (one resource per run, made in the collector) has no
		// service or instance: those labels are the collector's scrape target there.
		want, notWant := []string{"run", "service", "instance"}, []string(nil)
		if perRunDashboards[d.UID] {
			want, notWant = want[:1], want[1:]
		}
		for _, v := range want {
			assert.True(t, vars[v], "%s: no %s variable", d.UID, v)
		}
		for _, v := range notWant {
			assert.False(t, vars[v], "%s: a %s variable", d.UID, v)
		}
		used := map[string]bool{}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				where := fmt.Sprintf("%s: %q (%s)", d.UID, p.Title, tg.RefID)
				for _, m := range gymNameRE.FindAllStringSubmatch(tg.Expr, -1) {
					_, ok := series[m[1]]
					assert.True(t, ok, "%s: %s is no series of an instrument of metadata.yaml", where, m[1])
					assert.NotEmpty(t, m[2], "%s: %s without a selector", where, m[1])
				}
				for _, m := range selectorRE.FindAllStringSubmatch(tg.Expr, -1) {
					inst, ok := series[m[1]]
					if !ok {
						continue
					}
					for _, v := range want {
						assert.Contains(t, m[2], procMatchers[v], "%s: %s", where, m[0])
					}
					for _, v := range notWant {
						assert.NotContains(t, m[2], procMatchers[v], "%s: %s", where, m[0])
					}
					for _, av := range attrVariables {
						matcher := fmt.Sprintf(`%s=~"$%s"`, strings.ReplaceAll(av.attr, ".", "_"), av.name)
						if slices.Contains(instruments[inst].Attributes, av.attr) {
							assert.Contains(t, m[2], matcher, "%s: %s carries %s", where, inst, av.attr)
							assert.True(t, vars[av.name], "%s: %s carries %s, and the dashboard has no %s variable", where, inst, av.attr, av.name)
							used[av.name] = true
						} else {
							assert.NotContains(t, m[2], matcher, "%s: %s does not carry %s", where, inst, av.attr)
						}
					}
				}
			}
		}
		for _, av := range attrVariables {
			if vars[av.name] {
				assert.True(t, used[av.name], "%s: the %s variable filters no panel", d.UID, av.name)
			}
		}
	}
}

// TestDashboardVariablesReadGymSeries: every variable of a Gym dashboard reads its values from
// Gym's series only (a __name__ regex that no series of the collector, target_info or the
// process stats matches) and never offers an empty value (a != "" matcher on its label).
func TestDashboardVariablesReadGymSeries(t *testing.T) {
	t.Parallel()
	instruments := loadSchemaInstruments(t)
	var gym []string
	for s, inst := range schemaSeries(instruments) {
		if strings.HasPrefix(inst, "gym.") {
			gym = append(gym, s)
		}
	}
	sort.Strings(gym)
	notGym := []string{"target_info", "up", "otelcol_receiver_gym_lines_accepted", "otelcol_process_uptime",
		"process_cpu_time", "process_memory_usage", "process_thread_count", "process_open_file_descriptor_count"}
	labelValuesRE := regexp.MustCompile(`^label_values\(\{(.*)\},\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	nameRE := regexp.MustCompile(`__name__=~"([^"]+)"`)
	for _, d := range loadDashboards(t) {
		if d.UID == "gym-collector" {
			continue
		}
		for _, v := range d.queryVariables() {
			s := v.query
			where := fmt.Sprintf("%s: variable %s: %s", d.UID, v.name, s)
			m := labelValuesRE.FindStringSubmatch(s)
			if !assert.NotNil(t, m, "%s: not label_values({selector}, label)", where) {
				continue
			}
			assert.Contains(t, m[1], m[2]+`!=""`, "%s: offers an empty value", where)
			n := nameRE.FindStringSubmatch(m[1])
			if !assert.NotNil(t, n, "%s: no __name__ regex", where) {
				continue
			}
			re, err := regexp.Compile("^(?:" + n[1] + ")$")
			require.NoError(t, err, where)
			for _, s := range notGym {
				assert.False(t, re.MatchString(s), "%s: reads %s", where, s)
			}
			matched := 0
			for _, s := range gym {
				if re.MatchString(s) {
					matched++
				}
			}
			assert.Positive(t, matched, "%s: reads no Gym series", where)
		}
	}
}
