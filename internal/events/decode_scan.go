package events

// JSON scanning primitives of the line decoder (decode.go). They validate the syntax of
// RFC 8259 JSON, plus the three tokens Python's json module writes for non-finite floats
// (NaN, Infinity, -Infinity), and never allocate on success.
//
// Every identifier in the decoder's files starts with "dec" (or is a method of Decoder) so
// that the rest of the package, written alongside, cannot collide with it.

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// decMaxDepth is the deepest nesting of objects and arrays a line may have, the top-level
// object counting as 1.
const decMaxDepth = 64

// Kinds of a JSON value.
const (
	decNone uint8 = iota
	decString
	decNumber
	decObject
	decArray
	decTrue
	decFalse
	decNull
)

// decKindNames names the kinds in messages.
var decKindNames = [...]string{
	decNone:   "nothing",
	decString: "a string",
	decNumber: "a number",
	decObject: "an object",
	decArray:  "an array",
	decTrue:   "a boolean",
	decFalse:  "a boolean",
	decNull:   "null",
}

// decSlot is the span of one JSON value in the line. For a string it is the text between
// the quotes (esc tells whether it holds backslash escapes); for anything else the whole
// token, brackets included.
type decSlot struct {
	start, end int32
	gen        uint32 // Decoder.gen of the line that wrote it (top-level slots only)
	kind       uint8
	esc        bool
	num        decNum // a number converted while scanned, or 0
	mant       uint64 // its digits as an integer
}

// decNum describes a number of the plain form -?(0|[1-9][0-9]*)(\.[0-9]+)? with at most 18
// digits in all (nearly every number), converted while it is scanned (parseTop,
// Decoder.scanSlot): how many digits, how many of them follow the point, and the sign. They are
// packed so that a decSlot has 7 fields: with a receiver and one more argument, or with a
// bool result, it still fits the 9 integer registers Go passes arguments and results in (a
// struct that does not fit goes through memory, which showed in profiles). The zero decNum
// is for anything else: a number then is converted from its text.
type decNum uint16

func makeDecNum(digits, frac int, neg bool) decNum {
	n := decNum(digits) | decNum(frac)<<5
	if neg {
		n |= 1 << 10
	}
	return n
}

func (n decNum) digits() int { return int(n & 31) }
func (n decNum) frac() int   { return int(n >> 5 & 31) }
func (n decNum) neg() bool   { return n&(1<<10) != 0 }

// decSlotMaxDigits is the most digits a slot converts on the way: 10^18 < 2^63.
const decSlotMaxDigits = 18

// decScanPlainNumber scans the number token at b[i] when it has the plain form of decSlot
// (most numbers), converting it on the way. It returns the index just past the token, or -1
// for any other token (which decScanNumber then reads and reports on).
func decScanPlainNumber(b []byte, i int) (end int, mant uint64, num decNum) {
	j := i
	neg := b[j] == '-'
	if neg {
		j++
	}
	ds := j
	for ; j < len(b); j++ {
		c := b[j] - '0'
		if c > 9 {
			break
		}
		mant = mant*10 + uint64(c)
	}
	nInt := j - ds
	if nInt == 0 || (nInt > 1 && b[ds] == '0') {
		return -1, 0, 0
	}
	nFrac := 0
	if j < len(b) && b[j] == '.' {
		j++
		fs := j
		for ; j < len(b); j++ {
			c := b[j] - '0'
			if c > 9 {
				break
			}
			mant = mant*10 + uint64(c)
		}
		if nFrac = j - fs; nFrac == 0 {
			return -1, 0, 0
		}
	}
	if nInt+nFrac > decSlotMaxDigits || (j < len(b) && (b[j] == 'e' || b[j] == 'E')) {
		return -1, 0, 0
	}
	return j, mant, makeDecNum(nInt+nFrac, nFrac, neg)
}

func decMakeSlot(start, end int, kind uint8, esc bool) decSlot {
	if kind == decString {
		start++
		end--
	}
	return decSlot{start: int32(start), end: int32(end), kind: kind, esc: esc}
}

// decIsWS reports JSON whitespace.
func decIsWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func decSkipWS(b []byte, i int) int {
	// Most calls find no white space at all: one compare says so.
	for i < len(b) && b[i] <= ' ' && decIsWS(b[i]) {
		i++
	}
	return i
}

// decSyntaxError builds the error of a syntax error found at b[i] (i may be len(b)).
func decSyntaxError(b []byte, i int, want string) *DecodeError {
	got := "end of line"
	if i < len(b) {
		r, _ := utf8.DecodeRune(b[i:])
		got = fmt.Sprintf("%q", r)
	}
	return &DecodeError{reason: ReasonInvalidJSON, msg: fmt.Sprintf("invalid JSON at byte %d: %s, got %s", i, want, got)}
}

var decErrTooDeep = &DecodeError{reason: ReasonTooDeep, msg: fmt.Sprintf("nesting deeper than %d", decMaxDepth)}

const (
	decLSB = 0x0101010101010101
	decMSB = 0x8080808080808080
)

// decHexVal maps a hex digit to its value, anything else to 0xff.
var decHexVal = func() (t [256]byte) {
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

// decStopBytes flags (with its high bit) each byte of the little-endian word v at which a
// string scan must stop and look: '"', '\\', a control character or a byte >= 0x80. Only the
// lowest flag is exact (a borrow may flag a byte above it).
func decStopBytes(v uint64) uint64 {
	q := v ^ (decLSB * '"')
	s := v ^ (decLSB * '\\')
	return (((v - decLSB*0x20) & ^v) | ((q - decLSB) & ^q) | ((s - decLSB) & ^s) | v) & decMSB
}

// decErrInvalidUTF8 is what the scanners return for a byte sequence that is not UTF-8 inside a
// string. Decode never reports it as it is: on any error it checks the whole line with
// utf8.Valid and reports invalid_utf8 with the position of the first bad byte, as a line
// that is not UTF-8 has always been reported, whatever else is wrong with it.
var decErrInvalidUTF8 = &DecodeError{reason: ReasonInvalidUTF8, msg: "not valid UTF-8"}

// decScanString scans the string whose opening quote is b[i]. It returns the index just past
// the closing quote and whether the string holds escapes. It also validates the UTF-8 of the
// string: bytes >= 0x80 can only be valid inside strings (anywhere else they are a syntax
// error), so a line that scans without error is valid UTF-8 and needs no separate pass.
func decScanString(b []byte, i int) (int, bool, error) {
	i++
	esc := false
	for {
		// Eight bytes at a time while none is '"', '\\', a control character or >= 0x80.
		for i+8 <= len(b) {
			m := decStopBytes(binary.LittleEndian.Uint64(b[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3 // the lowest flagged byte is a true hit
			break
		}
		if i >= len(b) {
			return i, esc, decSyntaxError(b, i, "unterminated string")
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return i, esc, decSyntaxError(b, i+1, "unterminated escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(b) || decHexVal[b[j]] == 0xff {
						return j, esc, decSyntaxError(b, j, `want 4 hex digits after \u`)
					}
				}
				i += 6
			default:
				return i + 1, esc, decSyntaxError(b, i+1, "invalid escape")
			}
		case c < 0x20:
			return i, esc, decSyntaxError(b, i, "control character in string")
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, esc, decErrInvalidUTF8
			}
			i += n
		default:
			i++
		}
	}
}

// decPlainString scans the string whose opening quote is b[i] when it is plain (no escape,
// control character or byte >= 0x80) and under 24 bytes, as most values are, a word at a
// time. It returns the index just past the closing quote and the string as three zero-padded
// little-endian words (decNameTable's form), or end -1 for any other string (and near the end
// of the line), which decScanString then reads.
func decPlainString(b []byte, i int) (end int, w0, w1, w2 uint64) {
	j := i + 1
	if j+8 > len(b) {
		return -1, 0, 0, 0
	}
	w0 = binary.LittleEndian.Uint64(b[j:])
	if m := decStopBytes(w0); m != 0 {
		p := bits.TrailingZeros64(m) >> 3
		if b[j+p] != '"' {
			return -1, 0, 0, 0
		}
		return j + p + 1, w0 & decWordMasks[p&7], 0, 0
	}
	if j+16 > len(b) {
		return -1, 0, 0, 0
	}
	w1 = binary.LittleEndian.Uint64(b[j+8:])
	if m := decStopBytes(w1); m != 0 {
		p := bits.TrailingZeros64(m) >> 3
		if b[j+8+p] != '"' {
			return -1, 0, 0, 0
		}
		return j + 8 + p + 1, w0, w1 & decWordMasks[p&7], 0
	}
	if j+24 > len(b) {
		return -1, 0, 0, 0
	}
	w2 = binary.LittleEndian.Uint64(b[j+16:])
	if m := decStopBytes(w2); m != 0 {
		p := bits.TrailingZeros64(m) >> 3
		if b[j+16+p] != '"' {
			return -1, 0, 0, 0
		}
		return j + 16 + p + 1, w0, w1, w2 & decWordMasks[p&7]
	}
	return -1, 0, 0, 0
}

// decScanNumber scans the number token starting at b[i] (a '-', a digit, 'N' or 'I').
func decScanNumber(b []byte, i int) (int, error) {
	if b[i] == 'N' {
		return decScanLiteral(b, i, "NaN")
	}
	if b[i] == '-' {
		i++
		if i < len(b) && b[i] == 'I' {
			return decScanLiteral(b, i, "Infinity")
		}
	}
	if i < len(b) && b[i] == 'I' {
		return decScanLiteral(b, i, "Infinity")
	}
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return i, decSyntaxError(b, i, "want a digit")
	}
	if b[i] == '0' {
		i++
	} else {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, decSyntaxError(b, i, "want a digit after the decimal point")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, decSyntaxError(b, i, "want a digit in the exponent")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, nil
}

// decScanLiteral checks that lit is at b[i].
func decScanLiteral(b []byte, i int, lit string) (int, error) {
	for j := 0; j < len(lit); j++ {
		if i+j >= len(b) || b[i+j] != lit[j] {
			return i + j, decSyntaxError(b, i+j, "want "+lit)
		}
	}
	return i + len(lit), nil
}

// decScanValue validates the value starting at b[i]; depth is the depth an object or array
// there would have. It returns the index just past the value, its kind and, for a string,
// whether it holds escapes.
func decScanValue(b []byte, i, depth int) (int, uint8, bool, error) {
	if i >= len(b) {
		return i, decNone, false, decSyntaxError(b, i, "want a value")
	}
	switch c := b[i]; c {
	case '"':
		e, esc, err := decScanString(b, i)
		return e, decString, esc, err
	case '{':
		e, err := decScanObject(b, i, depth)
		return e, decObject, false, err
	case '[':
		e, err := decScanArray(b, i, depth)
		return e, decArray, false, err
	case 't':
		e, err := decScanLiteral(b, i, "true")
		return e, decTrue, false, err
	case 'f':
		e, err := decScanLiteral(b, i, "false")
		return e, decFalse, false, err
	case 'n':
		e, err := decScanLiteral(b, i, "null")
		return e, decNull, false, err
	default:
		if c == '-' || c == 'N' || c == 'I' || (c >= '0' && c <= '9') {
			e, err := decScanNumber(b, i)
			return e, decNumber, false, err
		}
		return i, decNone, false, decSyntaxError(b, i, "want a value")
	}
}

// decScanObject validates the object whose '{' is b[i].
func decScanObject(b []byte, i, depth int) (int, error) {
	if depth > decMaxDepth {
		return i, decErrTooDeep
	}
	i = decSkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, decSyntaxError(b, i, "want a string key")
		}
		var err error
		if i, _, err = decScanString(b, i); err != nil {
			return i, err
		}
		i = decSkipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, decSyntaxError(b, i, "want ':' after an object key")
		}
		i = decSkipWS(b, i+1)
		if i, _, _, err = decScanValue(b, i, depth+1); err != nil {
			return i, err
		}
		i = decSkipWS(b, i)
		if i < len(b) {
			if b[i] == ',' {
				i = decSkipWS(b, i+1)
				continue
			}
			if b[i] == '}' {
				return i + 1, nil
			}
		}
		return i, decSyntaxError(b, i, "want ',' or '}' after an object member")
	}
}

// decScanArray validates the array whose '[' is b[i].
func decScanArray(b []byte, i, depth int) (int, error) {
	if depth > decMaxDepth {
		return i, decErrTooDeep
	}
	i = decSkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, _, _, err = decScanValue(b, i, depth+1); err != nil {
			return i, err
		}
		i = decSkipWS(b, i)
		if i < len(b) {
			if b[i] == ',' {
				i = decSkipWS(b, i+1)
				continue
			}
			if b[i] == ']' {
				return i + 1, nil
			}
		}
		return i, decSyntaxError(b, i, "want ',' or ']' after an array element")
	}
}

// decAppendUnescaped appends the text of the validated string content s with its escapes
// resolved. A \u escape of a lone surrogate gives U+FFFD; a valid pair gives its rune.
func decAppendUnescaped(dst, s []byte) []byte {
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
		switch c := s[1]; c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := decHex4(s[2:])
			if !ok {
				return append(dst, s...)
			}
			s = s[6:]
			switch {
			case r >= 0xD800 && r < 0xDC00:
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					if lo, ok := decHex4(s[2:]); ok && lo >= 0xDC00 && lo < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
						s = s[6:]
						dst = utf8.AppendRune(dst, r)
						continue
					}
				}
				r = utf8.RuneError
			case r >= 0xDC00 && r < 0xE000:
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
		s = s[2:]
	}
	return dst
}

func decHex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		v := decHexVal[c]
		if v == 0xff {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}
