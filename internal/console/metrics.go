package console

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// DecodeMetrics turns one metrics line into pdata: every resource, scope, metric and point,
// values and temporality as sent.
func DecodeMetrics(line []byte, md pmetric.Metrics) error {
	var r metricsReader
	return r.decodeMetrics(line, md)
}

func (r *metricsReader) decodeMetrics(line []byte, md pmetric.Metrics) error {
	if err := r.read(line); err != nil {
		return err
	}
	d := &r.d
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

// A metrics line's values put into pdata: every resource, scope, metric and point, checked
// against what pdata and the SDK allow.

func (r *metricsReader) putResourceMetrics(rm *resourceMetrics, out pmetric.ResourceMetrics) error {
	if !rm.Resource.set {
		return errors.New("resource: missing")
	}
	r.putMetricsResource(&rm.Resource, out.Resource().Attributes())
	out.SetSchemaUrl(r.internString(rm.SchemaURL.b))
	for i := range rm.ScopeMetrics {
		sm := &rm.ScopeMetrics[i]
		osm := out.ScopeMetrics().AppendEmpty()
		osm.SetSchemaUrl(r.internString(sm.SchemaURL.b))
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

// putMetricsResource puts a batch's resource attributes into m: a copy of the last batch's
// when they are written as they were (the same text is the same attributes).
func (r *metricsReader) putMetricsResource(res *resource, m pcommon.Map) {
	a := &res.Attributes
	if len(a.more) == 0 && a.first != nil && r.resText != nil && bytes.Equal(a.first, r.resText) {
		r.resAttrs.CopyTo(m)
		return
	}
	r.putAttrs(m, a)
	if len(a.more) != 0 || a.first == nil || len(a.first) > maxResourceText {
		return
	}
	r.resText = append(r.resText[:0], a.first...)
	if r.resAttrs == (pcommon.Map{}) {
		r.resAttrs = pcommon.NewMap()
	}
	m.CopyTo(r.resAttrs)
}

// maxResourceText bounds the resource text a metrics reader keeps (the SDK's is a few hundred
// bytes; one of megabytes is read every time rather than held).
const maxResourceText = 4 << 10

func (r *metricsReader) putScope(s *scope, out pcommon.InstrumentationScope) {
	out.SetName(r.internString(s.Name.b))
	if s.Version.set {
		out.SetVersion(r.internString(s.Version.b))
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
	out.SetName(r.internString(m.Name.b))
	out.SetDescription(r.internString(m.Description.b))
	out.SetUnit(r.internString(m.Unit.b))
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
	if cap(r.hps) < len(d.DataPoints) {
		r.hps = append(r.hps[:cap(r.hps)], make([]histogramPoint, len(d.DataPoints)-cap(r.hps))...)
	}
	hps := r.hps[:len(d.DataPoints)]
	for i, raw := range d.DataPoints {
		hps[i].reset()
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
		return putHistogramPoints(hps, h.DataPoints().AppendEmpty, r.putExp)
	}
	h := out.SetEmptyHistogram()
	h.SetAggregationTemporality(t)
	return putHistogramPoints(hps, h.DataPoints().AppendEmpty, r.putHistogram)
}

// putHistogramPoints puts each of hps with put into a point that add appends.
func putHistogramPoints[P any](hps []histogramPoint, add func() P, put func(*histogramPoint, P) error) error {
	for i := range hps {
		if err := put(&hps[i], add()); err != nil {
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

// histogramOut is a histogram point of either kind in pdata.
type histogramOut interface {
	Attributes() pcommon.Map
	SetStartTimestamp(pcommon.Timestamp)
	SetTimestamp(pcommon.Timestamp)
	SetCount(uint64)
	SetSum(float64)
	SetMin(float64)
	SetMax(float64)
	Exemplars() pmetric.ExemplarSlice
}

// putHistogramPoint sets what a histogram point of either kind holds, around buckets, which
// sets its kind's buckets.
func putHistogramPoint[P histogramOut](r *metricsReader, p *histogramPoint, out P, buckets func() error) error {
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
	if err := buckets(); err != nil {
		return err
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
func (r *metricsReader) putHistogram(p *histogramPoint, out pmetric.HistogramDataPoint) error {
	return putHistogramPoint(r, p, out, func() error {
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
		return nil
	})
}
func (r *metricsReader) putExp(p *histogramPoint, out pmetric.ExponentialHistogramDataPoint) error {
	return putHistogramPoint(r, p, out, func() error {
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
		return nil
	})
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
