package oldjson

import (
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The SDK's ReadableSpan.to_json (opentelemetry-sdk, trace/__init__.py). It carries no
// instrumentation scope, no flags and no dropped counts.
type span struct {
	Name       *string        `json:"name"`
	Context    *spanContext   `json:"context"`
	Kind       string         `json:"kind"`
	ParentID   *string        `json:"parent_id"`
	StartTime  *string        `json:"start_time"`
	EndTime    *string        `json:"end_time"`
	Status     *spanStatus    `json:"status"`
	Attributes map[string]any `json:"attributes"`
	Events     []spanEvent    `json:"events"`
	Links      []spanLink     `json:"links"`
	Resource   *resource      `json:"resource"`
}

type spanContext struct {
	TraceID    string `json:"trace_id"`
	SpanID     string `json:"span_id"`
	TraceState string `json:"trace_state"`
}

type spanStatus struct {
	StatusCode  string `json:"status_code"`
	Description string `json:"description"`
}

type spanEvent struct {
	Name       string         `json:"name"`
	Timestamp  *string        `json:"timestamp"`
	Attributes map[string]any `json:"attributes"`
}

type spanLink struct {
	Context    *spanContext   `json:"context"`
	Attributes map[string]any `json:"attributes"`
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
	var s span
	if err := decodeJSON(line, &s); err != nil {
		return err
	}
	if s.Name == nil {
		return errors.New("name: missing")
	}
	if s.Context == nil {
		return errors.New("context: missing")
	}
	if s.Resource == nil {
		return errors.New("resource: missing")
	}
	out := ptrace.NewSpan()
	if err := s.put(out); err != nil {
		return err
	}
	rss := td.ResourceSpans()
	var ss ptrace.ScopeSpans
	if last.joins(rss.Len(), s.Resource) {
		ss = rss.At(rss.Len() - 1).ScopeSpans().At(0)
	} else {
		rs := ptrace.NewResourceSpans()
		if err := s.Resource.put(rs.Resource()); err != nil {
			return err
		}
		rs.SetSchemaUrl(s.Resource.SchemaURL)
		rs.ScopeSpans().AppendEmpty()
		rs.MoveTo(rss.AppendEmpty())
		ss = rss.At(rss.Len() - 1).ScopeSpans().At(0)
		last.started()
	}
	out.MoveTo(ss.Spans().AppendEmpty())
	return nil
}

func (s *span) put(out ptrace.Span) error {
	out.SetName(*s.Name)
	var tid [16]byte
	var sid [8]byte
	if err := putContext(s.Context, tid[:], sid[:], "context"); err != nil {
		return err
	}
	out.SetTraceID(tid)
	out.SetSpanID(sid)
	ts, err := traceState(s.Context.TraceState)
	if err != nil {
		return fmt.Errorf("context.trace_state: %w", err)
	}
	out.TraceState().FromRaw(ts)
	kind, ok := spanKinds[s.Kind]
	if !ok {
		return fmt.Errorf("kind: %q is not a SpanKind", s.Kind)
	}
	out.SetKind(kind)
	if s.ParentID != nil {
		var pid [8]byte
		ok, err := hexID(*s.ParentID, pid[:])
		if err != nil {
			return fmt.Errorf("parent_id: %w", err)
		}
		if ok {
			out.SetParentSpanID(pid)
		}
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
	if s.Status != nil {
		code, ok := statusCodes[s.Status.StatusCode]
		if !ok {
			return fmt.Errorf("status.status_code: %q is not UNSET, OK or ERROR", s.Status.StatusCode)
		}
		out.Status().SetCode(code)
		out.Status().SetMessage(s.Status.Description)
	}
	if err := putAttrs(out.Attributes(), s.Attributes); err != nil {
		return err
	}
	for i, e := range s.Events {
		oe := out.Events().AppendEmpty()
		oe.SetName(e.Name)
		t, err := isoTime(e.Timestamp, "timestamp")
		if err != nil {
			return fmt.Errorf("events[%d].%w", i, err)
		}
		oe.SetTimestamp(t)
		if err := putAttrs(oe.Attributes(), e.Attributes); err != nil {
			return fmt.Errorf("events[%d]: %w", i, err)
		}
	}
	for i, l := range s.Links {
		ol := out.Links().AppendEmpty()
		if l.Context == nil {
			return fmt.Errorf("links[%d].context: missing", i)
		}
		var ltid [16]byte
		var lsid [8]byte
		if err := putContext(l.Context, ltid[:], lsid[:], fmt.Sprintf("links[%d].context", i)); err != nil {
			return err
		}
		ol.SetTraceID(ltid)
		ol.SetSpanID(lsid)
		lts, err := traceState(l.Context.TraceState)
		if err != nil {
			return fmt.Errorf("links[%d].context.trace_state: %w", i, err)
		}
		ol.TraceState().FromRaw(lts)
		if err := putAttrs(ol.Attributes(), l.Attributes); err != nil {
			return fmt.Errorf("links[%d]: %w", i, err)
		}
	}
	return nil
}

func putContext(c *spanContext, tid, sid []byte, where string) error {
	ok, err := hexID(c.TraceID, tid)
	if err != nil || !ok {
		return fmt.Errorf("%s.trace_id: %q is not a valid trace id", where, c.TraceID)
	}
	ok, err = hexID(c.SpanID, sid)
	if err != nil || !ok {
		return fmt.Errorf("%s.span_id: %q is not a valid span id", where, c.SpanID)
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
