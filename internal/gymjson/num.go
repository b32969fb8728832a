package gymjson

import (
	"math"
	"strconv"
	"unsafe"
)

// Numbers: JSON's grammar, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, plus Python's
// three tokens for non-finite floats.

// PythonToken returns the value of the token Python's json.dumps writes for a non-finite
// float (allow_nan, its default): NaN, Infinity or -Infinity, exactly so spelled. It is the
// one definition of them: ScanNumber accepts them as numbers, ParseFloat and ParseInt read
// them by it.
func PythonToken(t []byte) (float64, bool) {
	switch string(t) {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}

// StartsNumber reports a byte a number token can start with: a digit, '-', or the first
// letter of a Python token ('N', 'I').
func StartsNumber(c byte) bool { return c == '-' || c == 'N' || c == 'I' || c-'0' <= 9 }

// ScanNumber scans the number token starting at b[i] (a byte StartsNumber accepts) and
// returns the index just past it.
func ScanNumber(b []byte, i int) (int, error) {
	if b[i] == 'N' {
		return ScanLiteral(b, i, "NaN")
	}
	if b[i] == '-' {
		i++
		if i < len(b) && b[i] == 'I' {
			return ScanLiteral(b, i, "Infinity")
		}
	}
	if i < len(b) && b[i] == 'I' {
		return ScanLiteral(b, i, "Infinity")
	}
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return i, SyntaxError(b, i, "want a digit")
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
			return i, SyntaxError(b, i, "want a digit after the decimal point")
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
			return i, SyntaxError(b, i, "want a digit in the exponent")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, nil
}

// IsNumber reports whether t is exactly one number token (Python's tokens included).
func IsNumber(t []byte) bool {
	if len(t) == 0 || !StartsNumber(t[0]) {
		return false
	}
	e, err := ScanNumber(t, 0)
	return err == nil && e == len(t)
}

// Plain describes a number of the plain form -?(0|[1-9][0-9]*)(\.[0-9]+)? with at most
// PlainMaxDigits digits in all (nearly every number), converted while it is scanned
// (ScanPlainNumber): how many digits, how many of them follow the point, and the sign,
// packed in 16 bits so that a caller's span of a value stays small. The zero Plain is for
// anything else: such a number is converted from its text.
type Plain uint16

// MakePlain packs a Plain.
func MakePlain(digits, frac int, neg bool) Plain {
	n := Plain(digits) | Plain(frac)<<5
	if neg {
		n |= 1 << 10
	}
	return n
}

func (n Plain) Digits() int { return int(n & 31) }
func (n Plain) Frac() int   { return int(n >> 5 & 31) }
func (n Plain) Neg() bool   { return n&(1<<10) != 0 }

// PlainMaxDigits is the most digits ScanPlainNumber converts on the way: 10^18 < 2^63.
const PlainMaxDigits = 18

// digits reads the decimal digits at b[j:] on into mant; it returns the index past them.
func digits(b []byte, j int, mant uint64) (int, uint64) {
	for ; j < len(b); j++ {
		c := b[j] - '0'
		if c > 9 {
			break
		}
		mant = mant*10 + uint64(c)
	}
	return j, mant
}

// ScanPlainNumber scans the number token at b[i] when it has the plain form of Plain (most
// numbers), converting it on the way: mant is its digits as an integer. It returns the index
// just past the token, or -1 for any other token (which ScanNumber then reads and reports
// on).
func ScanPlainNumber(b []byte, i int) (end int, mant uint64, num Plain) {
	j := i
	neg := b[j] == '-'
	if neg {
		j++
	}
	ds := j
	j, mant = digits(b, j, mant)
	nInt := j - ds
	if nInt == 0 || (nInt > 1 && b[ds] == '0') {
		return -1, 0, 0
	}
	nFrac := 0
	if j < len(b) && b[j] == '.' {
		j++
		fs := j
		j, mant = digits(b, j, mant)
		if nFrac = j - fs; nFrac == 0 {
			return -1, 0, 0
		}
	}
	if nInt+nFrac > PlainMaxDigits || (j < len(b) && (b[j] == 'e' || b[j] == 'E')) {
		return -1, 0, 0
	}
	return j, mant, MakePlain(nInt+nFrac, nFrac, neg)
}

// PlainFloat converts a number ScanPlainNumber scanned, when that is exact: at most 15
// digits, an integer exact in a double divided by a power of ten exact in a double, which is
// correctly rounded (ParseFloat's fast path). false when it is not (ParseFloat the text).
func PlainFloat(mant uint64, n Plain) (float64, bool) {
	d := n.Digits()
	if d == 0 || d > 15 {
		return 0, false
	}
	f := float64(mant)
	if fr := n.Frac(); fr > 0 {
		f /= pow10[fr&15]
	}
	if n.Neg() {
		f = -f
	}
	return f, true
}

// PlainInt converts a number ScanPlainNumber scanned when it is an integer (no fraction
// digits); false otherwise.
func PlainInt(mant uint64, n Plain) (int64, bool) {
	if n.Digits() == 0 || n.Frac() != 0 {
		return 0, false
	}
	v := int64(mant)
	if n.Neg() {
		v = -v
	}
	return v, true
}

// IntStatus classifies a number against the integer rule (ParseInt).
type IntStatus uint8

const (
	IntOK          IntStatus = iota
	IntNotNumber             // not a JSON number at all
	IntNotIntegral           // a number without an integral value (3.5, NaN)
	IntOutOfRange            // integral but outside int64 (1e30, Infinity)
	IntNegative              // a negative integer where a count is wanted
)

// ParseInt converts a number token (validated by ScanNumber) to int64 by the integer rule of
// docs/receiver.md: the token's exact decimal value must be an integer within int64 ("3.0"
// and "3e0" are 3, "1e-400" is not integral, a 128-digit integer is out of range).
func ParseInt(t []byte) (int64, IntStatus) {
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
			return v, IntOK
		}
	}
	if len(d) == 0 {
		return 0, IntNotIntegral
	}
	if f, ok := PythonToken(t); ok {
		if math.IsNaN(f) {
			return 0, IntNotIntegral
		}
		return 0, IntOutOfRange
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
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
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
		return 0, IntOK // zero, whatever its exponent
	}
	last := total - 1
	for digit(last) == '0' {
		last--
	}
	// value = sig * 10^e with sig = DF[first..last].
	e := exp - int64(nFrac) + int64(total-1-last)
	if e < 0 {
		return 0, IntNotIntegral
	}
	n := int64(last - first + 1)
	if n+e > 19 {
		return 0, IntOutOfRange
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
			return 0, IntOutOfRange
		}
		return int64(-u), IntOK // -(2^63) wraps to MinInt64, as intended
	}
	if u > math.MaxInt64 {
		return 0, IntOutOfRange
	}
	return int64(u), IntOK
}

// ParseFloat converts a number token (validated by ScanNumber) to float64: a number too large
// for a double is an infinity, one too small 0 or a subnormal, Python's tokens are what
// PythonToken says.
func ParseFloat(t []byte) float64 {
	// Fast path: [-]digits[.digits] with at most 15 digits, the durations of nearly every
	// line. The digits are an integer exact in a double, and a power of ten up to 1e15 is
	// exact too, so the one division is correctly rounded: the value strconv.ParseFloat
	// gives (it takes the same exact path for such tokens).
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
				f /= pow10[n-point]
			}
			if neg {
				f = -f
			}
			return f
		}
	}
	if len(t) == 0 {
		return math.NaN()
	}
	if f, ok := PythonToken(t); ok {
		return f
	}
	// strconv.ParseFloat accepts every JSON number; its only possible error here is ErrRange,
	// with the right value (+/-Inf on overflow, 0 or a subnormal on underflow) alongside.
	f, _ := strconv.ParseFloat(unsafe.String(&t[0], len(t)), 64)
	return f
}

// pow10 are the powers of ten that are exact in a double and that ParseFloat's fast path
// divides by.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16}
