package events

import (
	"math"
	"strconv"
	"unsafe"
)

// Number conversion of validated number tokens (decScanNumber has checked their syntax).

// decIntStatus classifies a value against the integer rule.
type decIntStatus uint8

const (
	decIntOK          decIntStatus = iota
	decIntNotNumber                // not a JSON number at all
	decIntNotIntegral              // a number without an integral value (3.5, NaN)
	decIntOutOfRange               // integral but outside int64 (1e30, Infinity)
	decIntNegative                 // a negative integer where a count is wanted
)

// decParseInt converts a number token to int64 by the integer rule of docs/receiver.md: the
// token's exact decimal value must be an integer within int64 ("3.0" and "3e0" are 3).
func decParseInt(t []byte) (int64, decIntStatus) {
	// Fast path: an optional minus and 1 to 18 digits.
	neg := len(t) > 0 && t[0] == '-'
	d := t
	if neg {
		d = t[1:]
	}
	if n := len(d); n > 0 && n <= 18 {
		var v int64
		i := 0
		for ; i < n; i++ {
			c := d[i]
			if c < '0' || c > '9' {
				break
			}
			v = v*10 + int64(c-'0')
		}
		if i == n {
			if neg {
				v = -v
			}
			return v, decIntOK
		}
	}
	if len(d) == 0 {
		return 0, decIntNotIntegral
	}
	switch d[0] {
	case 'N':
		return 0, decIntNotIntegral
	case 'I':
		return 0, decIntOutOfRange
	}
	// Exact path. The token is D.F e X: value = int(DF) * 10^(X - len(F)).
	intEnd := 0
	for intEnd < len(d) && d[intEnd] >= '0' && d[intEnd] <= '9' {
		intEnd++
	}
	fracStart, fracEnd := intEnd, intEnd
	if fracEnd < len(d) && d[fracEnd] == '.' {
		fracStart++
		fracEnd = fracStart
		for fracEnd < len(d) && d[fracEnd] >= '0' && d[fracEnd] <= '9' {
			fracEnd++
		}
	}
	exp := int64(0)
	if i := fracEnd; i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		eneg := false
		if d[i] == '+' || d[i] == '-' {
			eneg = d[i] == '-'
			i++
		}
		for ; i < len(d); i++ {
			if exp < 1<<40 { // saturate: far beyond any line length
				exp = exp*10 + int64(d[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	// The digit string DF, indexed across the decimal point.
	nInt, nFrac := intEnd, fracEnd-fracStart
	total := nInt + nFrac
	digit := func(k int) byte {
		if k < nInt {
			return d[k]
		}
		return d[fracStart+k-nInt]
	}
	first := 0
	for first < total && digit(first) == '0' {
		first++
	}
	if first == total {
		return 0, decIntOK // zero, whatever its exponent
	}
	last := total - 1
	for digit(last) == '0' {
		last--
	}
	// value = sig * 10^e with sig = DF[first..last].
	e := exp - int64(nFrac) + int64(total-1-last)
	if e < 0 {
		return 0, decIntNotIntegral
	}
	n := int64(last - first + 1)
	if n+e > 19 {
		return 0, decIntOutOfRange
	}
	var u uint64
	for k := first; k <= last; k++ {
		u = u*10 + uint64(digit(k)-'0')
	}
	for ; e > 0; e-- {
		u *= 10
	}
	// u < 10^19 < 2^64: no overflow above.
	if neg {
		if u > 1<<63 {
			return 0, decIntOutOfRange
		}
		return int64(-u), decIntOK // -(2^63) wraps to MinInt64, as intended
	}
	if u > math.MaxInt64 {
		return 0, decIntOutOfRange
	}
	return int64(u), decIntOK
}

// decParseFloat converts a number token to float64; a number too large for a double is an
// infinity, NaN and [-]Infinity are what they say.
func decParseFloat(t []byte) float64 {
	// Fast path: [-]digits[.digits] with at most 15 digits, the durations of nearly every
	// line. The digits are an integer exact in a double, and a power of ten up to 1e15 is
	// exact too, so the one division is correctly rounded: the value ParseFloat gives (it
	// takes the same exact path for such tokens).
	if n := len(t); n > 0 && n <= 17 {
		i := 0
		neg := t[0] == '-'
		if neg {
			i = 1
		}
		var m uint64
		digits, point := 0, -1 // point: the index just past the '.'
		for ; i < n; i++ {
			c := t[i]
			if c >= '0' && c <= '9' {
				m = m*10 + uint64(c-'0')
				digits++
				continue
			}
			if c != '.' || point >= 0 {
				break
			}
			point = i + 1
		}
		if i == n && digits > 0 && digits <= 15 {
			f := float64(m)
			if point >= 0 {
				f /= decPow10[n-point]
			}
			if neg {
				f = -f
			}
			return f
		}
	}
	switch {
	case len(t) == 0:
		return math.NaN()
	case t[0] == 'N':
		return math.NaN()
	case t[0] == 'I':
		return math.Inf(1)
	case len(t) > 1 && t[0] == '-' && t[1] == 'I':
		return math.Inf(-1)
	}
	// ParseFloat accepts every JSON number; its only possible error here is ErrRange, with
	// the right value (+/-Inf on overflow, 0 or a subnormal on underflow) alongside.
	f, _ := strconv.ParseFloat(unsafe.String(&t[0], len(t)), 64)
	return f
}

// decPow10 are the powers of ten that are exact in a double and that decParseFloat's fast
// path divides by.
var decPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16}
