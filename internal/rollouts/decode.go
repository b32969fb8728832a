package rollouts

import (
	"errors"
	"fmt"
	"io"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// Reasons are every Reason constant of a row (the Source adds ingest.ReasonPartialLine): the
// receiver makes each one's series exist at 0.
var Reasons = []string{
	ReasonTooLong, ReasonInvalidUTF8, ReasonInvalidJSON, ReasonNotObject, ReasonWrongType,
	ReasonOutOfRange, ReasonMissingField, ReasonInvalidValue,
}

// ErrIncomplete: the data ends inside a row (no newline yet). Nothing of the row was used;
// read it again from Offset once more data is there (Scanned says how far a newline is
// known to be absent).
var ErrIncomplete = errors.New("the row is not complete yet")

// RowError is a rejected row: its reason (one of the Reason constants) and what was wrong.
// The row is consumed; the rows around it are not affected.
type RowError struct {
	Reason string
	Msg    string
}

func (e *RowError) Error() string { return e.Msg }

// RowDecoder decodes the rows of a byte stream (a run file from an offset) through one fixed
// buffer: a row is scanned as its bytes arrive, the mapped keys are extracted and every other
// value is skipped, so no row is ever held whole. Not safe for concurrent use; Reset points it at another stream.
type RowDecoder struct {
	src    io.Reader
	buf    []byte
	pos    int
	end    int
	base   int64 // stream offset of buf[0]
	srcEnd bool  // src returned an error or io.EOF
	srcErr error

	max       int64 // longest line without its newline; 0: no limit
	lineStart int64
	skipping  bool // after a failure: only looking for the newline, no limit applies
	committed int64
	lines     int64

	fail    *RowError
	failBuf RowError // fail points here: no allocation per rejected row

	key      []byte // the member key being read (decoded, bounded): into buf, or keyBuf
	keyBuf   []byte
	keyInBuf bool   // key points into buf: fill copies it to keyBuf before buf is read over
	keyLong  bool   // the key was longer than the buffer: matches nothing
	num      []byte // a scalar token
	// scratch holds the row's kept findings and the one string being decoded: a string that is
	// not kept is cut off again, so it never holds more than MaxFindings values and one more.
	scratch []byte
	// slots: one fixed buffer per mapped string, reused when its key comes again in the row.
	slots   [numSlots][]byte
	check   []byte // a finding object's check
	checkID []byte // ... and check_id
	// itemType is the type of the response.output item being read.
	itemType []byte
	// text reads a string that is not taken as it lies in buf.
	text gymjson.StringReader
	// ev is a main row's rollout evidence (Row.Evidence).
	ev Evidence
}

// NewRowDecoder returns a RowDecoder with a read buffer of bufBytes (0: DefaultBufferBytes).
func NewRowDecoder(bufBytes int) *RowDecoder {
	if bufBytes <= 0 {
		bufBytes = DefaultBufferBytes
	}
	r := &RowDecoder{
		buf:     make([]byte, bufBytes),
		keyBuf:  make([]byte, 0, maxKeyBytes+1),
		num:     make([]byte, 0, maxNumberBytes),
		scratch: make([]byte, 0, 4*MaxValueBytes),
	}
	slots := make([]byte, numSlots*MaxValueBytes)
	for i := range r.slots {
		r.slots[i] = slots[i*MaxValueBytes : i*MaxValueBytes : (i+1)*MaxValueBytes]
	}
	return r
}

// Reset makes the RowDecoder read src, whose first byte is at offset of its file, which has
// lines complete lines before it; rows longer than maxLineBytes (0: no limit) are rejected.
func (r *RowDecoder) Reset(src io.Reader, offset, lines, maxLineBytes int64) {
	r.src, r.pos, r.end, r.base, r.srcEnd, r.srcErr = src, 0, 0, offset, false, nil
	r.max, r.committed, r.lines, r.lineStart, r.skipping = maxLineBytes, offset, lines, offset, false
	r.key, r.keyInBuf = nil, false
}

// Offset is the offset just after the last complete line read: where reading resumes.
func (r *RowDecoder) Offset() int64 { return r.committed }

// Lines is the count of complete lines read, blank ones included: after Next, the line
// number of the row it returned.
func (r *RowDecoder) Lines() int64 { return r.lines }

// Scanned is how far the stream was read: after ErrIncomplete, no newline lies between
// Offset and Scanned.
func (r *RowDecoder) Scanned() int64 { return r.base + int64(r.end) }

// Buffer is the RowDecoder's read buffer, for a caller's scan between two Resets (its contents
// are not kept across Reset).
func (r *RowDecoder) Buffer() []byte { return r.buf }

// Err is the read error that ended the stream, if it was not io.EOF.
func (r *RowDecoder) Err() error { return r.srcErr }

// Next reads the next row of a file of the given kind into row. It returns nil for a row to
// apply, a *RowError for a rejected row, ErrIncomplete when the stream ends inside a row and
// io.EOF when it ends after a complete line. Blank lines are skipped.
func (r *RowDecoder) Next(kind Kind, row *Row) error {
	for {
		row.reset()
		if kind == Main {
			r.ev.reset()
			row.Evidence = &r.ev
		}
		r.scratch = r.scratch[:0]
		r.fail = nil
		r.skipping = false
		r.lineStart = r.base + int64(r.pos)
		c, ok := r.ws()
		if !ok {
			if r.fail == nil && r.base+int64(r.end) == r.committed {
				return io.EOF
			}
			if r.fail == nil {
				return ErrIncomplete
			}
		} else if c == '\n' {
			r.pos++
			r.commit()
			continue // blank line
		} else if c != '{' {
			r.failf(ReasonNotObject, "the row is not a JSON object (it starts with %q)", c)
		} else {
			r.pos++
			if r.object(ctxOf(kind), row) {
				if c, ok := r.ws(); ok && c != '\n' {
					r.failf(ReasonInvalidJSON, "unexpected %q after the row's object", c)
				}
			}
		}
		if r.fail == nil && !r.more() {
			return ErrIncomplete
		}
		if r.fail != nil && !r.skipToNewline() {
			return ErrIncomplete
		}
		// At the newline.
		n := r.base + int64(r.pos) - r.lineStart
		r.pos++
		r.commit()
		if r.max > 0 && n > r.max {
			r.failBuf = RowError{Reason: ReasonTooLong, Msg: fmt.Sprintf("the row is %d bytes, over max_line_bytes %d", n, r.max)}
			return &r.failBuf
		}
		if r.fail != nil {
			return r.fail
		}
		if kind == Verdicts && row.Verdict == nil {
			r.failBuf = RowError{Reason: ReasonMissingField, Msg: `missing required key "verdict"`}
			return &r.failBuf
		}
		if kind == Main {
			r.ev.finish()
		}
		return nil
	}
}
func (r *RowDecoder) commit() {
	r.committed = r.base + int64(r.pos)
	r.lines++
}

// failf records the row's first failure.
func (r *RowDecoder) failf(reason, format string, args ...any) {
	if r.fail == nil {
		r.failBuf = RowError{Reason: reason, Msg: fmt.Sprintf(format, args...)}
		r.fail = &r.failBuf
	}
}
