package console

import (
	"bytes"
	"errors"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

// Reasons a telemetry record is rejected (besides the transports' too_long and partial_line).
const (
	// ReasonInvalidJSON: the record starts as a signal does but is not JSON (cut short,
	// interleaved with other output).
	ReasonInvalidJSON = ingest.ReasonInvalidJSON
	// ReasonInvalidRecord: JSON, but not the SDK's shape (a field missing, of another type,
	// out of range).
	ReasonInvalidRecord = "invalid_record"
	// ReasonPartialRecord: a pretty-printed record that other output cut, or that was
	// longer than max_line_bytes.
	ReasonPartialRecord = "partial_record"
)

// Sink takes what the line decoders decode. Each call hands over the data (the sink owns it).
// Takes says which signals it has a pipeline for: the records of the others are dropped
// before they are decoded, and counted nowhere (the operator chose not to take them).
type Sink interface {
	Takes(k Kind) bool
	Metrics(md pmetric.Metrics)
	Traces(td ptrace.Traces)
	Logs(ld plog.Logs)
}

// keepBuf is the largest scratch buffer a decoder keeps between records: a larger one (a big
// metrics batch, every few seconds) is given back to the GC rather than held per file.
const keepBuf = 64 << 10

// maxPending is how many spans or log records a decoder holds before it hands them on
// without waiting for the end of a read.
const maxPending = 1024

// LineDecoder decodes the lines of one source (a file, a connection) for its Sink. Metrics lines go on at once
// (each is a whole batch); spans and log records are gathered and go on at each Flush (the
// end of a read) or every maxPending. Not safe for concurrent use.
type LineDecoder struct {
	source string
	max    int
	sink   Sink
	warn   *ratelog.Logger

	stats ingest.Stats
	line  int64 // lines seen, for the log

	// a pretty-printed record being gathered
	block      []byte
	inBlock    bool
	blockLines int64
	blockFrom  int64
	blockKind  Kind // the record the block's first key announces

	traces  ptrace.Traces
	spanRes resourceGroup
	nSpans  int
	logs    plog.Logs
	logRes  resourceGroup
	nLogs   int

	// the decoders, whose scratch is kept from record to record
	metricsR metricsReader
	spanR    spanReader
	logR     logReader
}

// NewLineDecoder returns the decoder of a source (a file's path, or the network for a
// connection), for lines of at most max bytes.
func NewLineDecoder(source string, max int, sink Sink, warn *ratelog.Logger) *LineDecoder {
	return &LineDecoder{
		source: source, max: max, sink: sink, warn: warn,
		stats:  ingest.NewStats(),
		traces: ptrace.NewTraces(), logs: plog.NewLogs(),
	}
}

// Line handles one line: a record of a signal is decoded and kept, or rejected and counted;
// anything else is skipped and counted (Unknown).
func (s *LineDecoder) Line(line []byte) (ingest.Outcome, error) {
	s.line++
	if s.inBlock {
		if o, done, err := s.blockLine(line); done {
			return o, err
		}
	}
	k := Classify(line)
	switch k {
	case Text:
		s.stats.Unknown++
		return ingest.Unknown, nil
	case BlockStart:
		s.inBlock, s.blockLines, s.blockFrom = true, 1, s.line
		s.block = append(s.block[:0], '{')
		return ingest.Accepted, nil // counted when the block ends
	}
	return s.record(k, line, s.line)
}

// blockLine adds a line to the pretty-printed record being gathered. done=false: the line
// is not part of it (the block was cut) and is handled on its own.
func (s *LineDecoder) blockLine(line []byte) (ingest.Outcome, bool, error) {
	t := bytes.TrimRight(line, " \t\r")
	inner := len(t) > 0 && (t[0] == ' ' || t[0] == '\t')
	if s.blockLines == 1 && inner {
		// The second line tells a record from any other text that starts with "{".
		key, _, ok := firstKey(t)
		switch {
		case ok && string(key) == "resource_metrics":
			s.blockKind = Metrics
		case ok && string(key) == "body":
			s.blockKind = Log
		case ok && string(key) == "name":
			s.blockKind = Span
		default:
			s.abandonBlock(false)
			return 0, false, nil
		}
	}
	switch {
	case inner:
		if len(s.block)+1+len(t) > s.max {
			s.abandonBlock(true)
			return ingest.Rejected, true, nil
		}
		s.block = append(append(s.block, '\n'), t...)
		s.blockLines++
		return ingest.Accepted, true, nil
	case len(t) == 1 && t[0] == '}':
		s.block = append(s.block, '\n', '}')
		s.blockLines++
		s.inBlock = false
		k := Classify(s.block)
		if k == Text || k == BlockStart {
			s.stats.Unknown += s.blockLines
			return ingest.Unknown, true, nil
		}
		o, err := s.record(k, s.block, s.blockFrom)
		return o, true, err
	}
	// Other output cut the block: what came before is a partial record (or text).
	s.abandonBlock(s.blockLines > 1)
	return 0, false, nil
}

// abandonBlock ends a block that is not a whole record: rejected when it had begun as one
// (unless of a signal the sink does not take), skipped (its lines counted) when it had not.
func (s *LineDecoder) abandonBlock(wasRecord bool) {
	s.inBlock = false
	if cap(s.block) > keepBuf {
		s.block = nil
	}
	if !wasRecord {
		s.stats.Unknown += s.blockLines
		return
	}
	if !s.sink.Takes(s.blockKind) {
		return
	}
	_ = s.reject(ReasonPartialRecord, "block", s.blockFrom, errors.New("a pretty-printed record was cut by other output or by a refused line, or is longer than max_line_bytes"))
}

func (s *LineDecoder) record(k Kind, b []byte, at int64) (ingest.Outcome, error) {
	if !s.sink.Takes(k) {
		if cap(s.block) > keepBuf {
			s.block = nil
		}
		return ingest.Blank, nil
	}
	if len(b) > s.max {
		return ingest.Rejected, s.reject(ingest.ReasonTooLong, k.String(), at, errors.New("record longer than max_line_bytes"))
	}
	var err error
	switch k {
	case Metrics:
		md := pmetric.NewMetrics()
		if err = s.metricsR.decodeMetrics(b, md); err == nil {
			s.sink.Metrics(md)
		}
	case Span:
		if err = s.spanR.decodeSpan(b, s.traces, &s.spanRes); err == nil {
			if s.nSpans++; s.nSpans >= maxPending {
				s.flushTraces()
			}
		}
	case Log:
		if err = s.logR.decodeLog(b, s.logs, &s.logRes); err == nil {
			if s.nLogs++; s.nLogs >= maxPending {
				s.flushLogs()
			}
		}
	}
	if cap(s.block) > keepBuf {
		s.block = nil // b is not used after this
	}
	if len(b) > keepBuf {
		// Nor kept by the readers' views of it (their scratch is small, and goes with it).
		s.metricsR, s.spanR, s.logR = metricsReader{}, spanReader{}, logReader{}
	}
	if err != nil {
		return ingest.Rejected, s.reject(reasonOf(err), k.String(), at, err)
	}
	s.stats.Accepted++
	return ingest.Accepted, nil
}

func (s *LineDecoder) reject(reason, kind string, at int64, err error) error {
	s.stats.Rejected[reason]++
	s.warn.Warn("gym_console: rejected a telemetry record",
		zap.String("source", s.source), zap.Int64("line", at), zap.String("record", kind),
		zap.String("reason", reason), zap.Error(err))
	return err
}

// Reject counts a line the transport refused (too long, cut short at the end of a file).
// The line is gone, so a pretty-printed record it was part of cannot be whole: the record is
// abandoned, never completed from the lines after it.
func (s *LineDecoder) Reject(reason string) {
	s.line++
	if s.inBlock {
		if s.blockLines > 1 {
			// One record, one rejection: the refused line is counted as part of it.
			s.abandonBlock(true)
			return
		}
		s.abandonBlock(false) // a "{" alone was text; the refused line counts on its own
	}
	s.stats.Rejected[reason]++
	s.warn.Warn("gym_console: rejected a line", zap.String("source", s.source), zap.Int64("line", s.line), zap.String("reason", reason))
}

// Flush hands on the spans and log records gathered, and returns the counts since the last
// Flush (the caller clears them).
func (s *LineDecoder) Flush() *ingest.Stats {
	s.flushTraces()
	s.flushLogs()
	return &s.stats
}

func (s *LineDecoder) flushTraces() {
	flush(&s.traces, &s.nSpans, &s.spanRes, ptrace.NewTraces, s.sink.Traces)
}

func (s *LineDecoder) flushLogs() { flush(&s.logs, &s.nLogs, &s.logRes, plog.NewLogs, s.sink.Logs) }

// flush hands on the n records gathered in *data (spans or log records), and starts anew.
func flush[T any](data *T, n *int, res *resourceGroup, fresh func() T, sink func(T)) {
	if *n == 0 {
		return
	}
	d := *data
	*data, *n = fresh(), 0
	res.reset()
	sink(d)
}

// ResourceLine: a console decoder has no state to resume a file with (each record carries
// its resource).
func (s *LineDecoder) ResourceLine() []byte { return nil }

// Restore does nothing (see ResourceLine).
func (s *LineDecoder) Restore([]byte) error { return nil }
