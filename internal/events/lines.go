package events

import (
	"errors"

	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// LineDecoder decodes the events-v1 lines of one source (a request body, a connection, a
// file) and hands their events to the source's Sink: the decoder a transport is given for the
// gym receiver. It counts what became of each line. Not safe for concurrent use.
type LineDecoder struct {
	dec  *Decoder
	ev   Event
	sink Sink
	// onResource: a resource line is current (not the sink's default resource).
	onResource bool
	// keepResource keeps a copy of the current resource line (files keep it with their
	// offsets, so that a resumed file goes on under its resource).
	keepResource bool
	resLine      []byte
	stats        ingest.Stats
}

// NewLineDecoder returns the decoder of a source's lines (at most maxLineBytes each; 0: the
// default), whose events go to the sink newSink makes with defaultAttrs.
func NewLineDecoder(maxLineBytes int, newSink NewSink, defaultAttrs []ResourceAttr) *LineDecoder {
	l := &LineDecoder{dec: NewDecoder(maxLineBytes), stats: ingest.NewStats()}
	l.sink = newSink(defaultAttrs, &l.stats)
	return l
}

// KeepResourceLine makes the decoder keep a copy of its current resource line (ResourceLine).
func (l *LineDecoder) KeepResourceLine() { l.keepResource = true }

// Reset clears the counts and makes the default resource current again, so that a
// LineDecoder can serve another request body.
func (l *LineDecoder) Reset() {
	l.toDefault()
	l.stats.Clear()
}

// Flush returns the counts since they were last cleared (a transport records and clears them
// at the end of each read). Nothing is held back: every line is applied as it comes.
func (l *LineDecoder) Flush() *ingest.Stats { return &l.stats }

// Reject counts a line the transport refused before decoding it (over max_line_bytes while
// still arriving, cut short at the end of a stream). It changes nothing else.
func (l *LineDecoder) Reject(reason string) { l.stats.Rejected[reason]++ }

// Line decodes one line (without its newline) and hands its event to the sink. A rejected
// line returns its error and changes nothing.
func (l *LineDecoder) Line(line []byte) (ingest.Outcome, error) {
	if err := l.dec.Decode(line, &l.ev); err != nil {
		if errors.Is(err, ErrBlank) {
			return ingest.Blank, nil
		}
		l.stats.Rejected[Reason(err)]++
		if l.ev.Type == EventResource {
			// Events after a rejected resource line belong to the default resource, so that no
			// event is put under a process that did not send it.
			l.toDefault()
		}
		return ingest.Rejected, err
	}
	switch l.ev.Type {
	case EventUnknown:
		l.stats.Unknown++
		return ingest.Unknown, nil
	case EventResource:
		if err := l.setResource(line); err != nil {
			l.stats.Rejected[Reason(err)]++
			return ingest.Rejected, err
		}
		l.stats.ResourceValuesCut += int64(l.dec.resourceCuts)
	default:
		l.sink.Apply(&l.ev)
	}
	l.stats.Accepted++
	return ingest.Accepted, nil
}

// ResourceLine returns the current resource line, or nil while the default resource is
// current. Valid until the next Line.
func (l *LineDecoder) ResourceLine() []byte {
	if !l.onResource || len(l.resLine) == 0 {
		return nil
	}
	return l.resLine
}

// Restore makes the resource of a resource line (kept by ResourceLine earlier) current again,
// without counting the line: a file resumed after a restart goes on under its resource.
func (l *LineDecoder) Restore(line []byte) error {
	if err := l.dec.Decode(line, &l.ev); err != nil {
		return err
	}
	if l.ev.Type != EventResource {
		return errors.New("not a resource line")
	}
	return l.setResource(line)
}

// setResource makes the decoded resource line current; a refused one leaves the default
// resource current.
func (l *LineDecoder) setResource(line []byte) error {
	if err := l.sink.SetResource(l.ev.Attrs); err != nil {
		l.onResource = false
		l.resLine = l.resLine[:0]
		return err
	}
	l.onResource = true
	if l.keepResource {
		l.resLine = append(l.resLine[:0], line...)
	}
	return nil
}

func (l *LineDecoder) toDefault() {
	l.sink.DefaultResource()
	l.onResource = false
	l.resLine = l.resLine[:0]
}
