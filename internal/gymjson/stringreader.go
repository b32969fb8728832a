package gymjson

import "unicode/utf8"

// Status is how StringReader.Read stopped.
type Status uint8

const (
	More       Status = iota // b is used up: the string goes on in the next bytes
	Done                     // the closing quote was read (the last byte read)
	BadControl               // b[n] is a control character, which a string cannot hold
	BadEscape                // b[n] follows a backslash and is no escape
	BadHex                   // b[n] is not the hex digit a \u escape wants
	BadUTF8                  // b[n] makes the string's bytes invalid UTF-8
)

// StringReader reads a string's content (after its opening quote) as its bytes arrive: the
// string may straddle any number of buffers. It checks what ScanString checks, resolves
// escapes as AppendUnescaped does and keeps at most Reset's max bytes of the text (cut at a
// rune boundary); the rest is read and checked, not kept. Reset it before each string.
type StringReader struct {
	max  int // bytes of the text kept
	kept int // bytes of the text appended so far (a few past max at the most)
	esc  escape
	utf  runeBytes
}

// Reset makes the StringReader read a new string, keeping at most max bytes of its text.
func (s *StringReader) Reset(max int) { *s = StringReader{max: max} }

// Read reads the string's bytes in b and appends its text to dst. It returns dst, how many of
// b's bytes it read, and More (all of b read), Done (the closing quote read: the string's text
// is the last bytes of dst, cut to max) or the fault of b[n] (not read).
func (s *StringReader) Read(dst, b []byte) ([]byte, int, Status) {
	// Past keep bytes nothing more is appended: max, and a rune the cut at max may split.
	keep := s.max + utf8.UTFMax + 1
	i := 0
	for i < len(b) {
		if s.esc.state != escNone {
			n0 := len(dst)
			var n int
			var st Status
			dst, n, st = s.esc.read(dst, b[i:])
			i += n
			if s.kept >= keep {
				dst = dst[:n0]
			} else {
				s.kept += len(dst) - n0
			}
			if st != More {
				return dst, i, st
			}
			continue
		}
		if s.utf.n == 0 {
			// A run of what the string holds as it is: taken at once.
			if n := StringRun(b[i:]); n > 0 {
				if room := keep - s.kept; room > 0 {
					dst = append(dst, b[i:i+min(n, room)]...)
					s.kept += min(n, room)
				}
				i += n
				continue
			}
		}
		switch c := b[i]; {
		case c == '"' && s.utf.n == 0:
			return s.cut(dst), i + 1, Done
		case c == '\\' && s.utf.n == 0:
			s.esc.state = escStart
			i++
			continue
		case c < 0x20:
			return dst, i, BadControl
		case !s.utf.next(c):
			return dst, i, BadUTF8
		}
		if s.kept < keep {
			dst = append(dst, b[i])
			s.kept++
		}
		i++
	}
	return dst, i, More
}

// cut cuts the text (the last kept bytes of dst) to max bytes, at a rune boundary.
func (s *StringReader) cut(dst []byte) []byte {
	start := len(dst) - s.kept
	v := dst[start:]
	if len(v) > s.max {
		v = v[:s.max]
		for len(v) > 0 && !utf8.Valid(v) {
			v = v[:len(v)-1] // a rune cut at max
		}
	}
	return dst[:start+len(v)]
}

// runeBytes checks UTF-8 a byte at a time by utf8's own rules (FullRune, DecodeRune: those
// StringRun and ScanString check with), for the bytes of a rune that straddles two buffers or
// is not valid: it holds the bytes of a valid rune begun.
type runeBytes struct {
	b [utf8.UTFMax]byte
	n uint8
}

// next adds c to the rune begun: false when it makes it invalid.
func (u *runeBytes) next(c byte) bool {
	u.b[u.n] = c
	q := u.b[:u.n+1]
	if !utf8.FullRune(q) {
		u.n++
		return true
	}
	u.n = 0
	r, size := utf8.DecodeRune(q)
	return r != utf8.RuneError || size != 1
}

// PlainString is the length of the string content at the start of b (after its opening
// quote) when it has no escape, is valid UTF-8, at most limit bytes long and closed in b
// (nearly every key and value a decoder reads), else -1: such a string is taken as it lies,
// without a StringReader. PlainWords (inlined) stops at the quote of an ASCII string whose
// quote lies in a whole word; StringRun looks at what it leaves.
func PlainString(b []byte, limit int) int {
	n := PlainWords(b, 0)
	if n >= len(b) || b[n] != '"' {
		n = StringRun(b)
	}
	if n < len(b) && b[n] == '"' && n <= limit {
		return n
	}
	return -1
}
