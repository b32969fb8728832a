package flight

import (
	"cmp"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// ScopeName is the instrumentation scope of what the recorder exports.
const ScopeName = "github.com/gym-telemetry/otelcol-gym/connector/gymrollouts"

// export builds the recorder's metrics: one resource per run (nemo.run.id, none for spans
// without it), one metric per instrument in it.
type export struct {
	md      pmetric.Metrics
	ts      pcommon.Timestamp
	runs    map[string]pmetric.MetricSlice
	metrics map[[2]string]pmetric.Metric
}

func newExport(md pmetric.Metrics, ts pcommon.Timestamp) *export {
	return &export{md: md, ts: ts, runs: map[string]pmetric.MetricSlice{}, metrics: map[[2]string]pmetric.Metric{}}
}

func (e *export) metric(run, name string) pmetric.Metric {
	if m, ok := e.metrics[[2]string{run, name}]; ok {
		return m
	}
	ms, ok := e.runs[run]
	if !ok {
		rm := e.md.ResourceMetrics().AppendEmpty()
		if run != "" {
			rm.Resource().Attributes().PutStr(KeyRun, run)
		}
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(ScopeName)
		ms = sm.Metrics()
		e.runs[run] = ms
	}
	m := ms.AppendEmpty()
	m.SetName(name)
	if id, ok := schema.Lookup(name); ok { // the schema's words, one home
		m.SetDescription(schema.Get(id).Description)
		m.SetUnit(schema.Get(id).Unit)
	}
	e.metrics[[2]string{run, name}] = m
	return m
}

func (e *export) attrs(m pcommon.Map, k seriesKey) {
	if k.overflow {
		m.PutBool(schema.OverflowAttribute, true)
		return
	}
	if k.metric == MetricOldest {
		return
	}
	m.PutStr(KeyServer, k.server)
	m.PutStr(KeyStage, k.stage.String())
}

func (e *export) gauge(k seriesKey, v int64, d float64) {
	m := e.metric(k.run, k.metric)
	if m.Type() == pmetric.MetricTypeEmpty {
		m.SetEmptyGauge()
	}
	dp := m.Gauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(e.ts)
	if k.metric == MetricOldest {
		dp.SetDoubleValue(d)
	} else {
		dp.SetIntValue(v)
	}
	e.attrs(dp.Attributes(), k)
}

func (e *export) sum(k seriesKey, c *counter) {
	m := e.metric(k.run, k.metric)
	if m.Type() == pmetric.MetricTypeEmpty {
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	}
	dp := m.Sum().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(c.start)
	dp.SetTimestamp(e.ts)
	dp.SetIntValue(c.n)
	e.attrs(dp.Attributes(), k)
}

// sorted returns the keys of m in a fixed order, so that every export lists its series alike.
func sorted[V any](m map[seriesKey]V) []seriesKey {
	keys := make([]seriesKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b seriesKey) int {
		return cmp.Or(cmp.Compare(a.run, b.run), cmp.Compare(a.metric, b.metric), cmp.Compare(a.server, b.server),
			cmp.Compare(a.stage, b.stage), boolCmp(a.overflow, b.overflow))
	})
	return keys
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
