package events

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// This file is the line decoder of the event stream (docs/receiver.md). Decode makes one validating pass over the
// top-level object (the UTF-8 of strings included), recording the span of the last occurrence
// of every field name any event uses (unknown fields are validated and skipped), then resolves
// `event` and converts the fields of that event. The pass reads a word at a time where it can:
// keys and short plain strings are looked up as words, plain numbers are converted as they
// are scanned. Strings without escapes are sub-slices of the line, escaped ones are
// decoded into the Decoder's scratch buffer: in steady state a line allocates nothing.
//
// Decisions where the event format is silent:
//   - Whitespace is JSON's (space, tab, CR, LF); a line of only whitespace is blank.
//   - A top-level value that is valid JSON but not an object is wrong_type.
//   - `event` absent or null is missing_field; `event` not a string is wrong_type.
//   - A rejected non-integral integer (3.5, NaN) is wrong_type; an integral value outside
//     int64 (1e30, Infinity) and a negative count are out_of_range.
//   - A value outside an enumeration, an empty name, a bad status-code key, an empty or too
//     long resource attribute key are invalid_value; a wrong number of gc.stats elements is
//     wrong_type.
//   - Inside objects the decoder reads (attributes, counts, responses, cancelled entries),
//     a duplicate key is also last-wins: the entry keeps the place of the key's first
//     occurrence, with the value of its last; only that value is checked. Every key is
//     checked (a bad status-code key rejects the line even when repeated later).
//   - `cancelled` entries require `route` (any string: the aggregator normalises it),
//     `response_started` (boolean) and `count` (integer >= 0); unknown keys in an entry are
//     ignored; an entry that is not an object is wrong_type.
//   - `flagged_checks` elements must be strings (null is wrong_type); any string, even
//     empty, is passed on for the aggregator to normalise.
//   - Failure fields, `server_type` and `flagged_checks` strings may be empty (the
//     aggregator treats an empty value as absent).
//   - A resource attribute key must be non-empty (OpenTelemetry forbids empty keys).
//   - `in_flight`, `unhandled_exceptions`, `outbound_in_flight`, `tasks`, `bytes` and the
//     driver counts are counts (>= 0); only `delta` may be negative.
//   - rollout.reward's `reward` is required (absent or null: missing_field) and may be any
//     number, NaN and infinities included, as rollout.completed's optional one.
//   - A duration of -0 is accepted and given as 0.
//   - Nesting is counted with the top-level object as level 1: 64 levels pass, 65 are
//     too_deep (checked while validating, so a deep line cannot exhaust the stack).
//   - At most 32 distinct attribute keys (a repeated key counts once); the 33rd is
//     too_many_attributes.
//   - Enumerated values (Outcome, Verdict, QueueConstraint, QueueOutcome, ConnectOutcome)
//     are the schema's own bytes, whatever escapes the line used.
//   - After an error ev.Type still tells the line's event when `event` was read, so that a
//     caller knows a rejected resource line (before parsing, too_long and invalid_utf8,
//     it is EventUnknown).
//   - Syntax error positions are 0-based byte offsets into the line.

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

// DefaultMaxLineBytes is max_line_bytes when NewDecoder is given 0 or less.
const DefaultMaxLineBytes = 64 << 10

// Decoder decodes one line at a time into a reused Event. Not safe for concurrent use; one
// per stream.
type Decoder struct {
	max  int
	line []byte
	err  error // first error of the current line

	gen   uint32
	slots [numKeys]slot // last occurrence of each known top-level key

	scratch []byte // unescaped strings of the current line

	evType    EventType // the type named by `event`, when parseTop could read it on the way
	evTypeSet bool

	lastEv   *Event    // the Event of the previous call
	lastType EventType // the type whose fields that call wrote into it

	members []objectMember // entries of the object being read (dedupe by key)
	table   []int32        // open-addressing index into members (index+1), when large
	mask    int
	seed    maphash.Seed
}

// slot is the span of one JSON value in the line. For a string it is the text between
// the quotes (esc tells whether it holds backslash escapes); for anything else the whole
// token, brackets included.
//
// A slot has 7 fields: with a receiver and one more argument, or with a bool result, it
// still fits the 9 integer registers Go passes arguments and results in (a struct that does
// not fit goes through memory, which showed in profiles); hence the packed gymjson.Plain.
type slot struct {
	start, end int32
	gen        uint32 // Decoder.gen of the line that wrote it (top-level slots only)
	kind       gymjson.Kind
	esc        bool
	num        gymjson.Plain // a number converted while scanned, or 0
	mant       uint64        // its digits as an integer
}

func makeSlot(start, end int, kind gymjson.Kind, esc bool) slot {
	if kind == gymjson.String {
		start++
		end--
	}
	return slot{start: int32(start), end: int32(end), kind: kind, esc: esc}
}

// objectMember is one key of an object the decoder reads, with the value of its last occurrence.
type objectMember struct {
	key []byte
	val slot
}

// NewDecoder returns a decoder that rejects lines over maxLineBytes bytes (newline not
// counted); 0 or less means DefaultMaxLineBytes.
func NewDecoder(maxLineBytes int) *Decoder {
	if maxLineBytes <= 0 {
		maxLineBytes = DefaultMaxLineBytes
	}
	if maxLineBytes > math.MaxInt32-1 {
		maxLineBytes = math.MaxInt32 - 1 // spans are int32
	}
	return &Decoder{max: maxLineBytes, seed: maphash.MakeSeed()}
}

// Decode parses line (without its newline) into ev. It returns nil on success (ev.Type is
// EventUnknown for an unknown or empty `event`, which the caller counts as unknown),
// ErrBlank for a blank line, or a *DecodeError. Every []byte of ev is valid until the next
// call. After an error, ev.Type is the event type of the line when the decoder got to read
// its `event` (a rejected resource line has EventResource; a line too long or not UTF-8 has
// EventUnknown), and the other fields of ev hold nothing meaningful.
func (d *Decoder) Decode(line []byte, ev *Event) error {
	if ev == d.lastEv {
		clearType(ev, d.lastType) // the only fields this decoder wrote
	} else {
		resetEvent(ev)
		d.lastEv = ev
	}
	d.lastType = EventUnknown
	if len(line) > d.max {
		return &DecodeError{reason: ReasonTooLong, msg: fmt.Sprintf("line is %d bytes, over max_line_bytes %d", len(line), d.max)}
	}
	// UTF-8 is validated while scanning (gymjson.ScanString): a line that parses is valid UTF-8.
	i := gymjson.SkipSpace(line, 0)
	if i == len(line) {
		return ErrBlank
	}
	d.line = line
	d.err = nil
	d.evTypeSet = false
	d.scratch = d.scratch[:0]
	d.gen++
	if d.gen == 0 {
		d.slots = [numKeys]slot{}
		d.gen = 1
	}
	err := d.parseTop(i)
	if err != nil {
		err = scanError(err)
		if !utf8.Valid(line) {
			// A line that is not UTF-8 is invalid_utf8 whatever else is wrong with it, and
			// its event is not read (the scan may have stopped at another error first).
			err = invalidUTF8(line)
		} else if s, ok := d.get(fkEvent); ok && s.kind == gymjson.String {
			// Tell the caller what the line was meant to be when `event` came before the
			// error, so that a broken resource line is known as one.
			ev.Type = d.event(s)
		}
	} else {
		err = d.decodeFields(ev)
	}
	d.lastType = ev.Type
	d.line = nil
	return err
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

// resetEvent clears ev, keeping the backing arrays of its slices.
func resetEvent(ev *Event) {
	flagged, counts, responses, cancelled, attrs := ev.Flagged[:0], ev.Counts[:0], ev.Responses[:0], ev.Cancelled[:0], ev.Attrs[:0]
	limits, servers := ev.Limits[:0], ev.Servers[:0]
	*ev = Event{Flagged: flagged, Counts: counts, Responses: responses, Cancelled: cancelled, Attrs: attrs, Limits: limits, Servers: servers}
}

// clearType clears the fields of ev that the decoding of an event of type t writes
// (cheaper than clearing the whole Event; TestDecodeReuseLeaksNothing keeps it complete).
func clearType(ev *Event, t EventType) {
	ev.Type = EventUnknown
	switch t {
	case EventResource:
		ev.Attrs = ev.Attrs[:0]
	case EventRolloutCompleted:
		ev.Outcome, ev.DispatchName, ev.FailureClass, ev.FailureKind, ev.FailureType = nil, nil, nil, nil, nil
		ev.Reward, ev.HasReward, ev.Masked = 0, false, false
	case EventRolloutReward:
		ev.DispatchName, ev.Reward, ev.HasReward, ev.Masked = nil, 0, false, false
	case EventRolloutHealth:
		ev.Verdict, ev.Outcome, ev.Flagged = nil, nil, ev.Flagged[:0]
	case EventRolloutSize:
		ev.SizeFields, ev.InputItems, ev.OutputItems, ev.Turns, ev.ToolCalls = 0, 0, 0, 0, 0
	case EventSandboxActive:
		ev.Provider, ev.Delta = nil, 0
	case EventSandboxStartup, EventSandboxExec:
		ev.Provider, ev.DurationMS = nil, 0
	case EventSandboxCreateRetry:
		ev.Provider = nil
	case EventServerStartupStage:
		ev.Stage, ev.ServerName, ev.ServerType, ev.Worker, ev.DurationMS = nil, nil, nil, false, 0
	case EventHTTPPoolQueue:
		ev.QueueConstraint, ev.QueueOutcome, ev.ServerName, ev.DurationMS = nil, nil, nil, 0
	case EventHTTPPoolConnect:
		ev.ConnectOutcome, ev.ServerName, ev.DurationMS = nil, nil, 0
	case EventHTTPPoolConnects:
		ev.Counts = ev.Counts[:0]
	case EventEventLoopLag:
		ev.Loop, ev.DurationMS = nil, 0
	case EventEventLoopTasks:
		ev.Loop, ev.Tasks = nil, 0
	case EventGCPause:
		ev.Generation, ev.DurationMS = 0, 0
	case EventGCStats:
		ev.GCCollections, ev.GCCollected, ev.GCUncollectable, ev.GCCount = [3]int64{}, [3]int64{}, [3]int64{}, [3]int64{}
	case EventServerRequests:
		ev.InFlight, ev.UnhandledExceptions, ev.OutboundInFlight, ev.HasOutboundInFlight = 0, 0, 0, false
		ev.Responses, ev.Cancelled = ev.Responses[:0], ev.Cancelled[:0]
	case EventDriverCounts:
		ev.Offered, ev.Resident, ev.Active = 0, 0, 0
	case EventDriverAdmission, EventDriverMaterialize:
		ev.DurationMS = 0
	case EventDriverOutputWrite:
		ev.DurationMS, ev.Bytes = 0, 0
	case EventConcurrencyLimits:
		ev.Limits = ev.Limits[:0]
	case EventModelCall:
		ev.ServerName, ev.Dialect, ev.CallOutcome, ev.FinishReason = nil, nil, nil, nil
		ev.DurationMS, ev.HasDuration, ev.TTFTMS, ev.HasTTFT = 0, false, 0, false
		ev.Tokens, ev.HasTokens = [NumTokenTypes]int64{}, [NumTokenTypes]bool{}
	case EventMemorySample:
		ev.Servers, ev.Host, ev.HasHost = ev.Servers[:0], HostMemory{}, false
	case EventRolloutDuration:
		ev.DurationMS = 0
	case EventVerify:
		ev.DurationMS, ev.HasDuration, ev.Completed = 0, false, false
	case EventServersActive:
		ev.ServersActive = 0
	}
}

// parseTop validates the whole line, whose first non-blank byte is line[i], and records the
// last occurrence of each known top-level key.
func (d *Decoder) parseTop(i int) error {
	b := d.line
	if b[i] != '{' {
		e, kind, _, err := gymjson.ScanValue(b, i, 1)
		if err != nil {
			return err
		}
		if e = gymjson.SkipSpace(b, e); e != len(b) {
			return gymjson.SyntaxError(b, e, "want the end of the line after the value")
		}
		return &DecodeError{reason: ReasonWrongType, msg: "line is " + kind.String() + ", not a JSON object"}
	}
	i = gymjson.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return gymjson.SyntaxError(b, i, "want a string key")
			}
			var (
				id, ke int
				err    error
			)
			if i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:]) == eventKeyWord {
				id, ke = fkEvent, i+7 // `"event":`, the first member of nearly every line
			} else if id, ke, err = d.topKey(b, i); err != nil {
				return err
			}
			i = gymjson.SkipSpace(b, ke)
			if i >= len(b) || b[i] != ':' {
				return gymjson.SyntaxError(b, i, "want ':' after an object key")
			}
			i = gymjson.SkipSpace(b, i+1)
			// Strings and numbers, nearly every value, without gymjson.ScanValue's dispatch.
			var (
				ve        int
				kind      gymjson.Kind
				vesc      bool
				evType    EventType
				evTypeSet bool
				mant      uint64 // a number converted on the way (gymjson.Plain)
				num       gymjson.Plain
			)
			if i < len(b) && b[i] == '"' {
				kind = gymjson.String
				var w0, w1, w2 uint64
				if ve, w0, w1, w2 = gymjson.ScanPlainString(b, i); ve < 0 {
					ve, vesc, err = gymjson.ScanString(b, i)
				} else if id == fkEvent {
					// The event type, from the words just scanned.
					evType = EventType(max(0, eventTable.findWords(w0, w1, w2, ve-i-2)))
					evTypeSet = true
				}
			} else if i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '-') {
				kind = gymjson.Number
				if ve, mant, num = gymjson.ScanPlainNumber(b, i); ve < 0 {
					ve, err = gymjson.ScanNumber(b, i)
				}
			} else {
				ve, kind, vesc, err = gymjson.ScanValue(b, i, 2)
			}
			if err != nil {
				return err
			}
			if id >= 0 {
				if id == fkEvent {
					// The last `event` counts: its type, or that it is to be read from the slot.
					d.evType, d.evTypeSet = evType, evTypeSet
				}
				// Field by field: a whole slot built on the stack and then copied showed up in
				// profiles (a wide copy of narrowly written fields).
				sl := &d.slots[id]
				sl.start, sl.end = int32(i), int32(ve)
				if kind == gymjson.String {
					sl.start, sl.end = sl.start+1, sl.end-1 // the text between the quotes
				}
				sl.gen, sl.kind, sl.esc = d.gen, kind, vesc
				sl.num, sl.mant = num, mant
			}
			i = gymjson.SkipSpace(b, ve)
			if i < len(b) {
				if b[i] == ',' {
					i = gymjson.SkipSpace(b, i+1)
					continue
				}
				if b[i] == '}' {
					i++
					break
				}
			}
			return gymjson.SyntaxError(b, i, "want ',' or '}' after an object member")
		}
	}
	if i = gymjson.SkipSpace(b, i); i != len(b) {
		return gymjson.SyntaxError(b, i, "want the end of the line after the object")
	}
	return nil
}

// eventKeyWord is `"event":` as a little-endian word.
var eventKeyWord = binary.LittleEndian.Uint64([]byte(`"event":`))

// topKey scans the top-level key whose opening quote is b[i]. It returns the key's field
// (-1 for a name no event reads) and the index just past the closing quote.
func (d *Decoder) topKey(b []byte, i int) (id, end int, err error) {
	// Fast path: a plain key (no escape, control character or byte >= 0x80) of under 16
	// bytes, scanned a word at a time and looked up in the words scanned, zero-padded. The
	// answer is final, found or not (unknown keys such as "ts" are common).
	ks := i + 1
	if ks+8 <= len(b) {
		w0 := binary.LittleEndian.Uint64(b[ks:])
		if m := gymjson.StopBytes(w0); m != 0 {
			if p := bits.TrailingZeros64(m) >> 3; b[ks+p] == '"' {
				return keyTable.findWords(w0&gymjson.WordMasks[p&7], 0, 0, p), ks + p + 1, nil
			}
		} else if ks+16 <= len(b) {
			w1 := binary.LittleEndian.Uint64(b[ks+8:])
			if m := gymjson.StopBytes(w1); m != 0 {
				if p := bits.TrailingZeros64(m) >> 3; b[ks+8+p] == '"' {
					return keyTable.findWords(w0, w1&gymjson.WordMasks[p&7], 0, 8+p), ks + 8 + p + 1, nil
				}
			}
		}
	}
	// Anything else (escapes, non-ASCII, a long key, the end of the line near): the general
	// scanner.
	end, esc, err := gymjson.ScanString(b, i)
	if err != nil {
		return -1, end, err
	}
	if !esc {
		return keyTable.find(b[ks : end-1]), end, nil
	}
	n := len(d.scratch)
	d.scratch = gymjson.AppendUnescaped(d.scratch, b[ks:end-1])
	id = lookupKey(d.scratch[n:])
	d.scratch = d.scratch[:n]
	return id, end, nil
}

// decodeFields resolves `event` and converts the fields of that event.
func (d *Decoder) decodeFields(ev *Event) error {
	s, ok := d.get(fkEvent)
	if !ok {
		return &DecodeError{reason: ReasonMissingField, msg: `missing required field "event"`}
	}
	if s.kind != gymjson.String {
		d.wrongType(fkEvent, "a string", s)
		return d.err
	}
	ev.Type = d.event(s)
	switch ev.Type {
	case EventUnknown:
	case EventResource:
		d.decodeResource(ev)
	case EventRolloutCompleted:
		ev.Outcome = d.enum(fkOutcome, &completedOutcomes)
		ev.DispatchName = d.name(fkDispatchName)
		ev.FailureClass = d.optString(fkFailureClass)
		ev.FailureKind = d.optString(fkFailureKind)
		ev.FailureType = d.optString(fkFailureType)
		ev.Reward, ev.HasReward = d.optNumber(fkReward)
		ev.Masked = d.optBool(fkMasked)
	case EventRolloutReward:
		ev.Reward, ev.HasReward = d.number(fkReward)
		ev.DispatchName = d.name(fkDispatchName)
		ev.Masked = d.optBool(fkMasked)
	case EventRolloutHealth:
		ev.Verdict = d.enum(fkVerdict, &verdicts)
		ev.Outcome = d.enum(fkOutcome, &healthOutcomes)
		d.decodeFlagged(ev)
	case EventRolloutSize:
		var has bool
		if ev.InputItems, has = d.optCount(fkInputItems); has {
			ev.SizeFields |= HasInputItems
		}
		if ev.OutputItems, has = d.optCount(fkOutputItems); has {
			ev.SizeFields |= HasOutputItems
		}
		if ev.Turns, has = d.optCount(fkTurns); has {
			ev.SizeFields |= HasTurns
		}
		if ev.ToolCalls, has = d.optCount(fkToolCalls); has {
			ev.SizeFields |= HasToolCalls
		}
	case EventSandboxActive:
		ev.Provider = d.name(fkProvider)
		ev.Delta = d.integer(fkDelta, false)
	case EventSandboxStartup, EventSandboxExec:
		ev.Provider = d.name(fkProvider)
		ev.DurationMS = d.duration(fkDurationMS)
	case EventSandboxCreateRetry:
		ev.Provider = d.name(fkProvider)
	case EventServerStartupStage:
		ev.Stage = d.name(fkStage)
		ev.ServerName = d.name(fkServerName)
		ev.ServerType = d.optString(fkServerType)
		ev.Worker = d.optBool(fkWorker)
		ev.DurationMS = d.duration(fkDurationMS)
	case EventHTTPPoolQueue:
		ev.QueueConstraint = d.enum(fkQueueConstraint, &queueConstraints)
		ev.QueueOutcome = d.enum(fkQueueOutcome, &queueOutcomes)
		ev.ServerName = d.name(fkServerName)
		ev.DurationMS = d.duration(fkDurationMS)
	case EventHTTPPoolConnect:
		ev.ConnectOutcome = d.enum(fkOutcome, &connectOutcomes)
		ev.ServerName = d.name(fkServerName)
		ev.DurationMS = d.duration(fkDurationMS)
	case EventHTTPPoolConnects:
		d.decodeCounts(ev)
	case EventEventLoopLag:
		ev.Loop = d.name(fkLoop)
		ev.DurationMS = d.duration(fkLagMS)
	case EventEventLoopTasks:
		ev.Loop = d.name(fkLoop)
		ev.Tasks = d.integer(fkTasks, true)
	case EventGCPause:
		ev.Generation = d.generation(fkGeneration)
		ev.DurationMS = d.duration(fkDurationMS)
	case EventGCStats:
		d.gcTriple(fkCollections, &ev.GCCollections)
		d.gcTriple(fkCollected, &ev.GCCollected)
		d.gcTriple(fkUncollectable, &ev.GCUncollectable)
		d.gcTriple(fkCount, &ev.GCCount)
	case EventServerRequests:
		ev.InFlight = d.integer(fkInFlight, true)
		ev.UnhandledExceptions = d.integer(fkUnhandledExceptions, true)
		d.decodeResponses(ev)
		d.decodeCancelled(ev)
		ev.OutboundInFlight, ev.HasOutboundInFlight = d.optCount(fkOutboundInFlight)
	case EventDriverCounts:
		ev.Offered = d.integer(fkOffered, true)
		ev.Resident = d.integer(fkResident, true)
		ev.Active = d.integer(fkActive, true)
	case EventDriverAdmission, EventDriverMaterialize:
		ev.DurationMS = d.duration(fkDurationMS)
	case EventDriverOutputWrite:
		ev.DurationMS = d.duration(fkDurationMS)
		ev.Bytes = d.integer(fkBytes, true)
	case EventConcurrencyLimits:
		d.decodeLimits(ev)
	case EventModelCall:
		d.decodeModelCall(ev)
	case EventMemorySample:
		d.decodeMemorySample(ev)
	case EventRolloutDuration:
		ev.DurationMS = d.duration(fkDurationMS)
	case EventVerify:
		ev.DurationMS, ev.HasDuration = d.optDuration(fkDurationMS)
		ev.Completed = d.boolean(fkCompleted)
	case EventServersActive:
		ev.ServersActive = d.integer(fkCount, true)
	}
	return d.err
}

// ---- top-level fields ----

// Field keys: every top-level field name some event reads.
const (
	fkEvent = iota
	fkOutcome
	fkDispatchName
	fkFailureClass
	fkFailureKind
	fkFailureType
	fkReward
	fkMasked
	fkVerdict
	fkFlaggedChecks
	fkInputItems
	fkOutputItems
	fkTurns
	fkToolCalls
	fkProvider
	fkDelta
	fkDurationMS
	fkStage
	fkServerName
	fkServerType
	fkWorker
	fkQueueConstraint
	fkQueueOutcome
	fkCounts
	fkLoop
	fkLagMS
	fkTasks
	fkGeneration
	fkCollections
	fkCollected
	fkUncollectable
	fkCount
	fkInFlight
	fkUnhandledExceptions
	fkResponses
	fkCancelled
	fkOutboundInFlight
	fkOffered
	fkResident
	fkActive
	fkBytes
	fkAttributes
	fkLimits
	fkDialect
	fkTTFTMS
	fkTokens
	fkFinishReason
	fkServers
	fkHost
	fkCompleted
	numKeys
)

// keyNames are the wire names of the field keys.
var keyNames = [numKeys]string{
	fkEvent:               "event",
	fkOutcome:             "outcome",
	fkDispatchName:        "dispatch_name",
	fkFailureClass:        "failure_class",
	fkFailureKind:         "failure_kind",
	fkFailureType:         "failure_type",
	fkReward:              "reward",
	fkMasked:              "masked",
	fkVerdict:             "verdict",
	fkFlaggedChecks:       "flagged_checks",
	fkInputItems:          "input_items",
	fkOutputItems:         "output_items",
	fkTurns:               "turns",
	fkToolCalls:           "tool_calls",
	fkProvider:            "provider",
	fkDelta:               "delta",
	fkDurationMS:          "duration_ms",
	fkStage:               "stage",
	fkServerName:          "server_name",
	fkServerType:          "server_type",
	fkWorker:              "worker",
	fkQueueConstraint:     "queue_constraint",
	fkQueueOutcome:        "queue_outcome",
	fkCounts:              "counts",
	fkLoop:                "loop",
	fkLagMS:               "lag_ms",
	fkTasks:               "tasks",
	fkGeneration:          "generation",
	fkCollections:         "collections",
	fkCollected:           "collected",
	fkUncollectable:       "uncollectable",
	fkCount:               "count",
	fkInFlight:            "in_flight",
	fkUnhandledExceptions: "unhandled_exceptions",
	fkResponses:           "responses",
	fkCancelled:           "cancelled",
	fkOutboundInFlight:    "outbound_in_flight",
	fkOffered:             "offered",
	fkResident:            "resident",
	fkActive:              "active",
	fkBytes:               "bytes",
	fkAttributes:          "attributes",
	fkLimits:              "limits",
	fkDialect:             "dialect",
	fkTTFTMS:              "ttft_ms",
	fkTokens:              "tokens",
	fkFinishReason:        "finish_reason",
	fkServers:             "servers",
	fkHost:                "host",
	fkCompleted:           "completed",
}

// nameTable finds a name among a fixed set (field keys, event names) with one multiply and
// a compare of whole words, no byte loop: the name is read as three little-endian words,
// zero-padded (nameWords; parseTop gets them while scanning a key), the words are mixed
// and multiplied by a constant chosen at init so that no two names of the set share a slot,
// and the slot's entry is compared word for word.
type nameTable struct {
	mul     uint64
	lookup  [256]uint8 // index into entries; entries[0] is the empty name, found as -1
	entries [64]nameEntry
}

type nameEntry struct {
	w   [3]uint64
	n   int
	idx int
}

// maxNameBytes is the longest name a table can hold: three words.
const maxNameBytes = 24

// nameWords reads the name k (at most maxNameBytes bytes) as three zero-padded words.
func nameWords(k []byte) (w [3]uint64) {
	var buf [maxNameBytes]byte
	copy(buf[:], k)
	w[0] = binary.LittleEndian.Uint64(buf[0:])
	w[1] = binary.LittleEndian.Uint64(buf[8:])
	w[2] = binary.LittleEndian.Uint64(buf[16:])
	return w
}

func (t *nameTable) bucket(w0, w1, w2 uint64, n int) uint8 {
	x := w0 ^ bits.RotateLeft64(w1, 31) ^ bits.RotateLeft64(w2, 17) ^ uint64(n)
	return uint8((x * t.mul) >> 56)
}

func makeNameTable(names []string) *nameTable {
	t := &nameTable{}
	var entries []nameEntry
	for i, n := range names {
		if n == "" {
			continue
		}
		if len(n) > maxNameBytes {
			panic("protocol: name " + n + " is too long for a name table")
		}
		entries = append(entries, nameEntry{w: nameWords([]byte(n)), n: len(n), idx: i})
	}
	if len(entries) >= len(t.entries) {
		panic("protocol: too many names for a name table")
	}
	copy(t.entries[1:], entries)
	t.entries[0].idx = -1 // the empty name (n == 0, all words zero) matches entries[0]: not found
	// Multipliers from a fixed sequence (splitmix64), so that every run builds the same table.
	state := uint64(0)
	for range 1 << 16 {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		t.mul = (z ^ z>>31) | 1
		t.lookup = [256]uint8{}
		ok := true
		for i := 1; i <= len(entries) && ok; i++ {
			e := &t.entries[i]
			h := t.bucket(e.w[0], e.w[1], e.w[2], e.n)
			ok = t.lookup[h] == 0
			t.lookup[h] = uint8(i)
		}
		if ok {
			return t
		}
	}
	panic("protocol: no collision-free hash for the name table")
}

// findWords returns the index (in the table's names) of the name of n bytes whose
// zero-padded words are w0, w1, w2, or -1.
func (t *nameTable) findWords(w0, w1, w2 uint64, n int) int {
	e := &t.entries[t.lookup[t.bucket(w0, w1, w2, n)]%64]
	// One branch, on the whole compare (a miss is rare, but a chain of branches is slower).
	if (e.w[0]^w0)|(e.w[1]^w1)|(e.w[2]^w2)|uint64(e.n^n) == 0 {
		return e.idx
	}
	return -1
}

// find returns the index (in the table's names) of k, or -1 (also for "").
func (t *nameTable) find(k []byte) int {
	if len(k) == 0 || len(k) > maxNameBytes {
		return -1
	}
	w := nameWords(k)
	return t.findWords(w[0], w[1], w[2], len(k))
}

// findIn returns the index of the name b[start:start+n], or -1, reading its words from b
// without a copy when b has room for them.
func (t *nameTable) findIn(b []byte, start, n int) int {
	if n > 0 && n <= 8 && start+8 <= len(b) {
		return t.findWords(binary.LittleEndian.Uint64(b[start:])&gymjson.WordMasks[n], 0, 0, n)
	}
	if n > 8 && n <= 16 && start+16 <= len(b) {
		return t.findWords(binary.LittleEndian.Uint64(b[start:]), binary.LittleEndian.Uint64(b[start+8:])&gymjson.WordMasks[n-8], 0, n)
	}
	return t.find(b[start : start+n])
}

var (
	keyTable   = makeNameTable(keyNames[:])
	eventTable = makeNameTable(EventNames[:])
)

// lookupKey returns the field key of a top-level name, or -1.
func lookupKey(k []byte) int { return keyTable.find(k) }

// lookupEvent returns the event type named v, or EventUnknown.
func lookupEvent(v []byte) EventType {
	if i := eventTable.find(v); i > 0 {
		return EventType(i)
	}
	return EventUnknown
}

// event returns the event type named by string slot s (the slot of `event`), or
// EventUnknown.
func (d *Decoder) event(s *slot) EventType {
	if d.evTypeSet {
		return d.evType
	}
	if s.esc {
		return lookupEvent(d.str(s))
	}
	if i := eventTable.findIn(d.line, int(s.start), int(s.end-s.start)); i > 0 {
		return EventType(i)
	}
	return EventUnknown
}

// get returns the last occurrence of field k in the current line, unless absent or null. The
// slot is the decoder's own, read in place: parseTop has just written it field by field, and
// reading it back whole (a copy) would stall on those stores.
func (d *Decoder) get(k int) (*slot, bool) {
	s := &d.slots[k]
	if s.gen != d.gen || s.kind == gymjson.Null {
		return s, false
	}
	return s, true
}

// str returns the text of a string slot: a sub-slice of the line, or of the scratch buffer
// when it holds escapes. The capacity is cut so that appending to it copies.
func (d *Decoder) str(s *slot) []byte {
	if !s.esc {
		return d.line[s.start:s.end:s.end]
	}
	n := len(d.scratch)
	d.scratch = gymjson.AppendUnescaped(d.scratch, d.line[s.start:s.end])
	return d.scratch[n:len(d.scratch):len(d.scratch)]
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

// cutRunes cuts valid UTF-8 v to at most n bytes at a rune boundary.
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

// present reports whether slot s holds a value (not absent, not null).
func present(s *slot, ok bool) bool {
	return ok && s.kind != gymjson.None && s.kind != gymjson.Null
}

// name returns required non-empty string field k.
func (d *Decoder) name(k int) []byte {
	s, ok := d.get(k)
	return d.nameAt(topPlace(k), s, ok)
}

// nameAt is name for the value s at p (ok: present).
func (d *Decoder) nameAt(p place, s *slot, ok bool) []byte {
	if d.err != nil {
		return nil
	}
	if !present(s, ok) {
		d.missing(p.String())
		return nil
	}
	if s.kind != gymjson.String {
		d.wrongTypeAt(fieldLabel(p.String()), "a non-empty string", s)
		return nil
	}
	if s.start == s.end {
		d.fail(ReasonInvalidValue, "field %q: want a non-empty string, got \"\"", p.String())
		return nil
	}
	return d.str(s)
}

// optString returns optional string field k, nil when absent or null.
func (d *Decoder) optString(k int) []byte {
	s, ok := d.get(k)
	return d.optStringAt(topPlace(k), s, ok)
}

func (d *Decoder) optStringAt(p place, s *slot, ok bool) []byte {
	if d.err != nil || !present(s, ok) {
		return nil
	}
	if s.kind != gymjson.String {
		d.wrongTypeAt(fieldLabel(p.String()), "a string", s)
		return nil
	}
	return d.str(s)
}

// optBool returns optional boolean field k, false when absent or null.
func (d *Decoder) optBool(k int) bool {
	if d.err != nil {
		return false
	}
	s, ok := d.get(k)
	if !ok {
		return false
	}
	if s.kind != gymjson.True && s.kind != gymjson.False {
		d.wrongType(k, "a boolean", s)
		return false
	}
	return s.kind == gymjson.True
}

// boolean returns required boolean field k.
func (d *Decoder) boolean(k int) bool {
	if d.err != nil {
		return false
	}
	if _, ok := d.get(k); !ok {
		d.missing(keyNames[k])
		return false
	}
	return d.optBool(k)
}

// optNumber returns optional number field k, any number (NaN and infinities too).
func (d *Decoder) optNumber(k int) (float64, bool) {
	if d.err != nil {
		return 0, false
	}
	s, ok := d.get(k)
	if !ok {
		return 0, false
	}
	if s.kind != gymjson.Number {
		d.wrongType(k, "a number", s)
		return 0, false
	}
	return d.float(s), true
}

// number returns required number field k, any number (NaN and infinities too); the bool is
// false when it is missing or not a number.
func (d *Decoder) number(k int) (float64, bool) {
	if d.err != nil {
		return 0, false
	}
	if _, ok := d.get(k); !ok {
		d.missing(keyNames[k])
		return 0, false
	}
	return d.optNumber(k)
}

// duration returns required field k, a finite number >= 0.
func (d *Decoder) duration(k int) float64 {
	s, ok := d.get(k)
	if d.err == nil && !ok {
		d.missing(keyNames[k])
		return 0
	}
	f, _ := d.durationAt(topPlace(k), s, ok)
	return f
}

// optDuration returns optional field k, a finite number >= 0 when present.
func (d *Decoder) optDuration(k int) (float64, bool) {
	s, ok := d.get(k)
	return d.durationAt(topPlace(k), s, ok)
}

// durationAt reads the value s at p, when present, as a duration: a finite number >= 0
// (-0 is given as 0).
func (d *Decoder) durationAt(p place, s *slot, ok bool) (float64, bool) {
	if d.err != nil || !present(s, ok) {
		return 0, false
	}
	if s.kind != gymjson.Number {
		d.wrongTypeAt(fieldLabel(p.String()), "a finite number >= 0", s)
		return 0, false
	}
	f := d.float(s)
	if !(f >= 0 && f <= math.MaxFloat64) { // also NaN
		d.fail(ReasonOutOfRange, "field %q: want a finite number >= 0, got %s", p.String(), d.raw(s))
		return 0, false
	}
	return f + 0, true // -0 becomes 0
}

// integer returns required integer field k (>= 0 when nonneg).
func (d *Decoder) integer(k int, nonneg bool) int64 {
	s, ok := d.get(k)
	return d.integerAt(topPlace(k), s, ok, nonneg)
}

// integerAt is integer for the value s at p.
func (d *Decoder) integerAt(p place, s *slot, ok, nonneg bool) int64 {
	if d.err != nil {
		return 0
	}
	if !present(s, ok) {
		d.missing(p.String())
		return 0
	}
	v, _ := d.optIntegerAt(p, s, ok, nonneg)
	return v
}

// optCount returns optional integer field k, >= 0.
func (d *Decoder) optCount(k int) (int64, bool) {
	s, ok := d.get(k)
	return d.optIntegerAt(topPlace(k), s, ok, true)
}

// optIntegerAt reads the value s at p, when present, by the integer rule.
func (d *Decoder) optIntegerAt(p place, s *slot, ok, nonneg bool) (int64, bool) {
	if d.err != nil || !present(s, ok) {
		return 0, false
	}
	v, st := d.intOf(s, nonneg)
	if st != gymjson.IntOK {
		d.intFail(fieldLabel(p.String()), s, nonneg, st)
		return 0, false
	}
	return v, true
}

// float converts number slot s, as gymjson.ParseFloat does its text.
func (d *Decoder) float(s *slot) float64 {
	if f, ok := gymjson.PlainFloat(s.mant, s.num); ok {
		return f // converted on the way
	}
	return gymjson.ParseFloat(d.line[s.start:s.end])
}

// intOf converts s by the integer rule (>= 0 when nonneg).
func (d *Decoder) intOf(s *slot, nonneg bool) (int64, gymjson.IntStatus) {
	if s.kind != gymjson.Number {
		return 0, gymjson.IntNotNumber
	}
	v, ok := gymjson.PlainInt(s.mant, s.num) // converted on the way: within int64
	var st gymjson.IntStatus
	if !ok {
		v, st = gymjson.ParseInt(d.line[s.start:s.end])
	}
	if st == gymjson.IntOK && nonneg && v < 0 {
		return 0, gymjson.IntNegative
	}
	return v, st
}

// intFail records the error of a value s that intOf refused with st; where names the place
// (`field "x"`).
func (d *Decoder) intFail(where string, s *slot, nonneg bool, st gymjson.IntStatus) {
	want := "an integer"
	if nonneg {
		want = "an integer >= 0"
	}
	switch st {
	case gymjson.IntNotNumber:
		d.wrongTypeAt(where, want, s)
	case gymjson.IntNotIntegral:
		d.fail(ReasonWrongType, "%s: want %s, got %s", where, want, d.raw(s))
	case gymjson.IntOutOfRange:
		d.fail(ReasonOutOfRange, "%s: want %s within int64, got %s", where, want, d.raw(s))
	default:
		d.fail(ReasonOutOfRange, "%s: want %s, got %s", where, want, d.raw(s))
	}
}

// ---- enumerations ----

// enum is an enumerated set of string values, from the schema.
type enum struct {
	vals [][]byte
	list string // "a, b, c" for messages
}

func makeEnum(what string, vals []string) enum {
	if len(vals) == 0 {
		panic("protocol: the schema gives no values for " + what)
	}
	e := enum{list: strings.Join(vals, ", ")}
	for _, v := range vals {
		e.vals = append(e.vals, []byte(v))
	}
	return e
}

// The enumerations the decoder checks, built once from the schema.
var (
	completedOutcomes = makeEnum("outcome", schema.Get(schema.GymRolloutCompletedTotal).AttrValues(schema.AttrNemoGymRolloutOutcome))
	healthOutcomes    = makeEnum("health outcome", schema.Get(schema.GymRolloutHealthVerdictTotal).AttrValues(schema.AttrNemoGymRolloutOutcome))
	verdicts          = makeEnum("verdict", schema.Attr(schema.AttrNemoGymHealthVerdict).Values)
	queueConstraints  = makeEnum("queue_constraint", schema.Attr(schema.AttrNemoGymHttpConnectionPoolQueueConstraint).Values)
	queueOutcomes     = makeEnum("queue_outcome", schema.Attr(schema.AttrNemoGymHttpConnectionPoolQueueOutcome).Values)
	connectOutcomes   = makeEnum("connect outcome", schema.Get(schema.GymHttpConnectionPoolConnectDurationMs).AttrValues(schema.AttrNemoGymHttpConnectionPoolConnectOutcome))

	generations    = schema.Attr(schema.AttrNemoGymGcGeneration).IntValues
	generationList = func() string {
		s := make([]string, len(generations))
		for i, g := range generations {
			s[i] = strconv.FormatInt(g, 10)
		}
		return strings.Join(s, ", ")
	}()
	statusMin = schema.Attr(schema.AttrHttpResponseStatusCode).Min
	statusMax = schema.Attr(schema.AttrHttpResponseStatusCode).Max
)

// enum returns required string field k, one of e's values. The result is the schema's own
// copy of the value.
func (d *Decoder) enum(k int, e *enum) []byte {
	if d.err != nil {
		return nil
	}
	s, ok := d.get(k)
	if !ok {
		d.missing(keyNames[k])
		return nil
	}
	if s.kind != gymjson.String {
		d.wrongType(k, "one of "+e.list, s)
		return nil
	}
	v := d.line[s.start:s.end]
	if s.esc {
		v = d.str(s)
	}
	for _, a := range e.vals {
		if string(v) == string(a) {
			return a[:len(a):len(a)]
		}
	}
	d.fail(ReasonInvalidValue, "field %q: %s is not one of %s", keyNames[k], quote(v), e.list)
	return nil
}

// generation returns required field k, one of the schema's GC generations.
func (d *Decoder) generation(k int) int64 {
	if d.err != nil {
		return 0
	}
	s, ok := d.get(k)
	if !ok {
		d.missing(keyNames[k])
		return 0
	}
	v, st := d.intOf(s, false)
	if st != gymjson.IntOK {
		d.intFail(fieldLabel(keyNames[k]), s, false, st)
		return 0
	}
	for _, g := range generations {
		if v == g {
			return v
		}
	}
	d.fail(ReasonInvalidValue, "field %q: %d is not one of %s", keyNames[k], v, generationList)
	return 0
}
