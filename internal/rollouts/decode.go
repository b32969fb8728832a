package rollouts

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// Reasons a row is rejected: a fixed set, for the receiver's self-telemetry (those that the
// events decoder shares are defined in ingest).
const (
	ReasonTooLong      = ingest.ReasonTooLong      // over max_line_bytes
	ReasonInvalidUTF8  = ingest.ReasonInvalidUTF8  // inside a mapped value
	ReasonInvalidJSON  = ingest.ReasonInvalidJSON  // not JSON where it had to be read
	ReasonNotObject    = "not_object"              // the row is not a JSON object
	ReasonWrongType    = ingest.ReasonWrongType    // a mapped key holds a value of another type
	ReasonOutOfRange   = ingest.ReasonOutOfRange   // a count below 0 or beyond int64
	ReasonMissingField = ingest.ReasonMissingField // a verdict row without verdict
	ReasonInvalidValue = ingest.ReasonInvalidValue // a verdict outside healthy/unhealthy/unobserved
)

// Reasons are every Reason constant of a row (the Tailer adds ingest.ReasonPartialLine): the
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

// DefaultBufferBytes is the read buffer of NewRowDecoder(0): the most a RowDecoder holds of a row.
const DefaultBufferBytes = 256 << 10

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
}

// Slots of the mapped strings.
const (
	slotEnvironmentServer = iota
	slotAgentName
	slotRunID
	slotFailureClass
	slotFailureType
	slotKind0
	slotKind1
	slotKind2
	slotVerdict
	slotCheck
	slotCheckID
	slotModel
	slotStatus
	slotIncomplete
	slotItemType
	numSlots
)

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

const maxKeyBytes = 64

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

// more makes buf[pos] readable: false at the end of the stream, or when the line grew over
// max (the failure is recorded). Small enough to be inlined into the per-byte loops; fill does
// the rest.
func (r *RowDecoder) more() bool {
	return r.pos < r.end || r.fill()
}

// fill reads the next buffer once buf[pos:end] is used up.
func (r *RowDecoder) fill() bool {
	if r.srcEnd {
		return false
	}
	if r.max > 0 && !r.skipping && r.base+int64(r.end)-r.lineStart > r.max {
		// Every byte read since lineStart belongs to this line: it is too long already.
		r.failf(ReasonTooLong, "the row is over max_line_bytes %d", r.max)
		return false
	}
	if r.keyInBuf {
		r.keyBuf = append(r.keyBuf[:0], r.key...)
		r.key, r.keyInBuf = r.keyBuf, false
	}
	r.base += int64(r.end)
	r.pos, r.end = 0, 0
	for r.end == 0 {
		n, err := r.src.Read(r.buf)
		r.end = n
		if err != nil {
			r.srcEnd = true
			if !errors.Is(err, io.EOF) {
				r.srcErr = err
			}
			break
		}
	}
	return r.end > 0
}

// at is the byte at pos, or 0 when the buffer is used up. Gym writes compact JSON: the byte
// after a token is nearly always the next token, so callers of the per-member loops test
// at() > ' ' (inlined) and call ws only otherwise.
func (r *RowDecoder) at() byte {
	if r.pos < r.end {
		return r.buf[r.pos]
	}
	return 0
}

// ws skips white space other than the newline and returns the next byte (not consumed).
func (r *RowDecoder) ws() (byte, bool) {
	for r.more() {
		c := r.buf[r.pos]
		if c == '\n' || !gymjson.IsSpace(c) {
			return c, true
		}
		r.pos++
	}
	return 0, false
}

// skipToNewline moves to the line's newline, ignoring what lies before it.
func (r *RowDecoder) skipToNewline() bool {
	r.skipping = true
	for r.more() {
		if i := bytes.IndexByte(r.buf[r.pos:r.end], '\n'); i >= 0 {
			r.pos += i
			return true
		}
		r.pos = r.end
	}
	return false
}

// Contexts: which object the members being read belong to.
type context uint8

const (
	ctxMain context = iota
	ctxFailures
	ctxVerdicts
	ctxAgentRef
	ctxPerf
	ctxFailureRecord
	ctxFailure
	ctxFinding
	// Main rows' response (response.*), read leniently: a value of another type than the
	// mapping wants records nothing instead of rejecting the row.
	ctxResponse
	ctxIncomplete
	ctxUsage
	ctxInputDetails      // usage.input_tokens_details
	ctxOutputDetails     // usage.output_tokens_details
	ctxPromptDetails     // usage.prompt_tokens_details
	ctxCompletionDetails // usage.completion_tokens_details
	ctxOutputItem
)

func ctxOf(k Kind) context {
	switch k {
	case Failures:
		return ctxFailures
	case Verdicts:
		return ctxVerdicts
	}
	return ctxMain
}

// object reads an object's members after its '{'.
func (r *RowDecoder) object(ctx context, row *Row) bool {
	c, ok := r.ws()
	if !ok {
		return false
	}
	if c == '}' {
		r.pos++
		return true
	}
	for {
		if c != '"' {
			r.failf(ReasonInvalidJSON, "want a key, got %q", c)
			return false
		}
		r.pos++
		if !r.readKey() {
			return false
		}
		if c = r.at(); c <= ' ' {
			if c, ok = r.ws(); !ok {
				return false
			}
		}
		if c != ':' {
			r.failf(ReasonInvalidJSON, "want ':' after key %q, got %q", r.key, c)
			return false
		}
		r.pos++
		if r.at() <= ' ' {
			if _, ok = r.ws(); !ok {
				return false
			}
		}
		if !r.member(ctx, row) {
			return false
		}
		if c = r.at(); c <= ' ' {
			if c, ok = r.ws(); !ok {
				return false
			}
		}
		switch c {
		case ',':
			r.pos++
			if c = r.at(); c <= ' ' {
				if c, ok = r.ws(); !ok {
					return false
				}
			}
		case '}':
			r.pos++
			return true
		default:
			r.failf(ReasonInvalidJSON, "want ',' or '}' in an object, got %q", c)
			return false
		}
	}
}

// member reads the value of the member whose key is r.key: a mapped key is decoded, any other
// value skipped.
func (r *RowDecoder) member(ctx context, row *Row) bool {
	if r.keyLong {
		return r.skipValue()
	}
	k := r.key
	switch ctx {
	case ctxMain:
		switch string(k) {
		case "reward":
			return r.number("reward", &row.Reward, &row.HasReward)
		case "mask_sample":
			return r.boolean("mask_sample", &row.Masked)
		case "ng_perf":
			return r.nested("ng_perf", ctxPerf, row)
		case "response":
			row.clear(ctxResponse)
			if r.buf[r.pos] != '{' {
				return r.skipValue() // not an object: no response
			}
			r.pos++
			row.HasResponse = true
			return r.object(ctxResponse, row)
		}
		return r.identity(k, row)
	case ctxFailures:
		switch string(k) {
		case "_ng_failure_class":
			return r.str("_ng_failure_class", slotFailureClass, &row.FailureClass)
		case "_ng_failure_type":
			return r.str("_ng_failure_type", slotFailureType, &row.FailureType)
		case "failure_kind":
			return r.str("failure_kind", slotKind0, &row.kinds[0])
		case "_ng_failure_kind":
			return r.str("_ng_failure_kind", slotKind1, &row.kinds[1])
		case "_ng_failure_record":
			return r.nested("_ng_failure_record", ctxFailureRecord, row)
		}
		return r.identity(k, row)
	case ctxVerdicts:
		switch string(k) {
		case "verdict":
			return r.verdict(row)
		case "findings":
			return r.findings(row)
		case "_ng_run_id":
			return r.str("_ng_run_id", slotRunID, &row.RunID)
		}
	case ctxAgentRef:
		if string(k) == "name" {
			return r.str("agent_ref.name", slotAgentName, &row.AgentName)
		}
	case ctxPerf:
		switch string(k) {
		case "num_turns":
			return r.count("ng_perf.num_turns", &row.Turns, &row.HasTurns)
		case "num_tool_calls":
			return r.count("ng_perf.num_tool_calls", &row.ToolCalls, &row.HasToolCalls)
		case "total_latency_ms":
			return r.latency(row)
		}
	case ctxFailureRecord:
		if string(k) == "failure" {
			return r.nested("_ng_failure_record.failure", ctxFailure, row)
		}
	case ctxFailure:
		if string(k) == "failure_kind" {
			return r.str("_ng_failure_record.failure.failure_kind", slotKind2, &row.kinds[2])
		}
	case ctxFinding:
		switch string(k) {
		case "check":
			return r.str("findings[].check", slotCheck, &r.check)
		case "check_id":
			return r.str("findings[].check_id", slotCheckID, &r.checkID)
		}
	default:
		return r.responseMember(ctx, k, row)
	}
	return r.skipValue()
}

// identity reads the keys main and failures rows share.
func (r *RowDecoder) identity(k []byte, row *Row) bool {
	switch string(k) {
	case "_ng_environment_server":
		return r.str("_ng_environment_server", slotEnvironmentServer, &row.EnvironmentServer)
	case "agent_ref":
		return r.nested("agent_ref", ctxAgentRef, row)
	case "_ng_run_id":
		return r.str("_ng_run_id", slotRunID, &row.RunID)
	}
	return r.skipValue()
}

// wrongType fails the row: the mapped key holds a value of another type.
func (r *RowDecoder) wrongType(name, want string, c byte) bool {
	r.failf(ReasonWrongType, "key %q: want %s, got %s", name, want, kindOf(c))
	return false
}

func kindOf(c byte) string {
	switch {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a bool"
	case c == 'n':
		return "null"
	case gymjson.StartsNumber(c):
		return "a number"
	}
	return fmt.Sprintf("%q", c)
}

// nested reads an object (or null) whose members are of ctx. What an earlier value of the same
// key set is cleared first: a duplicate key's last value wins, objects included.
func (r *RowDecoder) nested(name string, ctx context, row *Row) bool {
	row.clear(ctx)
	switch c := r.buf[r.pos]; c {
	case '{':
		r.pos++
		return r.object(ctx, row)
	case 'n':
		return r.null(name, "an object")
	default:
		return r.wrongType(name, "an object", c)
	}
}

// null reads a null where a value of want was allowed.
func (r *RowDecoder) null(name, want string) bool {
	if !r.token() {
		return false
	}
	if string(r.num) != "null" {
		r.failf(ReasonInvalidJSON, "key %q: want %s, got %q", name, want, r.num)
		return false
	}
	return true
}

// str reads a string (or null: absent) into *dst, which points into its slot: the string is
// decoded at the end of scratch, copied into the slot and cut off scratch again.
func (r *RowDecoder) str(name string, slot int, dst *[]byte) bool {
	switch c := r.buf[r.pos]; c {
	case '"':
		r.pos++
		if n := gymjson.PlainString(r.buf[r.pos:r.end], MaxValueBytes); n >= 0 {
			*dst = append(r.slots[slot][:0], r.buf[r.pos:r.pos+n]...)
			r.pos += n + 1
			return true
		}
		start := len(r.scratch)
		v, ok := r.readString(name, MaxValueBytes)
		if ok {
			*dst = append(r.slots[slot][:0], v...)
		}
		r.scratch = r.scratch[:start]
		return ok
	case 'n':
		*dst = nil
		return r.null(name, "a string")
	default:
		return r.wrongType(name, "a string", c)
	}
}

// boolean reads true, false or null (false).
func (r *RowDecoder) boolean(name string, dst *bool) bool {
	c := r.buf[r.pos]
	if c != 't' && c != 'f' && c != 'n' {
		return r.wrongType(name, "a bool", c)
	}
	if !r.token() {
		return false
	}
	switch string(r.num) {
	case "true":
		*dst = true
	case "false", "null":
		*dst = false
	default:
		r.failf(ReasonInvalidJSON, "key %q: want a bool, got %q", name, r.num)
		return false
	}
	return true
}

// numberToken reads a number token into r.num by gymjson's grammar (JSON's, and Python's NaN,
// Infinity, -Infinity), or null: present is false.
func (r *RowDecoder) numberToken(name string) (present, ok bool) {
	c := r.buf[r.pos]
	if c != 'n' && !gymjson.StartsNumber(c) {
		return false, r.wrongType(name, "a number", c)
	}
	if !r.token() {
		return false, false
	}
	if string(r.num) == "null" {
		return false, true
	}
	if !gymjson.IsNumber(r.num) {
		r.failf(ReasonInvalidJSON, "key %q: %q is not a number", name, r.num)
		return false, false
	}
	return true, true
}

// number reads a number, converted as the events decoder converts it, or null (absent).
func (r *RowDecoder) number(name string, dst *float64, has *bool) bool {
	present, ok := r.numberToken(name)
	if !ok {
		return false
	}
	*has = present
	if present {
		*dst = gymjson.ParseFloat(r.num)
	}
	return true
}

// count reads an integer >= 0 by the events decoder's integer rule (the exact value of the
// token is an integer within int64: 3.0 and 3e0 are 3), or null (absent).
func (r *RowDecoder) count(name string, dst *int64, has *bool) bool {
	present, ok := r.numberToken(name)
	if !ok {
		return false
	}
	if !present {
		*has = false
		return true
	}
	return r.countToken(name, dst, has)
}

// countToken converts the number token in r.num by count's rule.
func (r *RowDecoder) countToken(name string, dst *int64, has *bool) bool {
	v, st := gymjson.ParseInt(r.num)
	switch {
	case st == gymjson.IntNotNumber:
		r.failf(ReasonInvalidJSON, "key %q: %q is not a number", name, r.num)
	case st == gymjson.IntNotIntegral:
		r.failf(ReasonWrongType, "key %q: want an integer, got %s", name, r.num)
	case st != gymjson.IntOK:
		r.failf(ReasonOutOfRange, "key %q: want an integer >= 0 within int64, got %s", name, r.num)
	case v < 0:
		r.failf(ReasonOutOfRange, "key %q: want an integer >= 0, got %d", name, v)
	default:
		*dst, *has = v, true
		return true
	}
	return false
}

// token reads a scalar token (number, true, false, null, NaN, Infinity) into r.num.
func (r *RowDecoder) token() bool {
	r.num = r.num[:0]
	for r.more() {
		c := r.buf[r.pos]
		if !isTokenByte(c) {
			if len(r.num) == 0 {
				r.failf(ReasonInvalidJSON, "want a value, got %q", c)
				return false
			}
			return true
		}
		if len(r.num) == maxNumberBytes {
			r.failf(ReasonInvalidJSON, "a value over %d bytes", maxNumberBytes)
			return false
		}
		r.num = append(r.num, c)
		r.pos++
	}
	return false
}

func isTokenByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.'
}

// verdict reads the required verdict: healthy, unhealthy or unobserved.
func (r *RowDecoder) verdict(row *Row) bool {
	var v []byte
	if !r.str("verdict", slotVerdict, &v) {
		return false
	}
	if v == nil {
		row.Verdict = nil // null is absent
		return true
	}
	for _, want := range verdicts {
		if bytes.Equal(v, want) {
			row.Verdict = want
			return true
		}
	}
	r.failf(ReasonInvalidValue, "key \"verdict\": %q is not one of %s", v, verdictNames)
	return false
}

// findings reads the findings array: each element a check id, or an object whose check (else
// check_id) is the check id; null elements and objects without either are left out. An
// earlier findings key of the row is forgotten (the last wins); a check id the row has
// already, or one past MaxFindings, is cut off scratch at once.
func (r *RowDecoder) findings(row *Row) bool {
	row.Findings = row.Findings[:0]
	r.scratch = r.scratch[:0] // it held only the findings forgotten
	switch c := r.buf[r.pos]; c {
	case '[':
		r.pos++
	case 'n':
		return r.null("findings", "an array")
	default:
		return r.wrongType("findings", "an array", c)
	}
	return r.elements("findings", func(c byte) bool {
		switch c {
		case '"':
			r.pos++
			start := len(r.scratch)
			v, ok := r.readString("findings[]", MaxValueBytes)
			if !ok {
				return false
			}
			if row.keeps(v) {
				row.Findings = append(row.Findings, v)
			} else {
				r.scratch = r.scratch[:start]
			}
		case '{':
			r.pos++
			r.check, r.checkID = nil, nil
			if !r.object(ctxFinding, row) {
				return false
			}
			v := r.check
			if v == nil {
				v = r.checkID
			}
			if v != nil && row.keeps(v) {
				start := len(r.scratch)
				r.scratch = append(r.scratch, v...)
				row.Findings = append(row.Findings, r.scratch[start:])
			}
		case 'n':
			return r.null("findings[]", "a string or an object")
		default:
			return r.wrongType("findings[]", "a string or an object", c)
		}
		return true
	})
}

// elements reads the elements of an array after its '[' (name says which, in messages): elem
// reads each one, given its first byte.
func (r *RowDecoder) elements(name string, elem func(c byte) bool) bool {
	c, ok := r.ws()
	if !ok {
		return false
	}
	if c == ']' {
		r.pos++
		return true
	}
	for {
		if !elem(c) {
			return false
		}
		if c = r.at(); c <= ' ' {
			if c, ok = r.ws(); !ok {
				return false
			}
		}
		switch c {
		case ',':
			r.pos++
			if c = r.at(); c <= ' ' {
				if c, ok = r.ws(); !ok {
					return false
				}
			}
		case ']':
			r.pos++
			return true
		default:
			r.failf(ReasonInvalidJSON, "want ',' or ']' in %s, got %q", name, c)
			return false
		}
	}
}

// readKey reads a member key after its opening quote into r.key (a key longer than the
// buffer matches no mapped key).
func (r *RowDecoder) readKey() bool {
	// Nearly every key is plain and wholly in the buffer: taken where it lies (fill copies it
	// out before reading over it).
	if n := gymjson.PlainString(r.buf[r.pos:r.end], maxKeyBytes); n >= 0 {
		r.keyLong, r.keyInBuf = false, true
		r.key = r.buf[r.pos : r.pos+n : r.pos+n]
		r.pos += n + 1
		return true
	}
	r.keyInBuf = false
	start := len(r.scratch)
	v, ok := r.readString("a key", maxKeyBytes+1)
	if !ok {
		return false
	}
	r.keyLong = len(v) > maxKeyBytes
	r.keyBuf = append(r.keyBuf[:0], v...)
	r.key = r.keyBuf
	r.scratch = r.scratch[:start] // keys are not kept
	return true
}

// readString reads a string after its opening quote: escapes decoded, the raw bytes checked to
// be UTF-8, at most limit bytes kept (cut at a rune boundary) in scratch, the rest skipped.
func (r *RowDecoder) readString(name string, limit int) ([]byte, bool) {
	start := len(r.scratch)
	r.text.Reset(limit)
	for r.more() {
		var n int
		var st gymjson.Status
		r.scratch, n, st = r.text.Read(r.scratch, r.buf[r.pos:r.end])
		r.pos += n
		switch st {
		case gymjson.More:
			continue
		case gymjson.Done:
			return r.scratch[start:], true
		}
		// The byte at fault is not read: a newline stays the line's.
		switch c := r.buf[r.pos]; st {
		case gymjson.BadControl:
			r.failf(ReasonInvalidJSON, "%s: a control character (%#x) inside a string", name, c)
		case gymjson.BadUTF8:
			r.failf(ReasonInvalidUTF8, "key %q: the value is not valid UTF-8", name)
		case gymjson.BadHex:
			r.failf(ReasonInvalidJSON, "a bad \\u escape inside a string")
		case gymjson.BadEscape:
			if c == '\n' {
				r.failf(ReasonInvalidJSON, "the line ends inside a string")
			} else {
				r.failf(ReasonInvalidJSON, "a bad escape \\%c inside a string", c)
			}
		}
		return nil, false
	}
	return nil, false
}
