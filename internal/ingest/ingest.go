// Package ingest is the vocabulary that the transports and the decoders behind them share:
// what became of a line (Outcome), the counts of a stream (Stats), and the rejection reasons
// that more than one decoder (or a transport) counts. It imports nothing of the engine, so
// that both sides can import it.
package ingest

// Outcome is what became of one line.
type Outcome uint8

const (
	Blank    Outcome = iota // only white space: counted nowhere
	Accepted                // applied
	Unknown                 // an unknown event (or a line that is no record): counted and dropped
	Rejected                // broke a rule: counted with its reason, changed nothing
)

// Stats counts what a stream did with its lines (or a source with its rows) since they were
// last cleared.
type Stats struct {
	Accepted   int64
	Unknown    int64
	Rejected   map[string]int64 // by reason
	Overflowed int64            // measurements folded into an overflow series
	// ResourceValuesCut counts resource attribute values cut to their bound (the resource rule
	// of every input: docs/processor.md, "Resource attributes").
	ResourceValuesCut int64
}

// NewStats returns empty counts.
func NewStats() Stats { return Stats{Rejected: map[string]int64{}} }

// Clear zeroes the counts (keeping the map).
func (s *Stats) Clear() {
	s.Accepted, s.Unknown, s.Overflowed, s.ResourceValuesCut = 0, 0, 0, 0
	clear(s.Rejected)
}

// Rejection reasons that more than one decoder or transport counts: the values of the
// receivers' `reason` attributes (docs/receiver.md). A decoder's own reasons stay with it.
const (
	ReasonTooLong      = "too_long"      // over max_line_bytes
	ReasonInvalidUTF8  = "invalid_utf8"  // not valid UTF-8
	ReasonInvalidJSON  = "invalid_json"  // not JSON where it had to be read
	ReasonWrongType    = "wrong_type"    // a value of another type than the field's
	ReasonMissingField = "missing_field" // a required field absent
	ReasonOutOfRange   = "out_of_range"  // a number outside the field's range
	ReasonInvalidValue = "invalid_value" // a value outside the field's set
	// ReasonPartialLine counts a last line that a stream (or a file let go) ended before its
	// newline.
	ReasonPartialLine = "partial_line"
)
