package gymjson

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of objects and arrays ScanValue accepts, the outermost
// value counting as 1.
const MaxDepth = 64

// Kind is the kind of a JSON value.
type Kind uint8

const (
	None Kind = iota
	String
	Number
	Object
	Array
	True
	False
	Null
)

var kindNames = [...]string{
	None:   "nothing",
	String: "a string",
	Number: "a number",
	Object: "an object",
	Array:  "an array",
	True:   "a boolean",
	False:  "a boolean",
	Null:   "null",
}

// String names the kind in messages ("a string", "a boolean", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "nothing"
}

// KindOf is the kind of the value whose first byte is c (None when no value starts so); the
// value itself is checked when it is scanned.
func KindOf(c byte) Kind { return kindOf[c] }

var kindOf = func() (t [256]Kind) {
	t['"'], t['{'], t['['], t['t'], t['f'], t['n'] = String, Object, Array, True, False, Null
	for c := range 256 {
		if StartsNumber(byte(c)) {
			t[c] = Number
		}
	}
	return t
}()

// IsSpace reports JSON white space: space, tab, CR and LF.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// SkipSpace returns the index of the first byte at or after b[i] that is not white space.
func SkipSpace(b []byte, i int) int {
	// Most calls find no white space at all: one compare says so.
	for i < len(b) && b[i] <= ' ' && IsSpace(b[i]) {
		i++
	}
	return i
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hexVal maps a hex digit to its value, anything else to 0xff.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
		t[c-'a'+'A'] = byte(c - 'a' + 10)
	}
	return t
}()

// HexVal returns the value of hex digit c, or 0xff when c is not one.
func HexVal(c byte) byte { return hexVal[c] }

// StopBytes flags (with its high bit) each byte of the little-endian word v at which a string
// scan must stop and look: '"', '\\', a control character or a byte >= 0x80. Only the lowest
// flag is exact (a borrow may flag a byte above it).
func StopBytes(v uint64) uint64 {
	q := v ^ (lsb * '"')
	s := v ^ (lsb * '\\')
	return (((v - lsb*0x20) & ^v) | ((q - lsb) & ^q) | ((s - lsb) & ^s) | v) & msb
}

// WordMasks[n] keeps the first n bytes of a little-endian word.
var WordMasks = [9]uint64{0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff, 0xffffffffffff, 0xffffffffffffff, ^uint64(0)}

// PlainWords returns i moved over the bytes of b that need no look, eight at a time: the
// index of the first '"', '\\', control character or byte >= 0x80 at or after b[i], or, when
// none lies in the last whole word, an index within the last 7 bytes of b (whose bytes the
// caller looks at one by one). Small enough to be inlined into the loops below.
func PlainWords(b []byte, i int) int {
	for i+8 <= len(b) {
		if m := StopBytes(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3 // the lowest flagged byte is a true hit
		}
		i += 8
	}
	return i
}

// StringRun returns the length of the longest prefix of b that a string holds as it is: no
// '"', '\\' or control character, and only complete, valid UTF-8 sequences. The byte at the
// returned index (when it is < len(b)) is a quote, a backslash, a control character, the
// start of invalid UTF-8 or of a sequence b cuts short (utf8.FullRune tells which).
func StringRun(b []byte) int {
	i := 0
	for {
		if i = PlainWords(b, i); i >= len(b) {
			return i
		}
		switch c := b[i]; {
		case c == '"' || c == '\\' || c < 0x20:
			return i
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i
			}
			i += n
		default:
			i++
		}
	}
}

// ScanString scans the string whose opening quote is b[i]. It returns the index just past
// the closing quote and whether the string holds escapes. It validates the UTF-8 of the
// string too (ErrInvalidUTF8): bytes >= 0x80 can only be valid inside strings (anywhere else
// they are a syntax error), so an input that scans without error is valid UTF-8. (Its loop is
// StringRun's, written out: the keys of every object ScanValue validates come here, and a
// call per string showed in the events decoder's benchmarks.)
func ScanString(b []byte, i int) (end int, esc bool, err error) {
	i++
	for {
		if i = PlainWords(b, i); i >= len(b) {
			return i, esc, SyntaxError(b, i, "unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return i, esc, SyntaxError(b, i+1, "unterminated escape")
			}
			if b[i+1] == 'u' {
				for j := i + 2; j < i+6; j++ {
					if j >= len(b) || hexVal[b[j]] == 0xff {
						return j, esc, SyntaxError(b, j, `want 4 hex digits after \u`)
					}
				}
				i += 6
			} else if _, ok := Escape(b[i+1]); ok {
				i += 2
			} else {
				return i + 1, esc, SyntaxError(b, i+1, "invalid escape")
			}
		case c < 0x20:
			return i, esc, SyntaxError(b, i, "control character in string")
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, esc, ErrInvalidUTF8
			}
			i += n
		default:
			i++
		}
	}
}

// ScanPlainString scans the string whose opening quote is b[i] when it is plain (no escape,
// control character or byte >= 0x80) and under 24 bytes, as most values are, a word at a
// time. It returns the index just past the closing quote and the string as three zero-padded
// little-endian words, or end -1 for any other string (and near the end of b), which
// ScanString then reads.
func ScanPlainString(b []byte, i int) (end int, w0, w1, w2 uint64) {
	j := i + 1
	var w [3]uint64
	for k := range w {
		o := j + 8*k
		if o+8 > len(b) {
			break
		}
		w[k] = binary.LittleEndian.Uint64(b[o:])
		if m := StopBytes(w[k]); m != 0 {
			p := bits.TrailingZeros64(m) >> 3
			if b[o+p] != '"' {
				break
			}
			w[k] &= WordMasks[p&7]
			return o + p + 1, w[0], w[1], w[2]
		}
	}
	return -1, 0, 0, 0
}

// ScanLiteral checks that lit is at b[i] and returns the index just past it.
func ScanLiteral(b []byte, i int, lit string) (int, error) {
	for j := 0; j < len(lit); j++ {
		if i+j >= len(b) || b[i+j] != lit[j] {
			return i + j, SyntaxError(b, i+j, "want "+lit)
		}
	}
	return i + len(lit), nil
}

// ScanValue validates the value starting at b[i]; depth is the depth an object or array
// there would have (1 for the outermost value). It returns the index just past the value,
// its kind and, for a string, whether it holds escapes.
func ScanValue(b []byte, i, depth int) (end int, kind Kind, esc bool, err error) {
	if i >= len(b) {
		return i, None, false, SyntaxError(b, i, "want a value")
	}
	switch c := b[i]; c {
	case '"':
		e, esc, err := ScanString(b, i)
		return e, String, esc, err
	case '{':
		e, err := scanObject(b, i, depth)
		return e, Object, false, err
	case '[':
		e, err := scanArray(b, i, depth)
		return e, Array, false, err
	case 't':
		e, err := ScanLiteral(b, i, "true")
		return e, True, false, err
	case 'f':
		e, err := ScanLiteral(b, i, "false")
		return e, False, false, err
	case 'n':
		e, err := ScanLiteral(b, i, "null")
		return e, Null, false, err
	default:
		if StartsNumber(c) {
			e, err := ScanNumber(b, i)
			return e, Number, false, err
		}
		return i, None, false, SyntaxError(b, i, "want a value")
	}
}

// Skip passes over the value at b[i], validating it (depth as ScanValue's), and returns the
// index just past it.
func Skip(b []byte, i, depth int) (int, error) {
	e, _, _, err := ScanValue(b, i, depth)
	return e, err
}

// Open reads past the bracket of the object or array at b[i] (depth as ScanValue's) and the
// white space after it: empty when the bracket close follows (i is then just past it).
func Open(b []byte, i, depth int, close byte) (int, bool, error) {
	if depth > MaxDepth {
		return i, false, ErrTooDeep
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == close {
		return i + 1, true, nil
	}
	return i, false, nil
}

// Next reads what follows a member or element at b[i]: a ',' and the white space after it
// (more), or the bracket close (i just past it); anything else is a syntax error (want says
// what was wanted).
func Next(b []byte, i int, close byte, want string) (int, bool, error) {
	i = SkipSpace(b, i)
	if i < len(b) {
		if b[i] == ',' {
			return SkipSpace(b, i+1), true, nil
		}
		if b[i] == close {
			return i + 1, false, nil
		}
	}
	return i, false, SyntaxError(b, i, want)
}

// scanObject validates the object whose '{' is b[i].
func scanObject(b []byte, i, depth int) (int, error) {
	i, empty, err := Open(b, i, depth, '}')
	for more := !empty && err == nil; more; {
		if i >= len(b) || b[i] != '"' {
			return i, SyntaxError(b, i, "want a string key")
		}
		if i, _, err = ScanString(b, i); err != nil {
			return i, err
		}
		i = SkipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, SyntaxError(b, i, "want ':' after an object key")
		}
		i = SkipSpace(b, i+1)
		if i, _, _, err = ScanValue(b, i, depth+1); err != nil {
			return i, err
		}
		i, more, err = Next(b, i, '}', "want ',' or '}' after an object member")
	}
	return i, err
}

// scanArray validates the array whose '[' is b[i].
func scanArray(b []byte, i, depth int) (int, error) {
	i, empty, err := Open(b, i, depth, ']')
	for more := !empty && err == nil; more; {
		if i, _, _, err = ScanValue(b, i, depth+1); err != nil {
			return i, err
		}
		i, more, err = Next(b, i, ']', "want ',' or ']' after an array element")
	}
	return i, err
}
