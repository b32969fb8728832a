package gymjson

import (
	"fmt"
	"unicode/utf8"
)

// Cause is what kind of fault an Error reports.
type Cause uint8

const (
	CauseSyntax      Cause = iota // not JSON (invalid_json)
	CauseTooDeep                  // nested deeper than MaxDepth (too_deep)
	CauseInvalidUTF8              // a string that is not UTF-8 (invalid_utf8)
)

// Error is a fault of the input the scanners found.
type Error struct {
	Cause  Cause
	Offset int // the byte of the fault (len of the input at its end); -1 when unknown
	msg    string
}

func (e *Error) Error() string { return e.msg }

// SyntaxError builds the error of a syntax error found at b[i] (i may be len(b)): want says
// what was wanted there.
func SyntaxError(b []byte, i int, want string) *Error {
	got := "end of line"
	if i < len(b) {
		r, _ := utf8.DecodeRune(b[i:])
		got = fmt.Sprintf("%q", r)
	}
	return &Error{Cause: CauseSyntax, Offset: i, msg: fmt.Sprintf("invalid JSON at byte %d: %s, got %s", i, want, got)}
}

// ErrTooDeep is the error of a value nested deeper than MaxDepth.
var ErrTooDeep = &Error{Cause: CauseTooDeep, Offset: -1, msg: fmt.Sprintf("nesting deeper than %d", MaxDepth)}

// ErrInvalidUTF8 is the error of a string whose bytes are not UTF-8. It carries no offset: a
// caller that reports one finds it with FirstInvalidUTF8.
var ErrInvalidUTF8 = &Error{Cause: CauseInvalidUTF8, Offset: -1, msg: "not valid UTF-8"}

// FirstInvalidUTF8 returns the index of the first byte of b that is not part of valid UTF-8,
// or len(b).
func FirstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// AppendValidUTF8 appends b with each byte that is not part of valid UTF-8 replaced by
// U+FFFD (utf8.DecodeRune's reading: a sequence cut short or a surrogate's encoding gives one
// per byte), as encoding/json reads such bytes in a string. Outside strings such a byte is
// a syntax error, and stays one.
func AppendValidUTF8(dst, b []byte) []byte {
	for len(b) > 0 {
		n := FirstInvalidUTF8(b)
		dst = append(dst, b[:n]...)
		if n == len(b) {
			break
		}
		dst = utf8.AppendRune(dst, utf8.RuneError)
		b = b[n+1:]
	}
	return dst
}
