package events

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// The rejections of a line: their reasons, and the messages that name the place of a fault.

// Reasons: the categories of DecodeError, a fixed set for self-telemetry (those that other
// decoders share are defined in ingest).
const (
	ReasonTooLong           = ingest.ReasonTooLong
	ReasonInvalidUTF8       = ingest.ReasonInvalidUTF8
	ReasonInvalidJSON       = ingest.ReasonInvalidJSON
	ReasonWrongType         = ingest.ReasonWrongType
	ReasonMissingField      = ingest.ReasonMissingField
	ReasonOutOfRange        = ingest.ReasonOutOfRange
	ReasonInvalidValue      = ingest.ReasonInvalidValue
	ReasonTooDeep           = "too_deep"
	ReasonTooManyAttributes = "too_many_attributes"
)

// Reasons are every Reason constant: the receiver makes each one's series exist at 0.
var Reasons = []string{
	ReasonTooLong, ReasonInvalidUTF8, ReasonInvalidJSON, ReasonWrongType, ReasonMissingField,
	ReasonOutOfRange, ReasonInvalidValue, ReasonTooDeep, ReasonTooManyAttributes,
}

// DecodeError is the error of a rejected line: a short reason naming the field, and its
// category.
type DecodeError struct {
	reason string
	msg    string
}

// NewDecodeError returns a rejection with one of the Reason constants (or another package's
// reason, such as the aggregator's too_many_resources) and its message.
func NewDecodeError(reason, msg string) *DecodeError { return &DecodeError{reason: reason, msg: msg} }

func (e *DecodeError) Error() string { return e.msg }

// Reason returns the category of the error (one of the Reason constants).
func (e *DecodeError) Reason() string { return e.reason }

// ErrBlank is returned for a blank line (only whitespace). It is not a rejection.
var ErrBlank = errors.New("blank line")

// Reason returns the category of an error returned by Decode: one of the Reason constants,
// "" for nil and ErrBlank, and ReasonInvalidJSON for any other error.
func Reason(err error) string {
	if err == nil || errors.Is(err, ErrBlank) {
		return ""
	}
	var de *DecodeError
	if errors.As(err, &de) {
		return de.reason
	}
	return ReasonInvalidJSON
}

// scanError is the rejection of a fault gymjson found (any other error as it is).
func scanError(err error) error {
	// gymjson returns its errors unwrapped; errors.As would move je to the heap for every
	// rejected line.
	je, ok := err.(*gymjson.Error) //nolint:errorlint // see above
	if !ok {
		return err
	}
	switch je.Cause {
	case gymjson.CauseTooDeep:
		return errTooDeep
	case gymjson.CauseInvalidUTF8:
		return &DecodeError{reason: ReasonInvalidUTF8, msg: je.Error()}
	}
	return &DecodeError{reason: ReasonInvalidJSON, msg: je.Error()}
}

var errTooDeep = &DecodeError{reason: ReasonTooDeep, msg: gymjson.ErrTooDeep.Error()}

func invalidUTF8(line []byte) error {
	return &DecodeError{reason: ReasonInvalidUTF8, msg: fmt.Sprintf("not valid UTF-8 (at byte %d)", gymjson.FirstInvalidUTF8(line))}
}

// raw returns the JSON text of a slot, shortened for a message.
func (d *Decoder) raw(s *slot) string {
	switch s.kind {
	case gymjson.Object, gymjson.Array:
		return s.kind.String()
	case gymjson.String:
		return quote(d.str(s))
	}
	t := d.line[s.start:s.end]
	if len(t) > 40 {
		return string(t[:40]) + "..."
	}
	return string(t)
}

// quote quotes v for a message, cut to 64 bytes at a rune boundary.
func quote(v []byte) string {
	if len(v) > 64 {
		return strconv.Quote(string(cutRunes(v, 64))) + "..."
	}
	return strconv.Quote(string(v))
}

// cutRunes cuts valid UTF-8 v to at most n bytes at a rune boundary. The decoder imports no
// value rule (the layout's walls): on a valid line this is normalize.FreeString's cut.
func cutRunes(v []byte, n int) []byte {
	if len(v) <= n {
		return v
	}
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n:n]
}

// fail records the first error of the line.
func (d *Decoder) fail(reason, format string, args ...any) {
	if d.err == nil {
		d.err = &DecodeError{reason: reason, msg: fmt.Sprintf(format, args...)}
	}
}

func (d *Decoder) missing(field string) {
	d.fail(ReasonMissingField, "missing required field %q", field)
}

func (d *Decoder) wrongType(k int, want string, s *slot) {
	if d.err == nil {
		d.wrongTypeAt(fieldLabel(keyNames[k]), want, s)
	}
}

// wrongTypeAt records a wrong type; where names the place (`field "x"`).
func (d *Decoder) wrongTypeAt(where, want string, s *slot) {
	if d.err == nil {
		d.fail(ReasonWrongType, "%s: want %s, got %s", where, want, d.raw(s))
	}
}

// fieldLabel names a field in a message.
func fieldLabel(name string) string { return "field " + strconv.Quote(name) }

// A place names a value in messages: a top-level field (`event`), a member of one of its
// objects (`host.usage`) or of an array's element (`limits[2].active`). It is formatted only
// when a value there is rejected.
type place struct {
	field  string
	idx    int    // the element of field's array, or -1
	member string // the member of the object, or ""
}

func topPlace(k int) place { return place{field: keyNames[k], idx: -1} }

func (p place) String() string {
	s := p.field
	if p.idx >= 0 {
		s += "[" + strconv.Itoa(p.idx) + "]"
	}
	if p.member != "" {
		s += "." + p.member
	}
	return s
}
