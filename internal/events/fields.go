package events

import (
	"math"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// The accessors of top-level fields and of object members: each checks its value by its
// rule (name, string, boolean, number, duration, integer) and records the first error.

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
