package console

import (
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

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
	rs, fresh := groupOf(&r.reader, last, td.ResourceSpans(), &s.Resource)
	if fresh {
		rs.ScopeSpans().AppendEmpty()
	}
	out.MoveTo(rs.ScopeSpans().At(0).Spans().AppendEmpty())
	return nil
}

func (r *spanReader) put(out ptrace.Span) error {
	s := &r.s
	out.SetName(r.internString(s.Name.b))
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
	if err := putHexID(s.ParentID, pid[:], "parent_id", func() { out.SetParentSpanID(pid) }); err != nil {
		return err
	}
	// A span that fails here is dropped whole: the start set before a bad end is never seen.
	if err := putISOTime(s.StartTime, "start_time", out.SetStartTimestamp); err != nil {
		return err
	}
	if err := putISOTime(s.EndTime, "end_time", out.SetEndTimestamp); err != nil {
		return err
	}
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
		oe.SetName(r.internString(e.Name.b))
		if err := putISOTime(e.Timestamp, "timestamp", oe.SetTimestamp); err != nil {
			return fmt.Errorf("events[%d].%w", i, err)
		}
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
