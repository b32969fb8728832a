package console

import (
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

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

// str(SpanKind.X) in Python.
var spanKinds = map[string]ptrace.SpanKind{
	"SpanKind.INTERNAL": ptrace.SpanKindInternal,
	"SpanKind.SERVER":   ptrace.SpanKindServer,
	"SpanKind.CLIENT":   ptrace.SpanKindClient,
	"SpanKind.PRODUCER": ptrace.SpanKindProducer,
	"SpanKind.CONSUMER": ptrace.SpanKindConsumer,
}

// StatusCode.X.name in Python.
var statusCodes = map[string]ptrace.StatusCode{
	"UNSET": ptrace.StatusCodeUnset,
	"OK":    ptrace.StatusCodeOk,
	"ERROR": ptrace.StatusCodeError,
}

// DecodeSpan turns one span line into a span of td, under a ResourceSpans of its own, or
// under the last one when the line's resource is the same (consecutive spans of one process
// share it).
func DecodeSpan(line []byte, td ptrace.Traces, last *resourceGroup) error {
	var r spanReader
	return r.decodeSpan(line, td, last)
}

func (r *spanReader) decodeSpan(line []byte, td ptrace.Traces, last *resourceGroup) error {
	if err := r.read(line); err != nil {
		return err
	}
	s := &r.s
	if !s.Name.set {
		return errors.New("name: missing")
	}
	if !s.Context.set {
		return errors.New("context: missing")
	}
	if !s.Resource.set {
		return errors.New("resource: missing")
	}
	out := ptrace.NewSpan()
	if err := r.put(out); err != nil {
		return err
	}
	rss := td.ResourceSpans()
	var ss ptrace.ScopeSpans
	if last.joins(&r.reader, rss.Len(), &s.Resource) {
		ss = rss.At(rss.Len() - 1).ScopeSpans().At(0)
	} else {
		rs := rss.AppendEmpty()
		r.putResource(&s.Resource, rs.Resource())
		rs.SetSchemaUrl(s.Resource.SchemaURL.String())
		ss = rs.ScopeSpans().AppendEmpty()
		last.started()
	}
	out.MoveTo(ss.Spans().AppendEmpty())
	return nil
}

func (r *spanReader) put(out ptrace.Span) error {
	s := &r.s
	out.SetName(s.Name.String())
	var tid [16]byte
	var sid [8]byte
	if err := putContext(&s.Context, tid[:], sid[:], "context"); err != nil {
		return err
	}
	out.SetTraceID(tid)
	out.SetSpanID(sid)
	ts, err := traceState(string(s.Context.TraceState.b))
	if err != nil {
		return fmt.Errorf("context.trace_state: %w", err)
	}
	out.TraceState().FromRaw(ts)
	kind, ok := spanKinds[string(s.Kind.b)]
	if !ok {
		return fmt.Errorf("kind: %q is not a SpanKind", s.Kind.b)
	}
	out.SetKind(kind)
	var pid [8]byte
	if ok, err := optHexID(s.ParentID, pid[:], "parent_id"); err != nil {
		return err
	} else if ok {
		out.SetParentSpanID(pid)
	}
	start, err := isoTime(s.StartTime, "start_time")
	if err != nil {
		return err
	}
	end, err := isoTime(s.EndTime, "end_time")
	if err != nil {
		return err
	}
	out.SetStartTimestamp(start)
	out.SetEndTimestamp(end)
	if s.Status.set {
		code, ok := statusCodes[string(s.Status.StatusCode.b)]
		if !ok {
			return fmt.Errorf("status.status_code: %q is not UNSET, OK or ERROR", s.Status.StatusCode.b)
		}
		out.Status().SetCode(code)
		out.Status().SetMessage(s.Status.Description.String())
	}
	r.putAttrs(out.Attributes(), &s.Attributes)
	for i := range s.Events {
		e := &s.Events[i]
		oe := out.Events().AppendEmpty()
		oe.SetName(e.Name.String())
		t, err := isoTime(e.Timestamp, "timestamp")
		if err != nil {
			return fmt.Errorf("events[%d].%w", i, err)
		}
		oe.SetTimestamp(t)
		r.putAttrs(oe.Attributes(), &e.Attributes)
	}
	for i := range s.Links {
		l := &s.Links[i]
		ol := out.Links().AppendEmpty()
		if !l.Context.set {
			return fmt.Errorf("links[%d].context: missing", i)
		}
		var ltid [16]byte
		var lsid [8]byte
		if err := putContext(&l.Context, ltid[:], lsid[:], fmt.Sprintf("links[%d].context", i)); err != nil {
			return err
		}
		ol.SetTraceID(ltid)
		ol.SetSpanID(lsid)
		lts, err := traceState(string(l.Context.TraceState.b))
		if err != nil {
			return fmt.Errorf("links[%d].context.trace_state: %w", i, err)
		}
		ol.TraceState().FromRaw(lts)
		r.putAttrs(ol.Attributes(), &l.Attributes)
	}
	return nil
}

func putContext(c *spanContext, tid, sid []byte, where string) error {
	ok, err := hexID(c.TraceID.b, tid)
	if err != nil || !ok {
		return fmt.Errorf("%s.trace_id: %q is not a valid trace id", where, c.TraceID.b)
	}
	ok, err = hexID(c.SpanID.b, sid)
	if err != nil || !ok {
		return fmt.Errorf("%s.span_id: %q is not a valid span id", where, c.SpanID.b)
	}
	return nil
}

// traceState reads repr(TraceState): a Python list of "{key=K, value=V}" strings, as in
// "['{key=a, value=1}', '{key=b, value=2}']", into the W3C form "a=1,b=2". Keys and values
// are printable ASCII without commas, quotes or braces, so the list splits safely.
func traceState(r string) (string, error) {
	if r == "" || r == "[]" {
		return "", nil
	}
	inner, ok := strings.CutPrefix(r, "[")
	if ok {
		inner, ok = strings.CutSuffix(inner, "]")
	}
	if !ok {
		return "", fmt.Errorf("%q is not a Python list", r)
	}
	var b strings.Builder
	for i, item := range strings.Split(inner, ", '") {
		item = strings.Trim(item, "'")
		kv, ok := strings.CutPrefix(item, "{key=")
		if ok {
			kv, ok = strings.CutSuffix(kv, "}")
		}
		k, v, ok2 := strings.Cut(kv, ", value=")
		if !ok || !ok2 || k == "" {
			return "", fmt.Errorf("%q is not {key=K, value=V}", item)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	return b.String(), nil
}
