package events

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

func TestDecodeEscapes(t *testing.T) {
	cases := []struct{ json, want string }{
		{`plain`, "plain"},
		{`a\"b`, `a"b`},
		{`a\\b`, `a\b`},
		{`a\/b`, `a/b`},
		{`\b\f\n\r\t`, "\b\f\n\r\t"},
		{`\u0041\u00e9\u4e2d`, "Aé中"},
		{`\uD83D\uDE00`, "😀"}, // surrogate pair, upper case hex
		{`\ud83d\ude00x`, "😀x"},
		{`\ud800`, "\uFFFD"},              // lone high surrogate
		{`\udc00`, "\uFFFD"},              // lone low surrogate
		{`\ud800x`, "\uFFFDx"},            // high then plain text
		{`\ud800\u0041`, "\uFFFDA"},       // high then a non-surrogate escape
		{`\ud800\ud800\udc00`, "\uFFFD𐀀"}, // high, then a valid pair
		{`\udc00\ud800`, "\uFFFD\uFFFD"},  // reversed pair
		{`\ud800\n`, "\uFFFD\n"},          // high then another escape
		{`\u0000`, "\x00"},                // NUL
		{`é中😀`, "é中😀"},                    // raw UTF-8
		{`\u00e9` + strings.Repeat("x", 20), "é" + strings.Repeat("x", 20)},
		{strings.Repeat(`\\`, 40), strings.Repeat(`\`, 40)},
	}
	for _, c := range cases {
		line := `{"event":"sandbox.create_retry","provider":"` + c.json + `"}`
		ev, err := decodeOne(t, line)
		if err != nil {
			t.Errorf("%s: %v", c.json, err)
			continue
		}
		if string(ev.Provider) != c.want {
			t.Errorf("%s: got %q, want %q", c.json, ev.Provider, c.want)
		}
		// encoding/json agrees (it decodes lone surrogates to U+FFFD too).
		var v struct{ Provider string }
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		if v.Provider != c.want {
			t.Errorf("%s: encoding/json gives %q, test wants %q", c.json, v.Provider, c.want)
		}
	}
}

func TestDecodeStringsDoNotAlias(t *testing.T) {
	// Escaped strings live in the scratch buffer: appending to one must not clobber another.
	d := NewDecoder(0)
	var ev Event
	line := `{"event":"server.startup_stage","stage":"s\u0031","server_name":"n\u0032","server_type":"t\u0033","duration_ms":1}`
	if err := d.Decode([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	_ = append(ev.Stage, "XXXXXXXX"...)
	if string(ev.Stage) != "s1" || string(ev.ServerName) != "n2" || string(ev.ServerType) != "t3" {
		t.Errorf("got %q %q %q", ev.Stage, ev.ServerName, ev.ServerType)
	}
	// The line is never written to.
	orig := []byte(line)
	in := bytes.Clone(orig)
	_ = d.Decode(in, &ev)
	if !bytes.Equal(in, orig) {
		t.Error("Decode modified its input")
	}
}

func TestDecodeNegativeZeroDuration(t *testing.T) {
	ev, err := decodeOne(t, `{"event":"driver.admission","duration_ms":-0.0}`)
	if err != nil {
		t.Fatal(err)
	}
	if ev.DurationMS != 0 || math.Signbit(ev.DurationMS) {
		t.Errorf("duration %v, signbit %v", ev.DurationMS, math.Signbit(ev.DurationMS))
	}
}

func TestParseInt(t *testing.T) {
	cases := []struct {
		tok  string
		want int64
		st   gymjson.IntStatus
	}{
		{"0", 0, gymjson.IntOK},
		{"-0", 0, gymjson.IntOK},
		{"3", 3, gymjson.IntOK},
		{"3.0", 3, gymjson.IntOK},
		{"3.000000000000000000000000000000", 3, gymjson.IntOK},
		{"3e0", 3, gymjson.IntOK},
		{"3E+2", 300, gymjson.IntOK},
		{"0.3e1", 3, gymjson.IntOK},
		{"30e-1", 3, gymjson.IntOK},
		{"3.5", 0, gymjson.IntNotIntegral},
		{"1e-1", 0, gymjson.IntNotIntegral},
		{"0.0000001", 0, gymjson.IntNotIntegral},
		{"123456789012345678", 123456789012345678, gymjson.IntOK},
		{"1234567890123456789", 1234567890123456789, gymjson.IntOK},
		{"9223372036854775807", math.MaxInt64, gymjson.IntOK},
		{"9223372036854775808", 0, gymjson.IntOutOfRange},
		{"-9223372036854775808", math.MinInt64, gymjson.IntOK},
		{"-9223372036854775809", 0, gymjson.IntOutOfRange},
		{"9.223372036854775807e18", math.MaxInt64, gymjson.IntOK},
		{"92233720368547758070e-1", math.MaxInt64, gymjson.IntOK},
		{"10000000000000000000", 0, gymjson.IntOutOfRange},
		{"1e18", 1e18, gymjson.IntOK},
		{"1e19", 0, gymjson.IntOutOfRange},
		{"1e30", 0, gymjson.IntOutOfRange},
		{"1e400", 0, gymjson.IntOutOfRange},
		{"1e99999999999999999999999", 0, gymjson.IntOutOfRange},
		{"1e-99999999999999999999999", 0, gymjson.IntNotIntegral},
		{"0e99999999999999999999999", 0, gymjson.IntOK},
		{"9007199254740993", 9007199254740993, gymjson.IntOK}, // not exact as a double
		{"NaN", 0, gymjson.IntNotIntegral},
		{"Infinity", 0, gymjson.IntOutOfRange},
		{"-Infinity", 0, gymjson.IntOutOfRange},
	}
	for _, c := range cases {
		v, st := gymjson.ParseInt([]byte(c.tok))
		if v != c.want || st != c.st {
			t.Errorf("%s: got %d %d, want %d %d", c.tok, v, st, c.want, c.st)
		}
	}
}

func TestParseFloat(t *testing.T) {
	cases := []struct {
		tok  string
		want float64
	}{
		{"0", 0}, {"12", 12}, {"-12", -12}, {"3.25", 3.25}, {"1e3", 1000}, {"1E-3", 0.001},
		{"123456789012345", 123456789012345}, {"1234567890123456789", 1234567890123456789},
		{"1e400", math.Inf(1)}, {"-1e400", math.Inf(-1)}, {"1e-400", 0},
		{"Infinity", math.Inf(1)}, {"-Infinity", math.Inf(-1)},
	}
	for _, c := range cases {
		if got := gymjson.ParseFloat([]byte(c.tok)); got != c.want {
			t.Errorf("%s: got %v, want %v", c.tok, got, c.want)
		}
	}
	if got := gymjson.ParseFloat([]byte("NaN")); !math.IsNaN(got) {
		t.Errorf("NaN: got %v", got)
	}
}
