package console

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog"
)

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
	rl, fresh := groupOf(&r.reader, last, ld.ResourceLogs(), res)
	if fresh {
		rl.ScopeLogs().AppendEmpty()
	}
	out.MoveTo(rl.ScopeLogs().At(0).LogRecords().AppendEmpty())
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
		out.SetSeverityText(r.internString(l.SeverityText.b))
	}
	r.putAttrs(out.Attributes(), &l.Attributes)
	if l.DroppedAttributes.set {
		n, ok := intLiteral(l.DroppedAttributes.b)
		if !ok || n < 0 || n > 1<<31 {
			return fmt.Errorf("dropped_attributes: %s is not a count", l.DroppedAttributes.b)
		}
		out.SetDroppedAttributesCount(uint32(n))
	}
	if err := putISOTime(l.Timestamp, "timestamp", out.SetTimestamp); err != nil {
		return err
	}
	if err := putISOTime(l.ObservedTimestamp, "observed_timestamp", out.SetObservedTimestamp); err != nil {
		return err
	}
	var tid [16]byte
	if err := putHexID(l.TraceID, tid[:], "trace_id", func() { out.SetTraceID(tid) }); err != nil {
		return err
	}
	var sid [8]byte
	if err := putHexID(l.SpanID, sid[:], "span_id", func() { out.SetSpanID(sid) }); err != nil {
		return err
	}
	if l.TraceFlags.set {
		if l.TraceFlags.v < 0 || l.TraceFlags.v > 255 {
			return fmt.Errorf("trace_flags: %d is not 0..255", l.TraceFlags.v)
		}
		out.SetFlags(plog.LogRecordFlags(l.TraceFlags.v))
	}
	out.SetEventName(r.internString(l.EventName.b))
	return nil
}
