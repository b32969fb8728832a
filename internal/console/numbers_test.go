package console

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// FuzzPlainInt: the number fast paths (plainInt, then ScanPlainNumber) give a number token
// what the general path gives it (ScanNumber's end, parseNumber's value), or leave it to it.
func FuzzPlainInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "-1", "01", "1796155895536429492", "9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "-9223372036854775809", "12345678901234567890",
		"1.5", "-0.0", "1e3", "1E-3", "-", "-x", "123,", "99999999999999999999", "0.1234567890123456789", "NaN", "-Infinity"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || !gymjson.StartsNumber(b[0]) {
			return
		}
		want, wantErr := gymjson.ScanNumber(b, 0)
		var d reader
		d.b = b
		var got number
		end, err := d.number(0, "n", &got)
		if (err != nil) != (wantErr != nil) || end != want {
			t.Fatalf("%q: end %d err %v, ScanNumber %d %v", b, end, err, want, wantErr)
		}
		if err != nil {
			return
		}
		if ref := parseNumber(b[:want]); got != ref && !(got.f != got.f && ref.f != ref.f) {
			t.Fatalf("%q: %+v, parseNumber %+v", b, got, ref)
		}
	})
}

// FuzzBigID: bigID's path without math/big gives what math/big gives.
func FuzzBigID(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "10824646874495861020", "18446744073709551615", "18446744073709551616",
		"156107148101356197805063798259847166785", "340282366920938463463374607431768211455",
		"340282366920938463463374607431768211456", "007", "1.5", "1e3", "-1", "+1", ""} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, s []byte, trace bool) {
		size := 8
		if trace {
			size = 16
		}
		got, err := bigID(s, size)
		var z big.Int
		if _, ok := z.SetString(string(s), 10); !ok || z.Sign() < 0 || z.BitLen() > 8*size {
			if err == nil {
				t.Fatalf("%q: %x, math/big refuses it", s, got)
			}
			return
		}
		if want := z.FillBytes(make([]byte, size)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q: %x %v, math/big %x", s, got, err, want)
		}
	})
}
