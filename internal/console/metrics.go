package console

import (
	"errors"
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// The SDK's MetricsData.to_json (opentelemetry-sdk, metrics/_internal/point.py). The fields
// are read as encoding/json read them into pointers, slices and values (see json.go).
type metricsData struct {
	ResourceMetrics    []resourceMetrics
	hasResourceMetrics bool
}

type resourceMetrics struct {
	Resource     resource
	ScopeMetrics []scopeMetrics
	SchemaURL    text
}

type scopeMetrics struct {
	Scope     scope
	Metrics   []metric
	SchemaURL text
}

// scope is the SDK's InstrumentationScope.to_json.
type scope struct {
	set        bool
	Name       text
	Version    text
	SchemaURL  text
	Attributes attrs
}

type metric struct {
	Name        text
	Description text
	Unit        text
	Data        metricData
}

// metricData is any of Sum, Gauge, Histogram and ExponentialHistogram: a Sum has
// is_monotonic, a Gauge no aggregation_temporality, and the two histograms tell themselves
// apart by their points (explicit_bounds or scale). The points are read once the kind is
// known.
type metricData struct {
	set                    bool
	DataPoints             []raw
	AggregationTemporality optInt
	IsMonotonic            optBool
}

type numberPoint struct {
	Attributes        attrs
	StartTimeUnixNano number
	TimeUnixNano      number
	Value             number
	Exemplars         []exemplar
}

type histogramPoint struct {
	Attributes        attrs
	StartTimeUnixNano number
	TimeUnixNano      number
	Count             number
	Sum               number
	BucketCounts      []number
	ExplicitBounds    []number
	hasBounds         bool
	Min               number
	Max               number
	Exemplars         []exemplar
	// exponential histograms
	Scale     number // unset when missing or null (encoding/json's *number)
	ZeroCount number
	Positive  buckets
	Negative  buckets
	Flags     number
}

type buckets struct {
	set          bool
	Offset       number
	BucketCounts []number
}

// exemplar is the SDK's Exemplar dataclass: ids are Python ints, in decimal.
type exemplar struct {
	FilteredAttributes attrs
	Value              number
	TimeUnixNano       number
	SpanID             literal
	TraceID            literal
}

// The fields' names, in the order of their structs (field matches a key to them).
var (
	metricsDataFields     = []string{"resource_metrics"}
	resourceMetricsFields = []string{"resource", "scope_metrics", "schema_url"}
	scopeMetricsFields    = []string{"scope", "metrics", "schema_url"}
	scopeFields           = []string{"name", "version", "schema_url", "attributes"}
	metricFields          = []string{"name", "description", "unit", "data"}
	metricDataFields      = []string{"data_points", "aggregation_temporality", "is_monotonic"}
	numberPointFields     = []string{"attributes", "start_time_unix_nano", "time_unix_nano", "value", "exemplars"}
	histogramPointFields  = []string{"attributes", "start_time_unix_nano", "time_unix_nano", "count", "sum", "bucket_counts", "explicit_bounds", "min", "max", "exemplars", "scale", "zero_count", "positive", "negative", "flags"}
	bucketsFields         = []string{"offset", "bucket_counts"}
	exemplarFields        = []string{"filtered_attributes", "value", "time_unix_nano", "span_id", "trace_id"}
)

// metricsReader reads metrics lines (one per stream: its scratch is reused).
type metricsReader struct {
	reader
	d metricsData
}

// DecodeMetrics turns one metrics line into pdata: every resource, scope, metric and point,
// values and temporality as sent.
func DecodeMetrics(line []byte, md pmetric.Metrics) error {
	var r metricsReader
	return r.decodeMetrics(line, md)
}

func (r *metricsReader) decodeMetrics(line []byte, md pmetric.Metrics) error {
	d := &r.d
	err := r.decode(line, func(r *reader) (int, error) {
		*d = metricsData{}
		return r.object(0, 1, func(key []byte, i int) (int, error) {
			if field(key, metricsDataFields) != 0 {
				return r.skip(i, 2)
			}
			if end, ok, err := r.null(i); ok || err != nil {
				*d = metricsData{}
				return end, err
			}
			d.hasResourceMetrics = true
			return structs(r, i, 2, "resource_metrics", &d.ResourceMetrics, func(rm *resourceMetrics, i int) (int, error) { return r.resourceMetrics(i, 3, rm) })
		})
	})
	if err != nil {
		return err
	}
	if !d.hasResourceMetrics {
		return errors.New("resource_metrics: missing")
	}
	for i := range d.ResourceMetrics {
		if err := r.putResourceMetrics(&d.ResourceMetrics[i], md.ResourceMetrics().AppendEmpty()); err != nil {
			return fmt.Errorf("resource_metrics[%d]: %w", i, err)
		}
	}
	return nil
}

func (r *reader) resourceMetrics(i, depth int, rm *resourceMetrics) (int, error) {
	return r.object(i, depth, func(key []byte, i int) (int, error) {
		switch field(key, resourceMetricsFields) {
		case 0:
			return r.optResource(i, depth+1, &rm.Resource)
		case 1:
			return structs(r, i, depth+1, "scope_metrics", &rm.ScopeMetrics, func(sm *scopeMetrics, i int) (int, error) { return r.scopeMetrics(i, depth+2, sm) })
		case 2:
			return r.str(i, "schema_url", &rm.SchemaURL)
		}
		return r.skip(i, depth+1)
	})
}

func (r *reader) scopeMetrics(i, depth int, sm *scopeMetrics) (int, error) {
	return r.object(i, depth, func(key []byte, i int) (int, error) {
		switch field(key, scopeMetricsFields) {
		case 0:
			return r.scope(i, depth+1, &sm.Scope)
		case 1:
			return structs(r, i, depth+1, "metrics", &sm.Metrics, func(m *metric, i int) (int, error) { return r.metric(i, depth+2, m) })
		case 2:
			return r.str(i, "schema_url", &sm.SchemaURL)
		}
		return r.skip(i, depth+1)
	})
}

func (r *reader) scope(i, depth int, s *scope) (int, error) {
	if end, ok, err := r.null(i); ok || err != nil {
		*s = scope{}
		return end, err
	}
	if r.b[i] != '{' {
		return r.mismatch(i, "scope")
	}
	if !s.set {
		*s = scope{set: true}
	}
	return r.object(i, depth, func(key []byte, i int) (int, error) {
		switch field(key, scopeFields) {
		case 0:
			return r.str(i, "scope.name", &s.Name)
		case 1:
			return r.optStr(i, "scope.version", &s.Version)
		case 2:
			return r.optStr(i, "scope.schema_url", &s.SchemaURL)
		case 3:
			return r.attrs(i, depth+1, "scope.attributes", &s.Attributes)
		}
		return r.skip(i, depth+1)
	})
}

func (r *reader) metric(i, depth int, m *metric) (int, error) {
	return r.object(i, depth, func(key []byte, i int) (int, error) {
		switch field(key, metricFields) {
		case 0:
			return r.str(i, "name", &m.Name)
		case 1:
			return r.str(i, "description", &m.Description)
		case 2:
			return r.str(i, "unit", &m.Unit)
		case 3:
			return r.metricData(i, depth+1, &m.Data)
		}
		return r.skip(i, depth+1)
	})
}

func (r *reader) metricData(i, depth int, md *metricData) (int, error) {
	if end, ok, err := r.null(i); ok || err != nil {
		*md = metricData{}
		return end, err
	}
	if r.b[i] != '{' {
		return r.mismatch(i, "data")
	}
	if !md.set {
		*md = metricData{set: true}
	}
	return r.object(i, depth, func(key []byte, i int) (int, error) {
		switch field(key, metricDataFields) {
		case 0:
			if end, ok, err := r.null(i); ok || err != nil {
				md.DataPoints = nil
				return end, err
			}
			return elems(r, i, depth+1, "data_points", &md.DataPoints, func(p *raw, i int) (int, error) { return r.rawValue(i, depth+2, p) })
		case 1:
			return r.optInt(i, "aggregation_temporality", &md.AggregationTemporality)
		case 2:
			return r.optBool(i, "is_monotonic", &md.IsMonotonic)
		}
		return r.skip(i, depth+1)
	})
}

// point reads a data point that was kept as its text (validated) with read: null is a
// point with no field, anything but an object a type error.
func (r *reader) point(p raw, read func(r *reader, i int) (int, error)) error {
	pr := reader{b: p, key: r.key, members: r.members}
	defer func() { r.key, r.members = pr.key, pr.members }()
	if p[0] == 'n' {
		return nil
	}
	if p[0] != '{' {
		_, err := pr.mismatch(0, "data point")
		return err
	}
	_, err := read(&pr, 0)
	return err
}

func (r *reader) numberPoint(p raw, np *numberPoint) error {
	return r.point(p, func(r *reader, i int) (int, error) {
		return r.object(i, 1, func(key []byte, i int) (int, error) {
			switch field(key, numberPointFields) {
			case 0:
				return r.attrs(i, 2, "attributes", &np.Attributes)
			case 1:
				return r.number(i, "start_time_unix_nano", &np.StartTimeUnixNano)
			case 2:
				return r.number(i, "time_unix_nano", &np.TimeUnixNano)
			case 3:
				return r.number(i, "value", &np.Value)
			case 4:
				return structs(r, i, 2, "exemplars", &np.Exemplars, func(e *exemplar, i int) (int, error) { return r.exemplar(i, 3, e) })
			}
			return r.skip(i, 2)
		})
	})
}

func (r *reader) histogramPoint(p raw, hp *histogramPoint) error {
	return r.point(p, func(r *reader, i int) (int, error) {
		return r.object(i, 1, func(key []byte, i int) (int, error) {
			switch field(key, histogramPointFields) {
			case 0:
				return r.attrs(i, 2, "attributes", &hp.Attributes)
			case 1:
				return r.number(i, "start_time_unix_nano", &hp.StartTimeUnixNano)
			case 2:
				return r.number(i, "time_unix_nano", &hp.TimeUnixNano)
			case 3:
				return r.number(i, "count", &hp.Count)
			case 4:
				return r.number(i, "sum", &hp.Sum)
			case 5:
				return r.numbers(i, 2, "bucket_counts", &hp.BucketCounts)
			case 6:
				if end, ok, err := r.null(i); ok || err != nil {
					hp.ExplicitBounds, hp.hasBounds = nil, false
					return end, err
				}
				if !hp.hasBounds {
					hp.ExplicitBounds, hp.hasBounds = nil, true
				}
				return r.numbers(i, 2, "explicit_bounds", &hp.ExplicitBounds)
			case 7:
				return r.number(i, "min", &hp.Min)
			case 8:
				return r.number(i, "max", &hp.Max)
			case 9:
				return structs(r, i, 2, "exemplars", &hp.Exemplars, func(e *exemplar, i int) (int, error) { return r.exemplar(i, 3, e) })
			case 10:
				return r.number(i, "scale", &hp.Scale)
			case 11:
				return r.number(i, "zero_count", &hp.ZeroCount)
			case 12:
				return r.buckets(i, 2, "positive", &hp.Positive)
			case 13:
				return r.buckets(i, 2, "negative", &hp.Negative)
			case 14:
				return r.number(i, "flags", &hp.Flags)
			}
			return r.skip(i, 2)
		})
	})
}

func (r *reader) buckets(i, depth int, name string, bs *buckets) (int, error) {
	if end, ok, err := r.null(i); ok || err != nil {
		*bs = buckets{}
		return end, err
	}
	if r.b[i] != '{' {
		return r.mismatch(i, name)
	}
	if !bs.set {
		*bs = buckets{set: true}
	}
	return r.object(i, depth, func(key []byte, i int) (int, error) {
		switch field(key, bucketsFields) {
		case 0:
			return r.number(i, "offset", &bs.Offset)
		case 1:
			return r.numbers(i, depth+1, "bucket_counts", &bs.BucketCounts)
		}
		return r.skip(i, depth+1)
	})
}

func (r *reader) exemplar(i, depth int, e *exemplar) (int, error) {
	return r.object(i, depth, func(key []byte, i int) (int, error) {
		switch field(key, exemplarFields) {
		case 0:
			return r.attrs(i, depth+1, "filtered_attributes", &e.FilteredAttributes)
		case 1:
			return r.number(i, "value", &e.Value)
		case 2:
			return r.number(i, "time_unix_nano", &e.TimeUnixNano)
		case 3:
			return r.literal(i, "span_id", &e.SpanID)
		case 4:
			return r.literal(i, "trace_id", &e.TraceID)
		}
		return r.skip(i, depth+1)
	})
}

func (r *metricsReader) putResourceMetrics(rm *resourceMetrics, out pmetric.ResourceMetrics) error {
	if !rm.Resource.set {
		return errors.New("resource: missing")
	}
	r.putResource(&rm.Resource, out.Resource())
	out.SetSchemaUrl(rm.SchemaURL.String())
	for i := range rm.ScopeMetrics {
		sm := &rm.ScopeMetrics[i]
		osm := out.ScopeMetrics().AppendEmpty()
		osm.SetSchemaUrl(sm.SchemaURL.String())
		if sm.Scope.set {
			r.putScope(&sm.Scope, osm.Scope())
		}
		for j := range sm.Metrics {
			if err := r.putMetric(&sm.Metrics[j], osm.Metrics().AppendEmpty()); err != nil {
				return fmt.Errorf("scope_metrics[%d].metrics[%d] %q: %w", i, j, sm.Metrics[j].Name.b, err)
			}
		}
	}
	return nil
}

func (r *metricsReader) putScope(s *scope, out pcommon.InstrumentationScope) {
	out.SetName(s.Name.String())
	if s.Version.set {
		out.SetVersion(s.Version.String())
	}
	r.putAttrs(out.Attributes(), &s.Attributes)
}

func temporality(t int64) (pmetric.AggregationTemporality, error) {
	switch t {
	case 0:
		return pmetric.AggregationTemporalityUnspecified, nil
	case 1:
		return pmetric.AggregationTemporalityDelta, nil
	case 2:
		return pmetric.AggregationTemporalityCumulative, nil
	}
	return 0, fmt.Errorf("aggregation_temporality: %d is not 0, 1 or 2", t)
}

func (r *metricsReader) putMetric(m *metric, out pmetric.Metric) error {
	if len(m.Name.b) == 0 {
		return errors.New("name: missing")
	}
	if !m.Data.set {
		return errors.New("data: missing")
	}
	out.SetName(m.Name.String())
	out.SetDescription(m.Description.String())
	out.SetUnit(m.Unit.String())
	d := &m.Data
	switch {
	case d.IsMonotonic.set:
		if !d.AggregationTemporality.set {
			return errors.New("data: a sum without aggregation_temporality")
		}
		sum := out.SetEmptySum()
		t, err := temporality(d.AggregationTemporality.v)
		if err != nil {
			return err
		}
		sum.SetAggregationTemporality(t)
		sum.SetIsMonotonic(d.IsMonotonic.v)
		return r.putNumberPoints(d.DataPoints, sum.DataPoints())
	case !d.AggregationTemporality.set:
		return r.putNumberPoints(d.DataPoints, out.SetEmptyGauge().DataPoints())
	}
	t, err := temporality(d.AggregationTemporality.v)
	if err != nil {
		return err
	}
	exp := false
	hps := make([]histogramPoint, len(d.DataPoints))
	for i, raw := range d.DataPoints {
		if err := r.histogramPoint(raw, &hps[i]); err != nil {
			return fmt.Errorf("data_points[%d]: %w", i, err)
		}
		isExp := hps[i].Scale.set
		if i > 0 && isExp != exp {
			return errors.New("data: explicit and exponential histogram points mixed")
		}
		exp = isExp
	}
	if exp {
		h := out.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(t)
		for i := range hps {
			if err := r.putExp(&hps[i], h.DataPoints().AppendEmpty()); err != nil {
				return fmt.Errorf("data_points[%d]: %w", i, err)
			}
		}
		return nil
	}
	h := out.SetEmptyHistogram()
	h.SetAggregationTemporality(t)
	for i := range hps {
		if err := r.putHistogram(&hps[i], h.DataPoints().AppendEmpty()); err != nil {
			return fmt.Errorf("data_points[%d]: %w", i, err)
		}
	}
	return nil
}

func (r *metricsReader) putNumberPoints(raws []raw, out pmetric.NumberDataPointSlice) error {
	out.EnsureCapacity(len(raws))
	for i, raw := range raws {
		var p numberPoint
		if err := r.numberPoint(raw, &p); err != nil {
			return fmt.Errorf("data_points[%d]: %w", i, err)
		}
		if err := r.putNumberPoint(&p, out.AppendEmpty()); err != nil {
			return fmt.Errorf("data_points[%d]: %w", i, err)
		}
	}
	return nil
}

// uint reads a count or a time: a non-negative integer.
func (n number) uint(field string) (uint64, error) {
	if !n.set {
		return 0, fmt.Errorf("%s: missing", field)
	}
	if !n.isInt || n.i < 0 {
		return 0, fmt.Errorf("%s: %v is not a non-negative integer", field, n.float())
	}
	return uint64(n.i), nil
}

func (n number) float() float64 {
	if n.isInt {
		return float64(n.i)
	}
	return n.f
}

// putTimes sets a point's times. The start time may be null: the SDK writes None for the
// points of a synchronous gauge, which have no start.
func putTimes(start, ts number, setStart, setTS func(pcommon.Timestamp)) error {
	var s uint64
	if start.set {
		var err error
		if s, err = start.uint("start_time_unix_nano"); err != nil {
			return err
		}
	}
	t, err := ts.uint("time_unix_nano")
	if err != nil {
		return err
	}
	setStart(pcommon.Timestamp(s))
	setTS(pcommon.Timestamp(t))
	return nil
}

func (r *metricsReader) putNumberPoint(p *numberPoint, out pmetric.NumberDataPoint) error {
	r.putAttrs(out.Attributes(), &p.Attributes)
	if err := putTimes(p.StartTimeUnixNano, p.TimeUnixNano, out.SetStartTimestamp, out.SetTimestamp); err != nil {
		return err
	}
	switch {
	case !p.Value.set:
		return errors.New("value: missing")
	case p.Value.isInt:
		out.SetIntValue(p.Value.i)
	default:
		out.SetDoubleValue(p.Value.f)
	}
	return r.putExemplars(p.Exemplars, out.Exemplars())
}

func counts(ns []number, field string, out pcommon.UInt64Slice) error {
	out.EnsureCapacity(len(ns))
	for i, n := range ns {
		c, err := n.uint(field)
		if err != nil {
			_, err = n.uint(fmt.Sprintf("%s[%d]", field, i)) // named only when it is needed
			return err
		}
		out.Append(c)
	}
	return nil
}

func (r *metricsReader) putHistogram(p *histogramPoint, out pmetric.HistogramDataPoint) error {
	r.putAttrs(out.Attributes(), &p.Attributes)
	if err := putTimes(p.StartTimeUnixNano, p.TimeUnixNano, out.SetStartTimestamp, out.SetTimestamp); err != nil {
		return err
	}
	c, err := p.Count.uint("count")
	if err != nil {
		return err
	}
	out.SetCount(c)
	if p.Sum.set {
		out.SetSum(p.Sum.float())
	}
	if err := counts(p.BucketCounts, "bucket_counts", out.BucketCounts()); err != nil {
		return err
	}
	if !p.hasBounds {
		return errors.New("explicit_bounds: missing")
	}
	out.ExplicitBounds().EnsureCapacity(len(p.ExplicitBounds))
	for _, b := range p.ExplicitBounds {
		out.ExplicitBounds().Append(b.float())
	}
	if n := len(p.BucketCounts); n != 0 && n != len(p.ExplicitBounds)+1 {
		return fmt.Errorf("bucket_counts: %d counts for %d bounds", n, len(p.ExplicitBounds))
	}
	// An empty histogram's min and max are the SDK's inf and -inf: no min and max.
	if p.Min.set && c > 0 {
		out.SetMin(p.Min.float())
	}
	if p.Max.set && c > 0 {
		out.SetMax(p.Max.float())
	}
	return r.putExemplars(p.Exemplars, out.Exemplars())
}

func (r *metricsReader) putExp(p *histogramPoint, out pmetric.ExponentialHistogramDataPoint) error {
	r.putAttrs(out.Attributes(), &p.Attributes)
	if err := putTimes(p.StartTimeUnixNano, p.TimeUnixNano, out.SetStartTimestamp, out.SetTimestamp); err != nil {
		return err
	}
	c, err := p.Count.uint("count")
	if err != nil {
		return err
	}
	out.SetCount(c)
	if p.Sum.set {
		out.SetSum(p.Sum.float())
	}
	if !p.Scale.isInt || p.Scale.i < -10 || p.Scale.i > 20 {
		return fmt.Errorf("scale: %v is not an integer in -10..20", p.Scale.float())
	}
	out.SetScale(int32(p.Scale.i))
	z, err := p.ZeroCount.uint("zero_count")
	if err != nil {
		return err
	}
	out.SetZeroCount(z)
	f, err := p.Flags.uint("flags")
	if err != nil {
		return err
	}
	if f > math.MaxUint32 {
		return fmt.Errorf("flags: %d is not a 32-bit value", f)
	}
	out.SetFlags(pmetric.DataPointFlags(uint32(f)))
	for _, b := range []struct {
		in     *buckets
		out    pmetric.ExponentialHistogramDataPointBuckets
		name   string
		counts string
	}{{&p.Positive, out.Positive(), "positive", "positive.bucket_counts"}, {&p.Negative, out.Negative(), "negative", "negative.bucket_counts"}} {
		if !b.in.set {
			continue
		}
		if !b.in.Offset.isInt || b.in.Offset.i < -1<<31 || b.in.Offset.i >= 1<<31 {
			return fmt.Errorf("%s.offset: not a 32-bit integer", b.name)
		}
		b.out.SetOffset(int32(b.in.Offset.i))
		if err := counts(b.in.BucketCounts, b.counts, b.out.BucketCounts()); err != nil {
			return err
		}
	}
	if p.Min.set && c > 0 {
		out.SetMin(p.Min.float())
	}
	if p.Max.set && c > 0 {
		out.SetMax(p.Max.float())
	}
	return r.putExemplars(p.Exemplars, out.Exemplars())
}

func (r *metricsReader) putExemplars(exs []exemplar, out pmetric.ExemplarSlice) error {
	out.EnsureCapacity(len(exs))
	for i := range exs {
		e := &exs[i]
		oe := out.AppendEmpty()
		r.putAttrs(oe.FilteredAttributes(), &e.FilteredAttributes)
		t, err := e.TimeUnixNano.uint("time_unix_nano")
		if err != nil {
			return fmt.Errorf("exemplars[%d]: %w", i, err)
		}
		oe.SetTimestamp(pcommon.Timestamp(t))
		switch {
		case !e.Value.set:
			return fmt.Errorf("exemplars[%d]: value: missing", i)
		case e.Value.isInt:
			oe.SetIntValue(e.Value.i)
		default:
			oe.SetDoubleValue(e.Value.f)
		}
		if e.SpanID.set {
			b, err := bigID(e.SpanID.b, 8)
			if err != nil {
				return fmt.Errorf("exemplars[%d].span_id: %w", i, err)
			}
			oe.SetSpanID(pcommon.SpanID(b))
		}
		if e.TraceID.set {
			b, err := bigID(e.TraceID.b, 16)
			if err != nil {
				return fmt.Errorf("exemplars[%d].trace_id: %w", i, err)
			}
			oe.SetTraceID(pcommon.TraceID(b))
		}
	}
	return nil
}
