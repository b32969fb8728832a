package protocol

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
	for i < len(b) && decIsWS(b[i]) {
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

// decScanString scans the string whose opening quote is b[i]. It returns the index just past
// the closing quote and whether the string holds escapes.
func decScanString(b []byte, i int) (int, bool, error) {
	i++
	esc := false
	for {
		// Eight bytes at a time while none is '"', '\\' or a control character.
		for i+8 <= len(b) {
			v := binary.LittleEndian.Uint64(b[i:])
			q := v ^ (decLSB * '"')
			s := v ^ (decLSB * '\\')
			m := ((v - decLSB*0x20) & ^v) | ((q - decLSB) & ^q) | ((s - decLSB) & ^s)
			m &= decMSB
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
		default:
			i++
		}
	}
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
