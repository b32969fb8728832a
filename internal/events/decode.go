package events

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"unicode/utf8"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
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

// DefaultMaxLineBytes is max_line_bytes when NewDecoder is given 0 or less.
const DefaultMaxLineBytes = schema.DefaultMaxLineBytes

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

	resourceCuts int // resource values cut by the current line (its caller takes them)

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
	d.resourceCuts = 0
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
