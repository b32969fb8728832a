package oldjson

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog"
)

// The SDK's ReadableLogRecord.to_json (opentelemetry-sdk, _logs/_internal/__init__.py). It
// carries no instrumentation scope; bytes bodies and attributes come base64-encoded (the
// SDK's BytesEncoder) and stay strings.
type logRecord struct {
	Body              any            `json:"body"`
	SeverityNumber    *int           `json:"severity_number"`
	SeverityText      *string        `json:"severity_text"`
	Attributes        map[string]any `json:"attributes"`
	DroppedAttributes *json.Number   `json:"dropped_attributes"`
	Timestamp         *string        `json:"timestamp"`
	ObservedTimestamp *string        `json:"observed_timestamp"`
	TraceID           *string        `json:"trace_id"`
	SpanID            *string        `json:"span_id"`
	TraceFlags        *int           `json:"trace_flags"`
	Resource          *resource      `json:"resource"`
	EventName         string         `json:"event_name"`
}

// DecodeLog turns one log record (a line, or a pretty-printed block) into a record of ld,
// under the last ResourceLogs when its resource is the same.
func DecodeLog(line []byte, ld plog.Logs, last *resourceGroup) error {
	var r logRecord
	if err := decodeJSON(line, &r); err != nil {
		return err
	}
	out := plog.NewLogRecord()
	if err := r.put(out); err != nil {
		return err
	}
	res := r.Resource
	if res == nil {
		res = &resource{}
	}
	rls := ld.ResourceLogs()
	var sl plog.ScopeLogs
	if last.joins(rls.Len(), res) {
		sl = rls.At(rls.Len() - 1).ScopeLogs().At(0)
	} else {
		rl := plog.NewResourceLogs()
		if err := res.put(rl.Resource()); err != nil {
			return err
		}
		rl.SetSchemaUrl(res.SchemaURL)
		rl.ScopeLogs().AppendEmpty()
		rl.MoveTo(rls.AppendEmpty())
		sl = rls.At(rls.Len() - 1).ScopeLogs().At(0)
		last.started()
	}
	out.MoveTo(sl.LogRecords().AppendEmpty())
	return nil
}

func (r *logRecord) put(out plog.LogRecord) error {
	if r.ObservedTimestamp == nil && r.Timestamp == nil {
		return errors.New("timestamp and observed_timestamp: missing")
	}
	if err := putValue(out.Body(), r.Body); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if r.SeverityNumber != nil {
		if *r.SeverityNumber < 0 || *r.SeverityNumber > 24 {
			return fmt.Errorf("severity_number: %d is not 0..24", *r.SeverityNumber)
		}
		out.SetSeverityNumber(plog.SeverityNumber(*r.SeverityNumber))
	}
	if r.SeverityText != nil {
		out.SetSeverityText(*r.SeverityText)
	}
	if err := putAttrs(out.Attributes(), r.Attributes); err != nil {
		return err
	}
	if r.DroppedAttributes != nil {
		n, err := parseNumber(*r.DroppedAttributes)
		if err != nil || !n.isInt || n.i < 0 || n.i > 1<<31 {
			return fmt.Errorf("dropped_attributes: %s is not a count", *r.DroppedAttributes)
		}
		out.SetDroppedAttributesCount(uint32(n.i))
	}
	ts, err := isoTime(r.Timestamp, "timestamp")
	if err != nil {
		return err
	}
	out.SetTimestamp(ts)
	obs, err := isoTime(r.ObservedTimestamp, "observed_timestamp")
	if err != nil {
		return err
	}
	out.SetObservedTimestamp(obs)
	if r.TraceID != nil {
		var tid [16]byte
		ok, err := hexID(*r.TraceID, tid[:])
		if err != nil {
			return fmt.Errorf("trace_id: %w", err)
		}
		if ok {
			out.SetTraceID(tid)
		}
	}
	if r.SpanID != nil {
		var sid [8]byte
		ok, err := hexID(*r.SpanID, sid[:])
		if err != nil {
			return fmt.Errorf("span_id: %w", err)
		}
		if ok {
			out.SetSpanID(sid)
		}
	}
	if r.TraceFlags != nil {
		if *r.TraceFlags < 0 || *r.TraceFlags > 255 {
			return fmt.Errorf("trace_flags: %d is not 0..255", *r.TraceFlags)
		}
		out.SetFlags(plog.LogRecordFlags(*r.TraceFlags))
	}
	out.SetEventName(r.EventName)
	return nil
}
