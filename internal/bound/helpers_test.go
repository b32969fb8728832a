package bound

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/pdatatest"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Test inputs name instruments, attributes and values by hand on purpose: they are what a
// Gym SDK sends, and the tests hold the rules to the spec (docs/metrics.md).

var (
	t0        = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	wallClock = t0.Add(time.Hour) // the processor's wall clock in tests
)

// ts is a timestamp s seconds after t0.
func ts(s int) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(t0.Add(time.Duration(s) * time.Second))
}

// attrs is a data-point attribute set; values are string, int, int64, float64 or bool.
type attrs map[string]any

// pt is an input data point.
type pt struct {
	a        attrs
	start, t int // seconds after t0 (start 0: unset)
	i        int64
	f        float64
	double   bool
	// histograms
	bounds  []float64
	buckets []uint64
	count   uint64
	sum     float64
	noMM    bool
	min     float64
	max     float64
	noValue bool
}

func putAttrs(m pcommon.Map, a attrs) {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := a[k].(type) {
		case string:
			m.PutStr(k, v)
		case int:
			m.PutInt(k, int64(v))
		case int64:
			m.PutInt(k, v)
		case float64:
			m.PutDouble(k, v)
		case bool:
			m.PutBool(k, v)
		case []byte:
			m.PutEmptyBytes(k).FromRaw(v)
		case map[string]any:
			_ = m.PutEmptyMap(k).FromRaw(v)
		case []any:
			_ = m.PutEmptySlice(k).FromRaw(v)
		default:
			panic(fmt.Sprintf("attrs: %T", v))
		}
	}
}

// batchBuilder builds an OTLP batch.
type batchBuilder struct {
	md pmetric.Metrics
	sm pmetric.ScopeMetrics
}

func newBatch() *batchBuilder { return &batchBuilder{md: pmetric.NewMetrics()} }

// resource starts a resource with one scope.
func (b *batchBuilder) resource(a attrs) *batchBuilder {
	rm := b.md.ResourceMetrics().AppendEmpty()
	putAttrs(rm.Resource().Attributes(), a)
	b.sm = rm.ScopeMetrics().AppendEmpty()
	b.sm.Scope().SetName("nemo_gym.telemetry")
	b.sm.Scope().SetVersion("0.4.0")
	return b
}

// scope starts another scope in the current resource.
func (b *batchBuilder) scope(name string) *batchBuilder {
	rm := b.md.ResourceMetrics().At(b.md.ResourceMetrics().Len() - 1)
	b.sm = rm.ScopeMetrics().AppendEmpty()
	b.sm.Scope().SetName(name)
	return b
}

func numberPoints(dps pmetric.NumberDataPointSlice, pts []pt) {
	for _, p := range pts {
		dp := dps.AppendEmpty()
		putAttrs(dp.Attributes(), p.a)
		if p.start != 0 {
			dp.SetStartTimestamp(ts(p.start))
		}
		dp.SetTimestamp(ts(p.t))
		if p.double {
			dp.SetDoubleValue(p.f)
		} else {
			dp.SetIntValue(p.i)
		}
		if p.noValue {
			dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		}
	}
}

func (b *batchBuilder) sum(name, unit string, monotonic bool, temp pmetric.AggregationTemporality, pts ...pt) *batchBuilder {
	m := b.sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	s := m.SetEmptySum()
	s.SetIsMonotonic(monotonic)
	s.SetAggregationTemporality(temp)
	numberPoints(s.DataPoints(), pts)
	return b
}

func (b *batchBuilder) counter(name, unit string, pts ...pt) *batchBuilder {
	return b.sum(name, unit, true, pmetric.AggregationTemporalityCumulative, pts...)
}

func (b *batchBuilder) gauge(name, unit string, pts ...pt) *batchBuilder {
	m := b.sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	numberPoints(m.SetEmptyGauge().DataPoints(), pts)
	return b
}

func (b *batchBuilder) histogram(name, unit string, temp pmetric.AggregationTemporality, pts ...pt) *batchBuilder {
	m := b.sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(temp)
	for _, p := range pts {
		dp := h.DataPoints().AppendEmpty()
		putAttrs(dp.Attributes(), p.a)
		if p.start != 0 {
			dp.SetStartTimestamp(ts(p.start))
		}
		dp.SetTimestamp(ts(p.t))
		dp.ExplicitBounds().FromRaw(p.bounds)
		dp.BucketCounts().FromRaw(p.buckets)
		dp.SetCount(p.count)
		dp.SetSum(p.sum)
		if !p.noMM {
			dp.SetMin(p.min)
			dp.SetMax(p.max)
		}
	}
	return b
}

// testProcessor is a Bounder with a settable clock and its telemetry.
type testProcessor struct {
	*Bounder
	tel   *componenttest.Telemetry
	clock *clock.Fake
}

func newTestProcessor(t testing.TB, edit func(*Config)) *testProcessor {
	t.Helper()
	cfg := DefaultConfig()
	if edit != nil {
		edit(&cfg)
	}
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	p, err := New(&cfg, tel.NewTelemetrySettings())
	require.NoError(t, err)
	tp := &testProcessor{Bounder: p, tel: tel, clock: clock.NewFake(wallClock)}
	p.clock = tp.clock
	return tp
}

func (tp *testProcessor) run(t testing.TB, md pmetric.Metrics) pmetric.Metrics {
	t.Helper()
	out, err := tp.Process(context.Background(), md)
	require.NoError(t, err)
	return out
}

// counter returns the value of one of the processor's telemetry counters (summed over
// attributes), 0 when it was never recorded.
func (tp *testProcessor) counter(t testing.TB, name string) int64 {
	t.Helper()
	m, err := tp.tel.GetMetric("otelcol_processor_gymattrs_" + name)
	if err != nil {
		return 0
	}
	var n int64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			n += dp.Value
		}
	case metricdata.Gauge[int64]:
		for _, dp := range d.DataPoints {
			n += dp.Value
		}
	}
	return n
}

// dropped returns the points_dropped counter for one reason.
func (tp *testProcessor) dropped(t testing.TB, reason string) int64 {
	t.Helper()
	m, err := tp.tel.GetMetric("otelcol_processor_gymattrs_points_dropped")
	if err != nil {
		return 0
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, ok := dp.Attributes.Value("reason"); ok && v.AsString() == reason {
			return dp.Value
		}
	}
	return 0
}

// outPoint is a data point of the output, flattened for assertions.
type outPoint struct {
	Attrs   map[string]any
	Start   pcommon.Timestamp
	Time    pcommon.Timestamp
	Int     int64
	Double  float64
	IsDbl   bool
	Count   uint64
	Sum     float64
	Buckets []uint64
	Bounds  []float64
	HasMM   bool
	Min     float64
	Max     float64
}

// points returns every output point of the named metric, over all resources and scopes.
func points(md pmetric.Metrics, name string) []outPoint {
	var out []outPoint
	for _, m := range pdatatest.Named(md, name) {
		out = append(out, metricPoints(m)...)
	}
	return out
}

func metricPoints(m pmetric.Metric) []outPoint {
	var out []outPoint
	num := func(dps pmetric.NumberDataPointSlice) {
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			out = append(out, outPoint{
				Attrs: dp.Attributes().AsRaw(), Start: dp.StartTimestamp(), Time: dp.Timestamp(),
				Int: dp.IntValue(), Double: dp.DoubleValue(), IsDbl: dp.ValueType() == pmetric.NumberDataPointValueTypeDouble,
			})
		}
	}
	switch m.Type() {
	case pmetric.MetricTypeSum:
		num(m.Sum().DataPoints())
	case pmetric.MetricTypeGauge:
		num(m.Gauge().DataPoints())
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			out = append(out, outPoint{
				Attrs: dp.Attributes().AsRaw(), Start: dp.StartTimestamp(), Time: dp.Timestamp(),
				Count: dp.Count(), Sum: dp.Sum(), Buckets: dp.BucketCounts().AsRaw(), Bounds: dp.ExplicitBounds().AsRaw(),
				HasMM: dp.HasMin() && dp.HasMax(), Min: dp.Min(), Max: dp.Max(),
			})
		}
	}
	return out
}

// byAttrs indexes points by a readable form of their attributes.
func byAttrs(pts []outPoint) map[string]outPoint {
	m := map[string]outPoint{}
	for _, p := range pts {
		m[attrString(p.Attrs)] = p
	}
	return m
}

func attrString(a map[string]any) string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "%s=%v", k, a[k])
	}
	return sb.String()
}

// overflowKey is the attrString of the overflow series.
var overflowKey = schema.OverflowAttribute + "=true"

// The resource of a Gym process as its SDK sends it.
func gymResource(instance string) attrs {
	return attrs{
		"service.name":           "nemo-gym/math",
		"service.instance.id":    instance,
		"nemo.run.id":            "r1",
		"nemo.gym.server.name":   "math",
		"nemo.gym.server.type":   "resources_servers",
		"process.pid":            4242,
		"host.name":              "node7",
		"telemetry.sdk.name":     "opentelemetry",
		"telemetry.sdk.language": "python",
	}
}

const (
	cumulative = pmetric.AggregationTemporalityCumulative
	delta      = pmetric.AggregationTemporalityDelta
)
