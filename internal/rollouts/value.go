package rollouts

import (
	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// Values: the mapped strings, numbers and literals, read from the buffer as they arrive.

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

// index reads _ng_task_index or _ng_rollout_index: an integer >= 0 (by count's rule) is given;
// any other value, of any type or size, is skipped and gives none. It never rejects the row:
// the indices pair a rollout with another run's (cmd/gymrun) and map to no instrument, so a
// row the receiver counts is counted whatever they hold.
func (r *RowDecoder) index(dst *int64, has *bool) bool {
	*has = false
	if !gymjson.StartsNumber(r.buf[r.pos]) {
		return r.skipValue()
	}
	r.num = r.num[:0]
	long := false
	for r.more() {
		c := r.buf[r.pos]
		if !isTokenByte(c) {
			if !long && gymjson.IsNumber(r.num) {
				if v, st := gymjson.ParseInt(r.num); st == gymjson.IntOK && v >= 0 {
					*dst, *has = v, true
				}
			}
			return true
		}
		if len(r.num) == maxNumberBytes {
			long = true // no integer within int64 is this long: scanned to its end, not kept
		} else {
			r.num = append(r.num, c)
		}
		r.pos++
	}
	return false
}
