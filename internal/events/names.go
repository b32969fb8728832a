package events

import (
	"encoding/binary"
	"math/bits"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// The names the decoder knows: the top-level field keys and the event names, each found by a
// name table.

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
