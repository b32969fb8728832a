package gymjson

import (
	"bytes"
	"unicode/utf8"
)

// Escape returns the byte the one-character escape \c stands for ('"', '\\', '/', b, f, n,
// r, t); false for any other c (\u included: see Hex4 and Surrogates).
func Escape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// Hex4 returns the value of the four hex digits that start s (the digits of a \u escape).
func Hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		v := hexVal[c]
		if v == 0xff {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// IsHighSurrogate reports a \u value that pairs with a low surrogate following it.
func IsHighSurrogate(r rune) bool { return r >= 0xD800 && r < 0xDC00 }

// Surrogates returns the rune of the \u pair hi, lo, or false when lo is not a low
// surrogate (hi is then a lone surrogate: U+FFFD, and lo is read on its own).
func Surrogates(hi, lo rune) (rune, bool) {
	if lo >= 0xDC00 && lo < 0xE000 {
		return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00), true
	}
	return 0, false
}

// Lone returns the rune a \u value stands for on its own: itself, or U+FFFD for a surrogate.
func Lone(r rune) rune {
	if r >= 0xD800 && r < 0xE000 {
		return utf8.RuneError
	}
	return r
}

// escape is an escape being resolved a byte at a time: the one reading of \c, \uXXXX and
// surrogate pairs, which AppendUnescaped (a whole string) and StringReader (a string as its
// bytes arrive) share.
type escape struct {
	state  escState
	digits uint8 // hex digits of the \u value read
	v      rune  // the \u value being read
	hi     rune  // a high surrogate waiting for the \u value after it (escLow)
}

type escState uint8

const (
	escNone      escState = iota // not in an escape
	escStart                     // after the backslash
	escHex                       // in the digits of a \u
	escLow                       // in the digits of the \u after a high surrogate
	escHigh                      // after a high surrogate: a backslash may begin its pair
	escHighSlash                 // ... and after that backslash: a 'u' does
)

// read resolves the escape at the start of b (state is not escNone), appending its text to
// dst. It returns dst, the count of b's bytes read and More when the escape is over or b is
// used up (state tells which), or how b[n] breaks the escape (BadEscape, BadHex). A lone
// surrogate gives U+FFFD and the escape after it is read on its own (it may begin a pair).
func (e *escape) read(dst, b []byte) ([]byte, int, Status) {
	i := 0
	for ; i < len(b) && e.state != escNone; i++ {
		c := b[i]
		switch e.state {
		case escStart:
			if c == 'u' {
				e.state, e.digits, e.v = escHex, 0, 0
				continue
			}
			x, ok := Escape(c)
			if !ok {
				return dst, i, BadEscape
			}
			dst = append(dst, x)
			e.state = escNone
		case escHex, escLow:
			d := hexVal[c]
			if d == 0xff {
				return dst, i, BadHex
			}
			e.v = e.v<<4 | rune(d)
			if e.digits++; e.digits < 4 {
				continue
			}
			if e.state == escLow {
				if p, ok := Surrogates(e.hi, e.v); ok {
					dst = utf8.AppendRune(dst, p)
					e.state = escNone
					continue
				}
				dst = utf8.AppendRune(dst, utf8.RuneError)
			}
			if IsHighSurrogate(e.v) {
				e.state, e.hi = escHigh, e.v
				continue
			}
			dst = utf8.AppendRune(dst, Lone(e.v))
			e.state = escNone
		case escHigh:
			if c != '\\' {
				dst = utf8.AppendRune(dst, utf8.RuneError)
				e.state = escNone
				return dst, i, More // c is the string's, not the escape's
			}
			e.state = escHighSlash
		case escHighSlash:
			if c != 'u' {
				dst = utf8.AppendRune(dst, utf8.RuneError)
				e.state = escStart // c is read as the escape it begins
				i--
				continue
			}
			e.state, e.digits, e.v = escLow, 0, 0
		}
	}
	return dst, i, More
}

// end ends the string: a high surrogate still waiting for its pair is U+FFFD.
func (e *escape) end(dst []byte) []byte {
	if e.state == escHigh {
		dst = utf8.AppendRune(dst, utf8.RuneError)
	}
	e.state = escNone
	return dst
}

// AppendUnescaped appends the text of the string content s (validated by ScanString: the
// bytes between the quotes) with its escapes resolved. A \u escape of a lone surrogate gives
// U+FFFD; a valid pair gives its rune.
func AppendUnescaped(dst, s []byte) []byte {
	var e escape
	for len(s) > 0 {
		if e.state == escNone {
			j := bytes.IndexByte(s, '\\')
			if j < 0 {
				return append(dst, s...)
			}
			dst = append(dst, s[:j]...)
			s = s[j+1:]
			e.state = escStart
			continue
		}
		var n int
		var st Status
		if dst, n, st = e.read(dst, s); st != More {
			return append(dst, s[n:]...) // cannot happen on validated input
		}
		s = s[n:]
	}
	return e.end(dst)
}
