package gymjson

import "unicode/utf8"

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

// AppendUnescaped appends the text of the string content s (validated by ScanString: the
// bytes between the quotes) with its escapes resolved. A \u escape of a lone surrogate gives
// U+FFFD; a valid pair gives its rune.
func AppendUnescaped(dst, s []byte) []byte {
	for len(s) > 0 {
		j := 0
		for j < len(s) && s[j] != '\\' {
			j++
		}
		dst = append(dst, s[:j]...)
		s = s[j:]
		if len(s) < 2 {
			// Cannot happen on validated input; keep whatever is left.
			return append(dst, s...)
		}
		if s[1] != 'u' {
			c, ok := Escape(s[1])
			if !ok {
				c = s[1] // cannot happen on validated input
			}
			dst = append(dst, c)
			s = s[2:]
			continue
		}
		r, ok := Hex4(s[2:])
		if !ok {
			return append(dst, s...)
		}
		s = s[6:]
		if IsHighSurrogate(r) && len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
			if lo, ok := Hex4(s[2:]); ok {
				if p, ok := Surrogates(r, lo); ok {
					s = s[6:]
					dst = utf8.AppendRune(dst, p)
					continue
				}
			}
		}
		dst = utf8.AppendRune(dst, Lone(r))
	}
	return dst
}
