package console

import (
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
