package rollouts

import "bytes"

// Skipping: the values of keys the mapping does not read (responses, trajectories, captured
// model calls: nearly all of a row's bytes) are passed over without being decoded. A skipped
// value is checked only for its structure: its strings closed, its brackets balanced, no
// newline inside. Inside a string the scan jumps from quote to quote (bytes.IndexByte), so the
// long texts of a response cost little more than a bare newline scan.

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
func (r *Reader) skipValue() bool {
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
func (r *Reader) skipScalar() bool {
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
func (r *Reader) skipString() bool {
	carry := 0 // backslashes that ended the previous read, within the string
	for r.more() {
		b := r.buf[r.pos:r.end]
		q := bytes.IndexByte(b, '"')
		seg := b
		if q >= 0 {
			seg = b[:q]
		}
		if nl := bytes.IndexByte(seg, '\n'); nl >= 0 {
			r.pos += nl
			r.failf(ReasonInvalidJSON, "the line ends inside a string")
			return false
		}
		if q < 0 {
			carry = trailingBackslashes(seg, carry)
			r.pos = r.end
			continue
		}
		// The quote is escaped when an odd run of backslashes precedes it.
		n := trailingBackslashes(seg, carry)
		r.pos += q + 1
		if n%2 == 0 {
			return true
		}
		carry = 0
	}
	return false
}

// trailingBackslashes is the run of backslashes at the end of seg; carry continues a run
// that began before seg when seg is all backslashes.
func trailingBackslashes(seg []byte, carry int) int {
	n := 0
	for i := len(seg) - 1; i >= 0 && seg[i] == '\\'; i-- {
		n++
	}
	if n == len(seg) {
		n += carry
	}
	return n
}

// skipContainer passes over an object or array from its opening bracket.
func (r *Reader) skipContainer() bool {
	depth := 0
	for r.more() {
		b := r.buf[r.pos:r.end]
		i := 0
	scan:
		for ; i < len(b); i++ {
			switch class[b[i]] {
			case clsNone:
				continue
			case clsQuote:
				break scan
			case clsOpen:
				depth++
			case clsClose:
				depth--
				if depth == 0 {
					r.pos += i + 1
					return true
				}
			case clsNewline:
				r.pos += i
				r.failf(ReasonInvalidJSON, "the line ends inside a value")
				return false
			}
		}
		r.pos += i
		if i < len(b) { // a string
			r.pos++
			if !r.skipString() {
				return false
			}
		}
	}
	return false
}
