package console

import (
	"errors"
	"fmt"

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
	return optObject(r, i, depth, "scope", s, &s.set, func(key []byte, i int) (int, error) {
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
	return optObject(r, i, depth, "data", md, &md.set, func(key []byte, i int) (int, error) {
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
	return optObject(r, i, depth, name, bs, &bs.set, func(key []byte, i int) (int, error) {
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
