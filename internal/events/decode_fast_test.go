package events

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// The decoder's fast paths (keys and short strings read a word at a time and looked up as
// words, numbers converted while scanned, the event type read on the way, UTF-8 validated
// while scanning) must give what the general paths give. These lines sit on their edges.
func TestDecodeFastPathEdges(t *testing.T) {
	tests := []struct {
		name, line, want, reason string
	}{
		{name: "empty key is no field", line: `{"event":"gc.pause","":1,"generation":1,"duration_ms":1}`, want: `Type=gc.pause DurationMS=1 Generation=1`},
		{name: "empty key is not event", line: `{"":"gc.pause"}`, reason: ReasonMissingField},
		{name: "empty key before a syntax error", line: `{"event":"rollout.completed","":000000`, reason: ReasonInvalidJSON},
		{name: "escaped key", line: `{"\u0065vent":"gc.pause","generation":1,"duration_ms":1}`, want: `Type=gc.pause DurationMS=1 Generation=1`},
		{name: "escaped event value", line: `{"event":"gc.pa\u0075se","generation":1,"duration_ms":1}`, want: `Type=gc.pause DurationMS=1 Generation=1`},
		{name: "last event wins, not plain", line: `{"event":"gc.pause","event":"gc.pauseé","generation":1,"duration_ms":1}`, want: ``},
		{name: "last event wins, escaped", line: `{"event":"gc.stats","event":"gc.pa\u0075se","generation":1,"duration_ms":1}`, want: `Type=gc.pause DurationMS=1 Generation=1`},
		{name: "last event wins, plain", line: `{"event":"gc.pa\u0075se","event":"driver.admission","duration_ms":2}`, want: `Type=driver.admission DurationMS=2`},
		{name: "last event not a string", line: `{"event":"gc.pause","event":1}`, reason: ReasonWrongType},
		{name: "last event null", line: `{"event":"gc.pause","event":null}`, reason: ReasonMissingField},
		{name: "long unknown event", line: `{"event":"gc.pause.and.then.some.more","x":1}`, want: ``},
		{name: "keys and values at the end of the line", line: `{"duration_ms":1,"event":"driver.admission"}`, want: `Type=driver.admission DurationMS=1`},
		{name: "short line", line: `{"event":"x"}`, want: ``},
		{name: "white space everywhere", line: " { \"event\" :\t\"gc.pause\" ,\r\n \"generation\" : 2 , \"duration_ms\" : 0.5 } ", want: `Type=gc.pause DurationMS=0.5 Generation=2`},
		{name: "key prefix of a name", line: `{"event":"driver.admission","duration_m":1,"duration_ms":3}`, want: `Type=driver.admission DurationMS=3`},
		{name: "key longer than a name", line: `{"event":"driver.admission","duration_msx":1,"duration_ms":3}`, want: `Type=driver.admission DurationMS=3`},
		{name: "key of 16 bytes", line: `{"event":"http.pool.queue","queue_constraint":"per_host","queue_outcome":"ok","server_name":"p","duration_ms":1}`, want: `Type=http.pool.queue DurationMS=1 ServerName="p" QueueConstraint="per_host" QueueOutcome="ok"`},
		{name: "key of 20 bytes", line: `{"event":"server.requests","in_flight":1,"unhandled_exceptions":2,"responses":{}}`, want: `Type=server.requests InFlight=1 UnhandledExceptions=2`},
		{name: "decimals", line: `{"event":"driver.admission","duration_ms":123456789012.345}`, want: `Type=driver.admission DurationMS=1.23456789012345e+11`},
		{name: "16 digits", line: `{"event":"driver.admission","duration_ms":1234567890123.456}`, want: `Type=driver.admission DurationMS=1.234567890123456e+12`},
		{name: "negative zero duration", line: `{"event":"driver.admission","duration_ms":-0.000}`, want: `Type=driver.admission`},
		{name: "negative duration", line: `{"event":"driver.admission","duration_ms":-0.5}`, reason: ReasonOutOfRange},
		{name: "exponent", line: `{"event":"driver.admission","duration_ms":1.5e3}`, want: `Type=driver.admission DurationMS=1500`},
		{name: "18-digit integer", line: `{"event":"driver.output_write","duration_ms":1,"bytes":123456789012345678}`, want: `Type=driver.output_write DurationMS=1 Bytes=123456789012345678`},
		{name: "19-digit integer", line: `{"event":"driver.output_write","duration_ms":1,"bytes":1234567890123456789}`, want: `Type=driver.output_write DurationMS=1 Bytes=1234567890123456789`},
		{name: "integral decimal", line: `{"event":"gc.pause","generation":2.0,"duration_ms":1}`, want: `Type=gc.pause DurationMS=1 Generation=2`},
		{name: "fraction is not an integer", line: `{"event":"gc.pause","generation":1.5,"duration_ms":1}`, reason: ReasonWrongType},
		{name: "negative count", line: `{"event":"event_loop.tasks","loop":"l","tasks":-3}`, reason: ReasonOutOfRange},
		{name: "leading zero", line: `{"event":"gc.pause","generation":01,"duration_ms":1}`, reason: ReasonInvalidJSON},
		{name: "nested numbers", line: `{"event":"gc.stats","collections":[1,2.0,3e0],"collected":[0,0,0],"uncollectable":[0,0,0],"count":[-0,1,2]}`, want: `Type=gc.stats GCCollections=[1 2 3] GCCount=[0 1 2]`},
		{name: "invalid UTF-8 in a value", line: "{\"event\":\"sandbox.active\",\"provider\":\"p\xff\",\"delta\":1}", reason: ReasonInvalidUTF8},
		{name: "invalid UTF-8 in a key", line: "{\"event\":\"sandbox.active\",\"pr\xc3\":\"p\",\"delta\":1}", reason: ReasonInvalidUTF8},
		{name: "invalid UTF-8 after a syntax error", line: "{\"event\":\"gc.pause\" \"x\":\"\xff\"}", reason: ReasonInvalidUTF8},
		{name: "invalid UTF-8 outside strings", line: "{\"event\":\"gc.pause\"}\xff", reason: ReasonInvalidUTF8},
		{name: "invalid UTF-8 after a wrong type", line: "{\"event\":1,\"x\":\"\xed\xa0\x80\"}", reason: ReasonInvalidUTF8},
		{name: "non-ASCII values", line: `{"event":"sandbox.active","provider":"dö","delta":1}`, want: `Type=sandbox.active Provider="dö" Delta=1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := decodeOne(t, tc.line)
			if tc.reason != "" {
				if Reason(err) != tc.reason {
					t.Fatalf("reason %q (%v), want %q", Reason(err), err, tc.reason)
				}
				if tc.reason == ReasonInvalidUTF8 && (ev.Type != EventUnknown || !strings.HasPrefix(err.Error(), "not valid UTF-8 (at byte ")) {
					t.Fatalf("type %v, error %v", ev.Type, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := eventString(ev); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// gymjson.ParseFloat's fast path gives what strconv.ParseFloat gives, bit for bit.
func TestParseFloatFastPathIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(s string) {
		want, _ := strconv.ParseFloat(s, 64)
		if got := gymjson.ParseFloat([]byte(s)); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s: got %v, want %v", s, got, want)
		}
	}
	for _, s := range []string{"0", "-0", "-0.0", "0.0", "1.5", "0.1", "0.3", "123456789012345", "12345678901234.5",
		"-1234567890123.45", "0.00000000000001", "9.99999999999999", "1234567890123456", "1.7976931348623157"} {
		check(s)
	}
	for range 200000 {
		digits := 1 + r.IntN(15)
		s := ""
		if r.IntN(2) == 0 {
			s = "-"
		}
		d := strconv.FormatUint(r.Uint64()%uint64(math.Pow10(digits)), 10)
		if r.IntN(3) > 0 && len(d) > 1 {
			p := 1 + r.IntN(len(d)-1)
			d = d[:p] + "." + d[p:]
		}
		check(s + d)
	}
}
