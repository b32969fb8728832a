package rollouts

import (
	"math/rand/v2"
	"testing"
)

// closingQuoteNaive is closingQuote's meaning byte by byte: the first newline or unescaped
// quote at or after i (a quote is escaped by an odd run of backslashes, counted from from on,
// plus carry when the run reaches from).
func closingQuoteNaive(b []byte, i, from, carry int) int {
	for ; i < len(b); i++ {
		if b[i] == '\n' {
			return i
		}
		if b[i] == '"' && backslashesBefore(b, from, i, carry)%2 == 0 {
			return i
		}
		if b[i] == '"' {
			from, carry = i+1, 0
		}
	}
	return len(b)
}

// TestClosingQuote: on texts dense with quotes, backslash runs of every parity and newlines, at
// every start and carry, closingQuote finds what the byte-by-byte rule finds, several escaped
// quotes to a word included.
func TestClosingQuote(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`ab"\\\"` + "\n")
	for n := range 3000 {
		b := make([]byte, rng.IntN(90))
		for k := range b {
			b[k] = alphabet[rng.IntN(len(alphabet))]
			if rng.IntN(4) == 0 { // long quiet runs too
				b[k] = 'x'
			}
		}
		for _, carry := range []int{0, 1, 2} {
			want := closingQuoteNaive(b, 0, 0, carry)
			got, _, _ := closingQuote(b, 0, 0, carry)
			if got != want {
				t.Fatalf("case %d %q carry %d: got %d, want %d", n, b, carry, got, want)
			}
		}
	}
}
