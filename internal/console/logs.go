package console

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog"
)

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

// DecodeLog turns one log record (a line, or a pretty-printed block) into a record of ld,
// under the last ResourceLogs when its resource is the same.
func DecodeLog(line []byte, ld plog.Logs, last *resourceGroup) error {
	var r logReader
	return r.decodeLog(line, ld, last)
}

func (r *logReader) decodeLog(line []byte, ld plog.Logs, last *resourceGroup) error {
	if err := r.read(line); err != nil {
		return err
	}
	out := plog.NewLogRecord()
	if err := r.put(out); err != nil {
		return err
	}
	res := &r.rec.Resource // unset: the empty resource
	rls := ld.ResourceLogs()
	var sl plog.ScopeLogs
	if last.joins(&r.reader, rls.Len(), res) {
		sl = rls.At(rls.Len() - 1).ScopeLogs().At(0)
	} else {
		rl := rls.AppendEmpty()
		r.putResource(res, rl.Resource())
		rl.SetSchemaUrl(res.SchemaURL.String())
		sl = rl.ScopeLogs().AppendEmpty()
		last.started()
	}
	out.MoveTo(sl.LogRecords().AppendEmpty())
	return nil
}

func (r *logReader) put(out plog.LogRecord) error {
	l := &r.rec
	if !l.ObservedTimestamp.set && !l.Timestamp.set {
		return errors.New("timestamp and observed_timestamp: missing")
	}
	r.putValue(out.Body(), l.Body)
	if l.SeverityNumber.set {
		if l.SeverityNumber.v < 0 || l.SeverityNumber.v > 24 {
			return fmt.Errorf("severity_number: %d is not 0..24", l.SeverityNumber.v)
		}
		out.SetSeverityNumber(plog.SeverityNumber(l.SeverityNumber.v))
	}
	if l.SeverityText.set {
		out.SetSeverityText(l.SeverityText.String())
	}
	r.putAttrs(out.Attributes(), &l.Attributes)
	if l.DroppedAttributes.set {
		n, ok := intLiteral(l.DroppedAttributes.b)
		if !ok || n < 0 || n > 1<<31 {
			return fmt.Errorf("dropped_attributes: %s is not a count", l.DroppedAttributes.b)
		}
		out.SetDroppedAttributesCount(uint32(n))
	}
	ts, err := isoTime(l.Timestamp, "timestamp")
	if err != nil {
		return err
	}
	out.SetTimestamp(ts)
	obs, err := isoTime(l.ObservedTimestamp, "observed_timestamp")
	if err != nil {
		return err
	}
	out.SetObservedTimestamp(obs)
	var tid [16]byte
	if ok, err := optHexID(l.TraceID, tid[:], "trace_id"); err != nil {
		return err
	} else if ok {
		out.SetTraceID(tid)
	}
	var sid [8]byte
	if ok, err := optHexID(l.SpanID, sid[:], "span_id"); err != nil {
		return err
	} else if ok {
		out.SetSpanID(sid)
	}
	if l.TraceFlags.set {
		if l.TraceFlags.v < 0 || l.TraceFlags.v > 255 {
			return fmt.Errorf("trace_flags: %d is not 0..255", l.TraceFlags.v)
		}
		out.SetFlags(plog.LogRecordFlags(l.TraceFlags.v))
	}
	out.SetEventName(l.EventName.String())
	return nil
}
