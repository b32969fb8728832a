package gymjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestScanValue(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []struct {
		in    string
		kind  Kind
		cause Cause // checked when !ok
		ok    bool
	}{
		{`"a"`, String, 0, true},
		{`"\u00e9\ud83d\ude00\n"`, String, 0, true},
		{`"\x"`, String, CauseSyntax, false},
		{`"\u12g4"`, String, CauseSyntax, false},
		{"\"\x01\"", String, CauseSyntax, false},
		{"\"\xff\"", String, CauseInvalidUTF8, false},
		{"\"\xe2\x82\"", String, CauseInvalidUTF8, false},
		{`"abc`, String, CauseSyntax, false},
		{`0`, Number, 0, true},
		{`-0.5e-3`, Number, 0, true},
		{`01`, Number, 0, true}, // the token is 0: what follows is the caller's
		{`1.`, Number, CauseSyntax, false},
		{`1e`, Number, CauseSyntax, false},
		{`-`, Number, CauseSyntax, false},
		{`NaN`, Number, 0, true},
		{`Infinity`, Number, 0, true},
		{`-Infinity`, Number, 0, true},
		{`-NaN`, Number, CauseSyntax, false},
		{`nan`, Null, CauseSyntax, false},
		{`Inf`, Number, CauseSyntax, false},
		{`true`, True, 0, true},
		{`false`, False, 0, true},
		{`null`, Null, 0, true},
		{`nul`, Null, CauseSyntax, false},
		{`{"a":[1,{"b":null}],"c":"d"}`, Object, 0, true},
		{`{"a" 1}`, Object, CauseSyntax, false},
		{`{"a":1,}`, Object, CauseSyntax, false},
		{`[1,]`, Array, CauseSyntax, false},
		{deep(MaxDepth), Array, 0, true},
		{deep(MaxDepth + 1), Array, CauseTooDeep, false},
		{``, None, CauseSyntax, false},
	}
	for _, c := range cases {
		b := []byte(c.in)
		end, kind, _, err := ScanValue(b, 0, 1)
		if kind != c.kind {
			t.Errorf("%q: kind %v, want %v", c.in, kind, c.kind)
		}
		if c.ok {
			if err != nil || (end != len(b) && c.in != `01`) {
				t.Errorf("%q: end %d err %v", c.in, end, err)
			}
			continue
		}
		var je *Error
		if !errors.As(err, &je) || je.Cause != c.cause {
			t.Errorf("%q: err %v, want cause %d", c.in, err, c.cause)
		}
	}
}

func TestIsNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1.5", "1e400", "1e-400", "NaN", "Infinity", "-Infinity", strings.Repeat("9", 128)} {
		if !IsNumber([]byte(s)) {
			t.Errorf("%q: not a number", s)
		}
	}
	for _, s := range []string{"", "01", "+1", ".5", "1.", "1e", "0x10", "nan", "inf", "-NaN", "1_000", "Infinityx", "1 "} {
		if IsNumber([]byte(s)) {
			t.Errorf("%q: a number", s)
		}
	}
}

func TestPythonToken(t *testing.T) {
	if f, ok := PythonToken([]byte("NaN")); !ok || !math.IsNaN(f) {
		t.Error("NaN")
	}
	if f, ok := PythonToken([]byte("Infinity")); !ok || f != math.Inf(1) {
		t.Error("Infinity")
	}
	if f, ok := PythonToken([]byte("-Infinity")); !ok || f != math.Inf(-1) {
		t.Error("-Infinity")
	}
	for _, s := range []string{"nan", "inf", "+Infinity", "-NaN", "Infinit"} { //nolint:misspell // a token cut short, on purpose
		if _, ok := PythonToken([]byte(s)); ok {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestParseIntEdges(t *testing.T) {
	cases := []struct {
		tok  string
		want int64
		st   IntStatus
	}{
		{"1e-400", 0, IntNotIntegral},
		{"0e999999999999", 0, IntOK},
		{strings.Repeat("9", 128), 0, IntOutOfRange},
		{"1" + strings.Repeat("0", 127) + "e-127", 1, IntOK},
		{"NaN", 0, IntNotIntegral},
		{"Infinity", 0, IntOutOfRange},
		{"-Infinity", 0, IntOutOfRange},
	}
	for _, c := range cases {
		if v, st := ParseInt([]byte(c.tok)); v != c.want || st != c.st {
			t.Errorf("%s: got %d %d, want %d %d", c.tok, v, st, c.want, c.st)
		}
	}
}

func TestPlain(t *testing.T) {
	for _, s := range []string{"0", "-12", "3.25", "123456789012345", "0.000001", "-0.0"} {
		b := []byte(s + ",")
		end, mant, n := ScanPlainNumber(b, 0)
		if end != len(s) {
			t.Fatalf("%s: end %d", s, end)
		}
		f, ok := PlainFloat(mant, n)
		want, _ := strconv.ParseFloat(s, 64)
		if !ok || f != want || math.Signbit(f) != math.Signbit(want) {
			t.Errorf("%s: %v %v, want %v", s, f, ok, want)
		}
	}
	for _, s := range []string{"01", "1e3", "1.", "1234567890123456789", "NaN"} {
		if end, _, _ := ScanPlainNumber([]byte(s), 0); end >= 0 {
			t.Errorf("%s: plain", s)
		}
	}
}

func TestStringRun(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{`abc"`, 3}, {`abcdefghijkl\n`, 12}, {"é\xe2\x82", 2}, {"ab\x1f", 2}, {"aé\xffc", 3}, {"plain", 5},
	}
	for _, c := range cases {
		if got := StringRun([]byte(c.in)); got != c.want {
			t.Errorf("%q: %d, want %d", c.in, got, c.want)
		}
	}
}

func TestScanZeroAllocs(t *testing.T) {
	line := []byte(`{"a":"b\u00e9","c":[1,2.5,-3e4,NaN,true,false,null],"d":{"e":"` + strings.Repeat("x", 100) + `"}}`)
	var dst []byte
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, _, err := ScanValue(line, 0, 1); err != nil {
			t.Fatal(err)
		}
		dst = AppendUnescaped(dst[:0], []byte(`b\u00e9\ud83d\ude00`))
		var sr StringReader
		sr.Reset(8)
		dst, _, _ = sr.Read(dst[:0], []byte(`b\u00e9\ud83d\ude00 and more"`))
		_ = ParseFloat([]byte("1.5e300"))
		_, _ = ParseInt([]byte("3.0e2"))
	})
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}

// FuzzScan checks the scanner against encoding/json: a valid JSON text scans (unless it nests
// deeper than MaxDepth), its strings unescape as encoding/json decodes them and its numbers
// convert as strconv does; a text the scanner accepts that encoding/json rejects holds one of
// Python's tokens.
func FuzzScan(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,2.5e3,"x\u00e9\ud83d\ude00"]`, `"\ud800\u0041"`, `NaN`, `-Infinity`, `{"a":[Infinity]}`, `01`, `1e400`, `" \u0000 "`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		i := SkipSpace(b, 0)
		end, kind, esc, err := ScanValue(b, i, 1)
		ok := err == nil && SkipSpace(b, end) == len(b)
		valid := json.Valid(b) && utf8.Valid(b) // encoding/json takes bad UTF-8 in strings
		if valid && !ok {
			if je := (*Error)(nil); !errors.As(err, &je) || je.Cause != CauseTooDeep {
				t.Fatalf("valid JSON %q: end %d err %v", b, end, err)
			}
			return
		}
		if ok && !valid && !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
			t.Fatalf("invalid JSON %q accepted", b)
		}
		if !ok || !valid {
			return
		}
		switch kind {
		case String:
			var want string
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			got := b[i+1 : end-1]
			if esc {
				got = AppendUnescaped(nil, got)
			}
			if string(got) != want {
				t.Fatalf("%q: unescaped %q, want %q", b, got, want)
			}
		case Number:
			tok := b[i:end]
			want, err := strconv.ParseFloat(string(tok), 64)
			if err != nil && !strings.Contains(err.Error(), "range") {
				t.Fatal(err)
			}
			if got := ParseFloat(tok); got != want {
				t.Fatalf("%s: %v, want %v", tok, got, want)
			}
			if v, st := ParseInt(tok); st == IntOK {
				if w, err := strconv.ParseInt(string(tok), 10, 64); err == nil && w != v {
					t.Fatalf("%s: int %d, want %d", tok, v, w)
				}
			} else if w, err := strconv.ParseInt(string(tok), 10, 64); err == nil {
				t.Fatalf("%s: int status %d, strconv gives %d", tok, st, w)
			}
		}
	})
}

func TestSkipAndMessages(t *testing.T) {
	b := []byte(`{"a":[1,{"b":"c"}]} ,`)
	if e, err := Skip(b, 0, 1); err != nil || e != 19 {
		t.Fatalf("Skip: %d %v", e, err)
	}
	if e, err := Skip([]byte(`[1,2`), 0, MaxDepth); err == nil || err.Error() != `invalid JSON at byte 4: want ',' or ']' after an array element, got end of line` {
		t.Fatalf("Skip: %d %v", e, err)
	}
	if _, err := Skip([]byte(`[[1]]`), 0, MaxDepth); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("depth: %v", err)
	}
	if err := SyntaxError([]byte(`{x`), 1, "want a string key"); err.Error() != `invalid JSON at byte 1: want a string key, got 'x'` || err.Offset != 1 || err.Cause != CauseSyntax {
		t.Fatalf("message: %v", err)
	}
	if n := FirstInvalidUTF8([]byte("aé\xffb")); n != 3 {
		t.Fatalf("FirstInvalidUTF8: %d", n)
	}
}

// AppendValidUTF8 replaces bad bytes one for one, as encoding/json reads a string.
func TestAppendValidUTF8(t *testing.T) {
	for _, s := range []string{"", "abc", "é€😀", "a\xffb", "\xe2\x82", "\xe2\x82z", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "x\xff\xfey", "😀\xf0\x9f\x98"} {
		var want string
		if err := json.Unmarshal([]byte(`"`+s+`"`), &want); err != nil {
			t.Fatal(err)
		}
		if got := AppendValidUTF8(nil, []byte(s)); string(got) != want {
			t.Errorf("%q: %q, want %q", s, got, want)
		}
	}
}
