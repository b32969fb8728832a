//go:build linux

package e2e

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// gymRealMetric is one instrument of the capture: its newest export (resource, scope, the
// metric with every point it had then), what was sent, and what the binary did with it.
type gymRealMetric struct {
	name, kind, unit string
	keys             []string // attribute keys sent
	bounds           string   // histogram boundaries sent
	md               pmetric.Metrics
}

// gymRealMetrics returns the capture's instruments by name, each with its newest export.
func gymRealMetrics(bodies []gymRealBody) map[string]*gymRealMetric {
	out := map[string]*gymRealMetric{}
	for _, md := range capturedMetrics(bodies) {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					one := pmetric.NewMetrics()
					orm := one.ResourceMetrics().AppendEmpty()
					rm.Resource().CopyTo(orm.Resource())
					osm := orm.ScopeMetrics().AppendEmpty()
					sm.Scope().CopyTo(osm.Scope())
					m.CopyTo(osm.Metrics().AppendEmpty())
					g := &gymRealMetric{name: m.Name(), kind: kindName(m), unit: m.Unit(), md: one}
					keys := map[string]bool{}
					forEachAttrs(m, func(attrs map[string]any) {
						for k := range attrs {
							keys[k] = true
						}
					})
					g.keys = sortedKeys(keys)
					if m.Type() == pmetric.MetricTypeHistogram && m.Histogram().DataPoints().Len() > 0 {
						g.bounds = fmt.Sprint(m.Histogram().DataPoints().At(0).ExplicitBounds().AsRaw())
					}
					out[m.Name()] = g
				}
			}
		}
	}
	return out
}

func forEachAttrs(m pmetric.Metric, f func(map[string]any)) {
	for _, dp := range numberPoints(m).All() {
		f(dp.Attributes().AsRaw())
	}
	for _, dp := range histogramPoints(m).All() {
		f(dp.Attributes().AsRaw())
	}
}

// kindName is the schema's word for a metric's kind as sent.
func kindName(m pmetric.Metric) string {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		if m.Sum().IsMonotonic() {
			return schema.KindCounter.String()
		}
		return schema.KindUpDown.String()
	case pmetric.MetricTypeGauge:
		return schema.KindGauge.String()
	case pmetric.MetricTypeHistogram:
		return schema.KindHistogram.String()
	}
	return m.Type().String()
}

// gymattrsCounters are the gymattrs processor's counts that say a point was not bounded as sent:
// a schema name whose kind or unit the schema does not accept, an attribute removed (a key the
// instrument does not declare), a point dropped.
var gymattrsCounters = []string{
	"otelcol_processor_gymattrs_points_mismatched",
	"otelcol_processor_gymattrs_attributes_removed",
	"otelcol_processor_gymattrs_points_dropped",
}

// TestGymRealSchema: for every instrument NeMo Gym's own code creates (the capture), which
// metadata.yaml rule bounds it, and whether exactly: its name is an instrument of the schema;
// the real binary's gymattrs, given the instrument's newest export alone, neither finds its kind
// or unit mismatched nor removes an attribute nor drops a point; every attribute key sent is
// one the instrument declares. The table of all instruments is logged; the test fails for each
// one the schema does not bound exactly.
func TestGymRealSchema(t *testing.T) {
	t.Parallel()
	metrics := gymRealMetrics(loadGymReal(t))
	sink := harness.NewOTLPSink(t)
	_, ports, otlpURL := startOTLP(t, "gymattrs.yaml", sink, nil)
	counts := func() []float64 {
		text, err := harness.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Telemetry))
		require.NoError(t, err)
		out := make([]float64, len(gymattrsCounters))
		for i, c := range gymattrsCounters {
			out[i] = harness.TextValue(text, c)
		}
		return out
	}

	var table []string
	var failed []string
	for _, name := range sortedKeys(metrics) {
		g := metrics[name]
		before := counts()
		postOTLP(t, otlpURL, g.md)
		after := counts()
		var problems []string
		rule := "none: not an instrument of metadata.yaml"
		if id, ok := schema.Lookup(name); !ok {
			problems = append(problems, "not in metadata.yaml")
		} else {
			in := schema.Get(id)
			var declared []string
			for _, a := range in.Attrs {
				declared = append(declared, schema.Attr(a.ID).Key)
			}
			rule = fmt.Sprintf("%s %q [%s]", in.Kind, in.Unit, strings.Join(declared, " "))
			if in.Buckets != "" {
				rule += " " + in.Buckets
			}
			for _, k := range g.keys {
				if !slices.Contains(declared, k) {
					problems = append(problems, "attribute "+k+" not declared")
				}
			}
			for i, c := range gymattrsCounters {
				if d := after[i] - before[i]; d != 0 {
					problems = append(problems, fmt.Sprintf("%s +%v", strings.TrimPrefix(c, "otelcol_processor_gymattrs_"), d))
				}
			}
			if g.bounds != "" && fmt.Sprint(in.Bounds) != g.bounds {
				rule += " (sent buckets " + g.bounds + ")"
			}
		}
		verdict := "exact"
		if len(problems) > 0 {
			verdict = "NOT EXACT: " + strings.Join(problems, "; ")
			failed = append(failed, name+": "+strings.Join(problems, "; "))
		}
		table = append(table, fmt.Sprintf("%-46s sent %s %q {%s} | rule %s | %s",
			name, g.kind, g.unit, strings.Join(g.keys, " "), rule, verdict))
	}
	t.Logf("NeMo Gym's instruments and their schema rules:\n%s", strings.Join(table, "\n"))
	sort.Strings(failed)
	for _, f := range failed {
		t.Errorf("not bounded by an exact schema rule: %s", f)
	}
	require.Empty(t, sink.Errors())
}
