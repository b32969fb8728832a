package console

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/big"
	"math/bits"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// Ids and times, in the forms the SDK writes them.

// bigID reads an id that Python writes as a decimal int (an exemplar's span_id and
// trace_id) into size bytes, big-endian.
func bigID(s []byte, size int) ([]byte, error) {
	if hi, lo, ok := decimal128(s); ok && (size == 16 || hi == 0) {
		// The common case, without math/big: up to 128 bits of plain digits.
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], hi)
		binary.BigEndian.PutUint64(b[8:], lo)
		return b[16-size:], nil
	}
	var z big.Int
	if _, ok := z.SetString(string(s), 10); !ok || z.Sign() < 0 || z.BitLen() > 8*size {
		return nil, fmt.Errorf("%s is not a %d-bit id", s, 8*size)
	}
	return z.FillBytes(make([]byte, size)), nil
}

// decimal128 reads s when it is only decimal digits (no sign, fraction or exponent) whose
// value fits in 128 bits: hi and lo are its two halves. ok is false otherwise.
func decimal128(s []byte) (hi, lo uint64, ok bool) {
	if len(s) == 0 {
		return 0, 0, false
	}
	for _, c := range s {
		d := uint64(c - '0')
		if d > 9 {
			return 0, 0, false
		}
		// (hi, lo) = (hi, lo)*10 + d, failing past 128 bits.
		h1, l1 := bits.Mul64(lo, 10)
		h2, h0 := bits.Mul64(hi, 10)
		if h2 != 0 {
			return 0, 0, false
		}
		var carry uint64
		hi, carry = bits.Add64(h0, h1, 0)
		if carry != 0 {
			return 0, 0, false
		}
		lo, carry = bits.Add64(l1, d, 0)
		if hi, carry = bits.Add64(hi, 0, carry); carry != 0 {
			return 0, 0, false
		}
	}
	return hi, lo, true
}

// hexID reads an id the SDK writes as "0x" and lower-case hex digits into out ("" and an
// all-zero id leave it empty).
func hexID(s []byte, out []byte) (bool, error) {
	if len(s) == 0 {
		return false, nil
	}
	h, ok := bytes.CutPrefix(s, []byte("0x"))
	if !ok || len(h) != 2*len(out) {
		return false, fmt.Errorf("%q is not 0x and %d hex digits", s, 2*len(out))
	}
	for i := range out {
		hi, lo := gymjson.HexVal(h[2*i]), gymjson.HexVal(h[2*i+1])
		if hi == 0xff || lo == 0xff {
			return false, fmt.Errorf("%q is not 0x and %d hex digits", s, 2*len(out))
		}
		out[i] = hi<<4 | lo
	}
	for _, c := range out {
		if c != 0 {
			return true, nil
		}
	}
	return false, nil
}

// putHexID reads the id field t (hexID) into out when it is there and not null, and calls set
// when it is an id.
func putHexID(t text, out []byte, field string, set func()) error {
	if !t.set {
		return nil
	}
	ok, err := hexID(t.b, out)
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if ok {
		set()
	}
	return nil
}

// putISOTime reads the SDK's util.ns_to_iso_str: "2026-12-01T19:23:32.123456Z" (microseconds,
// UTC), and sets it with set. null and "" are no time (0).
func putISOTime(s text, field string, set func(pcommon.Timestamp)) error {
	if len(s.b) == 0 {
		set(0)
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, string(s.b))
	if err != nil {
		return fmt.Errorf("%s: %q is not an ISO 8601 time", field, s.b)
	}
	set(pcommon.NewTimestampFromTime(t))
	return nil
}
