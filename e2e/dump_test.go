//go:build linux

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// A metric state is written as text, one series a line, so that an expected state can be
// written by hand from the spec and a difference reads as a diff:
//
//	resource {host.name="node7" process.pid=4242}
//	  gym.rollout.completed_total counter unit=1
//	    {nemo.gym.rollout.outcome="scored"} int 2
//	  gym.event_loop.lag_ms histogram unit=ms
//	    {nemo.gym.event_loop="main"} count=2 sum=3.5 min=0.5 max=3 bounds=[0.5 1] buckets=[1 0 1]
//
// Attribute values: strings quoted, ints bare, bools true/false, doubles with a "d" suffix.
// Kinds in OpenTelemetry data-model words as docs/metrics.md uses them: counter (Sum,
// monotonic, cumulative), updown (Sum, non-monotonic, cumulative), gauge, histogram
// (explicit buckets, cumulative); anything else is spelled out (e.g. "sum(delta,monotonic)").
// The order of resources, metrics and points does not matter: states are sorted.

// state maps resource line -> metric header -> point attributes -> point value.
type state map[string]map[string]map[string]string

func (s state) put(res, header, attrs, value string) {
	if s[res] == nil {
		s[res] = map[string]map[string]string{}
	}
	if s[res][header] == nil {
		s[res][header] = map[string]string{}
	}
	s[res][header][attrs] = value
}

func (s state) String() string {
	var b strings.Builder
	for _, res := range sortedKeys(s) {
		b.WriteString(res + "\n")
		for _, h := range sortedKeys(s[res]) {
			b.WriteString("  " + h + "\n")
			for _, a := range sortedKeys(s[res][h]) {
				b.WriteString("    " + a + " " + s[res][h][a] + "\n")
			}
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// parseState reads the text form; `#` comments and blank lines are skipped.
func parseState(text string) (state, error) {
	s := state{}
	var res, header string
	for i, raw := range strings.Split(text, "\n") {
		l := raw
		if j := strings.Index(l, " #"); j >= 0 {
			l = l[:j]
		}
		l = strings.TrimRight(l, " \t")
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		switch {
		case strings.HasPrefix(l, "    "):
			l = strings.TrimSpace(l)
			end := strings.Index(l, "} ")
			if res == "" || header == "" || !strings.HasPrefix(l, "{") || end < 0 {
				return nil, fmt.Errorf("line %d: want `{attrs} value` under a metric: %q", i+1, raw)
			}
			s.put(res, header, l[:end+1], l[end+2:])
		case strings.HasPrefix(l, "  "):
			if res == "" {
				return nil, fmt.Errorf("line %d: metric outside a resource: %q", i+1, raw)
			}
			header = strings.TrimSpace(l)
		case strings.HasPrefix(l, "resource "):
			res, header = l, ""
		default:
			return nil, fmt.Errorf("line %d: cannot read %q", i+1, raw)
		}
	}
	return s, nil
}

func formatAttrs(m pcommon.Map) string {
	parts := make([]string, 0, m.Len())
	for k, v := range m.All() {
		parts = append(parts, k+"="+formatValue(v))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, " ") + "}"
}

func formatValue(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return strconv.Quote(v.Str())
	case pcommon.ValueTypeInt:
		return strconv.FormatInt(v.Int(), 10)
	case pcommon.ValueTypeBool:
		return strconv.FormatBool(v.Bool())
	case pcommon.ValueTypeDouble:
		return formatFloat(v.Double()) + "d"
	default:
		return v.Type().String() + ":" + v.AsString()
	}
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func formatFloats(fs []float64) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = formatFloat(f)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func formatUints(us []uint64) string {
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = strconv.FormatUint(u, 10)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func numberValue(dp pmetric.NumberDataPoint) string {
	switch dp.ValueType() {
	case pmetric.NumberDataPointValueTypeInt:
		return "int " + strconv.FormatInt(dp.IntValue(), 10)
	case pmetric.NumberDataPointValueTypeDouble:
		return "double " + formatFloat(dp.DoubleValue())
	default:
		return "empty"
	}
}

func sumKind(s pmetric.Sum) string {
	cumulative := s.AggregationTemporality() == pmetric.AggregationTemporalityCumulative
	switch {
	case cumulative && s.IsMonotonic():
		return "counter"
	case cumulative:
		return "updown"
	default:
		return fmt.Sprintf("sum(%s,monotonic=%t)", s.AggregationTemporality(), s.IsMonotonic())
	}
}

// seriesTimes are the timestamps of one point, to check apart from the values.
type seriesTimes struct {
	key         string // resource | metric | attrs
	start, time pcommon.Timestamp
	cumulative  bool
}

// merge adds every point of md to s (a later point of the same series replaces an earlier
// one: the metrics are cumulative) and returns the points' timestamps.
func (s state) merge(md pmetric.Metrics) []seriesTimes {
	var times []seriesTimes
	for _, rm := range md.ResourceMetrics().All() {
		res := "resource " + formatAttrs(rm.Resource().Attributes())
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				unit := "unit=" + m.Unit()
				add := func(header, attrs, value string, start, ts pcommon.Timestamp, cumulative bool) {
					s.put(res, header, attrs, value)
					times = append(times, seriesTimes{key: res + " | " + m.Name() + " | " + attrs, start: start, time: ts, cumulative: cumulative})
				}
				switch m.Type() {
				case pmetric.MetricTypeSum:
					header := m.Name() + " " + sumKind(m.Sum()) + " " + unit
					cum := m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityCumulative
					for _, dp := range m.Sum().DataPoints().All() {
						add(header, formatAttrs(dp.Attributes()), numberValue(dp), dp.StartTimestamp(), dp.Timestamp(), cum)
					}
				case pmetric.MetricTypeGauge:
					header := m.Name() + " gauge " + unit
					for _, dp := range m.Gauge().DataPoints().All() {
						add(header, formatAttrs(dp.Attributes()), numberValue(dp), dp.StartTimestamp(), dp.Timestamp(), false)
					}
				case pmetric.MetricTypeHistogram:
					h := m.Histogram()
					kind := "histogram"
					cum := h.AggregationTemporality() == pmetric.AggregationTemporalityCumulative
					if !cum {
						kind = "histogram(" + h.AggregationTemporality().String() + ")"
					}
					header := m.Name() + " " + kind + " " + unit
					for _, dp := range h.DataPoints().All() {
						minS, maxS := "none", "none"
						if dp.HasMin() {
							minS = formatFloat(dp.Min())
						}
						if dp.HasMax() {
							maxS = formatFloat(dp.Max())
						}
						sumS := "none"
						if dp.HasSum() {
							sumS = formatFloat(dp.Sum())
						}
						v := fmt.Sprintf("count=%d sum=%s min=%s max=%s bounds=%s buckets=%s",
							dp.Count(), sumS, minS, maxS, formatFloats(dp.ExplicitBounds().AsRaw()), formatUints(dp.BucketCounts().AsRaw()))
						add(header, formatAttrs(dp.Attributes()), v, dp.StartTimestamp(), dp.Timestamp(), cum)
					}
				default:
					add(m.Name()+" "+m.Type().String()+" "+unit, "{}", "unexpected metric type", 0, 0, false)
				}
			}
		}
	}
	return times
}
