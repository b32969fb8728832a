package gymjson

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// readPieces reads the string content b through a StringReader keeping max bytes, fed in the
// pieces that cut splits b at (positions in increasing order). It returns the text, the
// status and the index in b where reading stopped.
func readPieces(b []byte, max int, cuts []int) ([]byte, Status, int) {
	var s StringReader
	s.Reset(max)
	dst := []byte("prefix:") // text already in the buffer stays as it is
	from := 0
	for k := 0; k <= len(cuts); k++ {
		to := len(b)
		if k < len(cuts) {
			to = cuts[k]
		}
		for from < to {
			var n int
			var st Status
			dst, n, st = s.Read(dst, b[from:to])
			from += n
			if st != More {
				return dst, st, from
			}
			if n == 0 {
				panic("More without progress")
			}
		}
	}
	return dst, More, from
}

// stringCases: the content of strings (after the opening quote), valid and not.
var stringCases = []string{
	`plain"`, `"`, `a\"b\\c\/d\b\f\n\r\t"`, `b\u00e9\ud83d\ude00 end"`, `é€😀 and more text than a word"`,
	`\ud800"`, `\ud800x"`, `\ud800\n"`, `\ud800\u0041"`, `\ud800\ud83d\ude00"`, `\udc00"`, `\uD83D\uDE00"`,
	"a\xe2\x82\xac\xf0\x9f\x98\x80\"", "bad \xff\"", "cut \xe2\x82\"", "cut \xe2\x82\n\"", "\xe0\x80\"", "\xed\xa0\x80\"",
	"ctl \x01\"", "nl \n\"", `bad \x"`, "bad \\\n\"", `hex \u12g4"`, `hex \u12"`, `\ud800\u12x4"`, `unterminated`,
	"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"", `\u00e9\u00e9\u00e9\u00e9"`,
}

// A string fed one byte at a time, or in two pieces cut anywhere, reads as when it is fed
// whole: the same text, the same status, stopped at the same byte.
func TestStringReaderSplitAtEveryByte(t *testing.T) {
	for _, c := range stringCases {
		b := []byte(c)
		for _, max := range []int{0, 1, 3, 5, 64} {
			want, wantSt, wantAt := readPieces(b, max, nil)
			var each []int
			for k := 1; k < len(b); k++ {
				each = append(each, k)
				got, st, at := readPieces(b, max, []int{k})
				if !bytes.Equal(got, want) || st != wantSt || at != wantAt {
					t.Errorf("%q max %d cut at %d: %q %d at %d, want %q %d at %d", c, max, k, got, st, at, want, wantSt, wantAt)
				}
			}
			if got, st, at := readPieces(b, max, each); !bytes.Equal(got, want) || st != wantSt || at != wantAt {
				t.Errorf("%q max %d a byte at a time: %q %d at %d, want %q %d at %d", c, max, got, st, at, want, wantSt, wantAt)
			}
		}
	}
}

// Fed whole, a string reads as the whole-buffer scanner reads it: valid where ScanString
// finds it valid, its text AppendUnescaped's, cut to max at a rune boundary.
func TestStringReaderAsScanString(t *testing.T) {
	for _, c := range stringCases {
		checkAsScanString(t, []byte(c))
	}
	got, st, at := readPieces([]byte("ok \x01\""), 64, nil)
	if st != BadControl || at != 3 || string(got) != "prefix:ok " {
		t.Errorf("control character: %q %d at %d", got, st, at)
	}
}

func checkAsScanString(t *testing.T, b []byte) {
	t.Helper()
	q := append([]byte{'"'}, b...)
	end, _, err := ScanString(q, 0)
	for _, max := range []int{0, 2, 7, 1 << 20} {
		got, st, at := readPieces(b, max, nil)
		switch {
		case st == More:
			if err == nil {
				t.Errorf("%q: unterminated, ScanString ends at %d", b, end)
			}
		case st != Done:
			if err == nil {
				t.Errorf("%q: status %d at %d, ScanString finds it valid", b, st, at)
			}
		case err != nil:
			t.Errorf("%q: read, ScanString: %v", b, err)
		case at != end-1:
			t.Errorf("%q: ends at %d, ScanString at %d", b, at, end-1)
		default:
			text := AppendUnescaped(nil, q[1:end-1])
			want := text
			if len(want) > max {
				want = want[:max]
				for len(want) > 0 && !utf8.Valid(want) {
					want = want[:len(want)-1]
				}
			}
			if string(got) != "prefix:"+string(want) {
				t.Errorf("%q max %d: %q, want %q", b, max, got, want)
			}
		}
	}
}

// FuzzStringReader: any content reads the same fed whole and a byte at a time, and as
// ScanString and AppendUnescaped read it whole.
func FuzzStringReader(f *testing.F) {
	for _, c := range stringCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAsScanString(t, b)
		want, wantSt, wantAt := readPieces(b, 5, nil)
		each := make([]int, 0, len(b))
		for k := 1; k < len(b); k++ {
			each = append(each, k)
		}
		if got, st, at := readPieces(b, 5, each); !bytes.Equal(got, want) || st != wantSt || at != wantAt {
			t.Errorf("%q a byte at a time: %q %d at %d, want %q %d at %d", b, got, st, at, want, wantSt, wantAt)
		}
	})
}

func TestPlainString(t *testing.T) {
	for _, c := range []struct {
		in    string
		limit int
		want  int
	}{
		{`abc"`, 64, 3}, {`abc"`, 2, -1}, {`a\"b"`, 64, -1}, {`abc`, 64, -1}, {"é€\"", 64, 5}, {"\xff\"", 64, -1}, {`abcdefghijklmnopq"x`, 64, 17},
	} {
		if got := PlainString([]byte(c.in), c.limit); got != c.want {
			t.Errorf("%q limit %d: %d, want %d", c.in, c.limit, got, c.want)
		}
	}
}
