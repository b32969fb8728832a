package console

import "go.opentelemetry.io/collector/pdata/pcommon"

// The SDK's records, as the structs they are read into and one reader for each shape: every
// field is read as encoding/json read it (see json.go). What each record becomes in pdata is
// in metrics.go, traces.go and logs.go.

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

// reuse empties d as a new metricsData for the next record, but keeps its arrays: every
// element up to their capacity is emptied too (elems reads an element into what is at its
// index), so only what this record wrote is ever found in them. An empty array with capacity
// reads as nil: only the lengths of these slices are read.
func (d *metricsData) reuse() {
	rms := d.ResourceMetrics[:cap(d.ResourceMetrics)]
	for i := range rms {
		sms := rms[i].ScopeMetrics[:cap(rms[i].ScopeMetrics)]
		for j := range sms {
			ms := sms[j].Metrics[:cap(sms[j].Metrics)]
			for k := range ms {
				ms[k] = metric{Data: metricData{DataPoints: ms[k].Data.DataPoints[:0]}}
			}
			sms[j] = scopeMetrics{Metrics: sms[j].Metrics[:0]}
		}
		rms[i] = resourceMetrics{ScopeMetrics: rms[i].ScopeMetrics[:0]}
	}
	*d = metricsData{ResourceMetrics: d.ResourceMetrics[:0]}
}

// metricsReader reads metrics lines (one per stream: its scratch is reused).
type metricsReader struct {
	reader
	d   metricsData
	hps []histogramPoint // a metric's histogram points, their arrays of numbers reused

	// The last resource's attributes as written and as put into pdata: the SDK writes the
	// same resource in every batch, copied from here rather than read, sorted and made
	// strings again.
	resText  []byte
	resAttrs pcommon.Map
}

// reset empties a histogram point as a new one, but keeps its arrays of numbers for reuse:
// elems overwrites every element it reads, so an empty array with capacity reads as nil.
func (hp *histogramPoint) reset() {
	*hp = histogramPoint{
		BucketCounts:   hp.BucketCounts[:0],
		ExplicitBounds: hp.ExplicitBounds[:0],
		Positive:       buckets{BucketCounts: hp.Positive.BucketCounts[:0]},
		Negative:       buckets{BucketCounts: hp.Negative.BucketCounts[:0]},
	}
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
	keep := md.DataPoints[:0] // the reused array (metricsData.reuse), kept through optObject's reset
	return optObject(r, i, depth, "data", md, &md.set, func(key []byte, i int) (int, error) {
		switch field(key, metricDataFields) {
		case 0:
			if end, ok, err := r.null(i); ok || err != nil {
				md.DataPoints = nil
				return end, err
			}
			if md.DataPoints == nil {
				md.DataPoints = keep
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
	// The record is read by now: r reads the point in its place (a reader per point would be
	// an allocation per point), its scratch shared.
	b := r.b
	r.b = p
	defer func() { r.b = b }()
	if p[0] == 'n' {
		return nil
	}
	if p[0] != '{' {
		_, err := r.mismatch(0, "data point")
		return err
	}
	_, err := read(r, 0)
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
					hp.ExplicitBounds, hp.hasBounds = hp.ExplicitBounds[:0], true // empty as nil: only the length is read
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
	keep := bs.BucketCounts[:0] // the scratch's array, kept through optObject's reset
	return optObject(r, i, depth, name, bs, &bs.set, func(key []byte, i int) (int, error) {
		switch field(key, bucketsFields) {
		case 0:
			return r.number(i, "offset", &bs.Offset)
		case 1:
			if bs.BucketCounts == nil {
				bs.BucketCounts = keep // empty as nil: each element is overwritten
			}
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

func (r *metricsReader) read(line []byte) error {
	d := &r.d
	return r.decode(line, func(r *reader) (int, error) {
		d.reuse()
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
}

// The SDK's ReadableSpan.to_json (opentelemetry-sdk, trace/__init__.py). It carries no
// instrumentation scope, no flags and no dropped counts. The fields are read as
// encoding/json read them (see json.go).
type span struct {
	Name       text
	Context    spanContext
	Kind       text
	ParentID   text
	StartTime  text
	EndTime    text
	Status     spanStatus
	Attributes attrs
	Events     []spanEvent
	Links      []spanLink
	Resource   resource
}

type spanContext struct {
	set        bool
	TraceID    text
	SpanID     text
	TraceState text
}

type spanStatus struct {
	set         bool
	StatusCode  text
	Description text
}

type spanEvent struct {
	Name       text
	Timestamp  text
	Attributes attrs
}

type spanLink struct {
	Context    spanContext
	Attributes attrs
}

var (
	spanFields        = []string{"name", "context", "kind", "parent_id", "start_time", "end_time", "status", "attributes", "events", "links", "resource"}
	spanContextFields = []string{"trace_id", "span_id", "trace_state"}
	spanStatusFields  = []string{"status_code", "description"}
	spanEventFields   = []string{"name", "timestamp", "attributes"}
	spanLinkFields    = []string{"context", "attributes"}
)

// spanReader reads span lines (one per stream: its scratch is reused).
type spanReader struct {
	reader
	s span
}

func (r *spanReader) read(line []byte) error {
	s := &r.s
	return r.decode(line, func(r *reader) (int, error) {
		*s = span{}
		return r.object(0, 1, func(key []byte, i int) (int, error) {
			switch field(key, spanFields) {
			case 0:
				return r.optStr(i, "name", &s.Name)
			case 1:
				return r.spanContext(i, 2, "context", &s.Context)
			case 2:
				return r.str(i, "kind", &s.Kind)
			case 3:
				return r.optStr(i, "parent_id", &s.ParentID)
			case 4:
				return r.optStr(i, "start_time", &s.StartTime)
			case 5:
				return r.optStr(i, "end_time", &s.EndTime)
			case 6:
				return r.spanStatus(i, 2, &s.Status)
			case 7:
				return r.attrs(i, 2, "attributes", &s.Attributes)
			case 8:
				return structs(r, i, 2, "events", &s.Events, func(e *spanEvent, i int) (int, error) { return r.spanEvent(i, 3, e) })
			case 9:
				return structs(r, i, 2, "links", &s.Links, func(l *spanLink, i int) (int, error) { return r.spanLink(i, 3, l) })
			case 10:
				return r.optResource(i, 2, &s.Resource)
			}
			return r.skip(i, 2)
		})
	})
}

func (r *reader) spanContext(i, depth int, name string, c *spanContext) (int, error) {
	return optObject(r, i, depth, name, c, &c.set, func(key []byte, i int) (int, error) {
		switch field(key, spanContextFields) {
		case 0:
			return r.str(i, "trace_id", &c.TraceID)
		case 1:
			return r.str(i, "span_id", &c.SpanID)
		case 2:
			return r.str(i, "trace_state", &c.TraceState)
		}
		return r.skip(i, depth+1)
	})
}

func (r *reader) spanStatus(i, depth int, st *spanStatus) (int, error) {
	return optObject(r, i, depth, "status", st, &st.set, func(key []byte, i int) (int, error) {
		switch field(key, spanStatusFields) {
		case 0:
			return r.str(i, "status_code", &st.StatusCode)
		case 1:
			return r.str(i, "description", &st.Description)
		}
		return r.skip(i, depth+1)
	})
}

func (r *reader) spanEvent(i, depth int, e *spanEvent) (int, error) {
	return r.object(i, depth, func(key []byte, i int) (int, error) {
		switch field(key, spanEventFields) {
		case 0:
			return r.str(i, "name", &e.Name)
		case 1:
			return r.optStr(i, "timestamp", &e.Timestamp)
		case 2:
			return r.attrs(i, depth+1, "attributes", &e.Attributes)
		}
		return r.skip(i, depth+1)
	})
}

func (r *reader) spanLink(i, depth int, l *spanLink) (int, error) {
	return r.object(i, depth, func(key []byte, i int) (int, error) {
		switch field(key, spanLinkFields) {
		case 0:
			return r.spanContext(i, depth+1, "context", &l.Context)
		case 1:
			return r.attrs(i, depth+1, "attributes", &l.Attributes)
		}
		return r.skip(i, depth+1)
	})
}

// The SDK's ReadableLogRecord.to_json (opentelemetry-sdk, _logs/_internal/__init__.py). It
// carries no instrumentation scope; bytes bodies and attributes come base64-encoded (the
// SDK's BytesEncoder) and stay strings. The fields are read as encoding/json read them (see
// json.go).
type logRecord struct {
	Body              raw // nil: missing (as null)
	SeverityNumber    optInt
	SeverityText      text
	Attributes        attrs
	DroppedAttributes literal
	Timestamp         text
	ObservedTimestamp text
	TraceID           text
	SpanID            text
	TraceFlags        optInt
	Resource          resource
	EventName         text
}

var logRecordFields = []string{"body", "severity_number", "severity_text", "attributes", "dropped_attributes", "timestamp", "observed_timestamp", "trace_id", "span_id", "trace_flags", "resource", "event_name"}

// logReader reads log records (one per stream: its scratch is reused).
type logReader struct {
	reader
	rec logRecord
}

func (r *logReader) read(line []byte) error {
	l := &r.rec
	return r.decode(line, func(r *reader) (int, error) {
		*l = logRecord{}
		return r.object(0, 1, func(key []byte, i int) (int, error) {
			switch field(key, logRecordFields) {
			case 0:
				return r.rawValue(i, 2, &l.Body)
			case 1:
				return r.optInt(i, "severity_number", &l.SeverityNumber)
			case 2:
				return r.optStr(i, "severity_text", &l.SeverityText)
			case 3:
				return r.attrs(i, 2, "attributes", &l.Attributes)
			case 4:
				return r.literal(i, "dropped_attributes", &l.DroppedAttributes)
			case 5:
				return r.optStr(i, "timestamp", &l.Timestamp)
			case 6:
				return r.optStr(i, "observed_timestamp", &l.ObservedTimestamp)
			case 7:
				return r.optStr(i, "trace_id", &l.TraceID)
			case 8:
				return r.optStr(i, "span_id", &l.SpanID)
			case 9:
				return r.optInt(i, "trace_flags", &l.TraceFlags)
			case 10:
				return r.optResource(i, 2, &l.Resource)
			case 11:
				return r.str(i, "event_name", &l.EventName)
			}
			return r.skip(i, 2)
		})
	})
}
