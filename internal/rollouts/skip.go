package rollouts

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Skipping: the values of keys the mapping does not read (responses, trajectories, captured
// model calls: nearly all of a row's bytes) are passed over without being decoded. A skipped
// value is checked only for its structure: its strings closed, its brackets balanced, no
// newline inside. The scans look at eight bytes at a time (SWAR), so the long texts of a
// response cost little more than a bare newline scan.

// byte classes of the structural scan of a skipped object or array.
const (
	clsNone byte = iota
	clsQuote
	clsOpen
	clsClose
	clsNewline
)

var class = func() (t [256]byte) {
	t['"'] = clsQuote
	t['{'], t['['] = clsOpen, clsOpen
	t['}'], t[']'] = clsClose, clsClose
	t['\n'] = clsNewline
	return t
}()

// skipValue passes over the value at buf[pos].
func (r *RowDecoder) skipValue() bool {
	switch r.buf[r.pos] {
	case '"':
		r.pos++
		return r.skipString()
	case '{', '[':
		return r.skipContainer()
	}
	return r.skipScalar()
}

// skipScalar passes over a number or literal, up to the byte that ends it.
func (r *RowDecoder) skipScalar() bool {
	n := 0
	for r.more() {
		c := r.buf[r.pos]
		if !isTokenByte(c) {
			if n == 0 {
				r.failf(ReasonInvalidJSON, "want a value, got %q", c)
				return false
			}
			return true
		}
		n++
		r.pos++
	}
	return false
}

// skipString passes over a string after its opening quote, to just after its closing quote.
func (r *RowDecoder) skipString() bool { return r.skip(true) }

// skipContainer passes over an object or array from its opening bracket.
func (r *RowDecoder) skipContainer() bool { return r.skip(false) }

// skip passes over a string (inString: after its opening quote) or a container (from its
// opening bracket) in one loop over the buffer, to just after its end. Inside a string the
// scan stops only at quotes (and a newline, which ends the line): a quote is escaped when an
// odd run of backslashes precedes it, so the backslashes of escapes cost nothing.
func (r *RowDecoder) skip(inString bool) bool {
	depth := 0
	carry := 0 // backslashes that ended the previous buffer, inside the string
	for r.more() {
		b := r.buf[r.pos:r.end]
		i := 0
		from := 0 // where the string's bytes in b begin
		for i < len(b) {
			if inString {
				i, from, carry = closingQuote(b, i, from, carry)
				if i == len(b) {
					carry = backslashesBefore(b, from, len(b), carry)
					break
				}
				if b[i] == '\n' {
					r.pos += i
					return r.lineEnded("a string")
				}
				i++
				inString, carry = false, 0
				if depth == 0 {
					r.pos += i
					return true
				}
				// In compact JSON a string is most often followed by ':' or ',' and the next
				// string: its scan begins at once.
				if i+1 < len(b) && (b[i] == ':' || b[i] == ',') && b[i+1] == '"' {
					i += 2
					inString, from = true, i
				}
				continue
			}
			i += scanStructure(b[i:])
			if i == len(b) {
				break
			}
			switch b[i] {
			case '"':
				inString, from, carry = true, i+1, 0
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					r.pos += i + 1
					return true
				}
			default: // '\n'
				r.pos += i
				return r.lineEnded("a value")
			}
			i++
		}
		r.pos = r.end
	}
	return false
}

// closingQuote finds, from b[i:], the quote that closes a string whose bytes in b begin at
// from (carry: the backslashes that ended the previous buffer, for a run that reaches from),
// or a newline: its index, len(b) when there is neither; and from and carry for what
// follows the last escaped quote passed over. Escaped quotes are passed over here, several
// to a word: JSON inside JSON (tool arguments, captured requests) escapes a quote every few
// bytes, and a stop of the caller's loop at each costs more than the scan. A run of 32 bytes
// without a quote goes on with bytes.IndexByte, whose vector loop runs through long texts.
func closingQuote(b []byte, i, from, carry int) (int, int, int) {
	quiet := 0 // bytes scanned since the last quote
	for i+8 <= len(b) {
		if quiet >= 32 {
			i += scanQuoteLong(b[i:])
			if i == len(b) || b[i] == '\n' {
				return i, from, carry
			}
			if backslashesBefore(b, from, i, carry)%2 == 0 {
				return i, from, carry
			}
			i++
			from, carry, quiet = i, 0, 0
			continue
		}
		w := binary.LittleEndian.Uint64(b[i:])
		m := has(w, '"') | has(w, '\n')
		if m == 0 {
			i += 8
			quiet += 8
			continue
		}
		// Every quote or newline of the word has its bit (and a borrow may set one above a
		// match): each candidate is checked, lowest first.
		next := i + 8
		for ; m != 0; m &= m - 1 {
			j := i + bits.TrailingZeros64(m)>>3
			switch b[j] {
			case '\n':
				return j, from, carry
			case '"':
				if j < from {
					continue // a quote already passed over
				}
				if backslashesBefore(b, from, j, carry)%2 == 0 {
					return j, from, carry
				}
				from, carry = j+1, 0
			}
		}
		i, quiet = next, 0
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case '\n':
			return i, from, carry
		case '"':
			if backslashesBefore(b, from, i, carry)%2 == 0 {
				return i, from, carry
			}
			from, carry = i+1, 0
		}
	}
	return i, from, carry
}

// backslashesBefore is the run of backslashes that ends at b[end-1], within b[from:end]; a
// run that reaches from continues the carry of the previous buffer.
func backslashesBefore(b []byte, from, end, carry int) int {
	n := 0
	for j := end - 1; j >= from && b[j] == '\\'; j-- {
		n++
	}
	if n == end-from {
		n += carry
	}
	return n
}

// lineEnded fails the row: its newline came inside a value (the newline is not consumed).
func (r *RowDecoder) lineEnded(inside string) bool {
	r.failf(ReasonInvalidJSON, "the line ends inside %s", inside)
	return false
}

// SWAR scans: eight bytes at a time, the index of the first byte of interest (len(b) when
// none). has(w, c) has the high bit set in each byte of w equal to c, and maybe in bytes above
// such a byte (a borrow), never below: the lowest bit set is always a true match.

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
	swar20 = 0x2020202020202020
)

func has(w uint64, c byte) uint64 {
	x := w ^ (swarLo * uint64(c))
	return (x - swarLo) &^ x & swarHi
}

// scanQuoteLong finds the first quote or newline of b (len(b) when none) with
// bytes.IndexByte, whose vector loop runs through the long texts of a response: closingQuote's
// scan once 32 bytes passed without a quote.
func scanQuoteLong(b []byte) int {
	end := len(b)
	if q := bytes.IndexByte(b, '"'); q >= 0 {
		end = q
	}
	if nl := bytes.IndexByte(b[:end], '\n'); nl >= 0 {
		return nl
	}
	return end
}

// scanStructure finds the first '"', bracket or newline: where a skipped container's scan
// stops. '[' and ']' are '{' and '}' with bit 5 clear, and no other byte ORs with 0x20 to
// either.
func scanStructure(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		v := w | swar20
		if m := has(w, '"') | has(w, '\n') | has(v, '{') | has(v, '}'); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if class[b[i]] != clsNone {
			return i
		}
	}
	return len(b)
}
