package normalize

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// nilOut marks an expected nil output (the attribute is left out).
const nilOut = "\x00<nil>"

func checkOut(t *testing.T, name string, in, got []byte, want string) {
	t.Helper()
	if want == nilOut {
		if got != nil {
			t.Errorf("%s(%q) = %q, want nil", name, in, got)
		}
		return
	}
	if got == nil || string(got) != want {
		t.Errorf("%s(%q) = %q (nil=%v), want %q", name, in, got, got == nil, want)
	}
}

func TestFailureClass(t *testing.T) {
	tests := []struct{ in, want string }{
		{"agent_request_failed", "agent_request_failed"},
		{"a", "a"},
		{"a1_b2", "a1_b2"},
		{"timeout", "timeout"},
		{"", nilOut},
		{"Agent", "other"},
		{"1abc", "other"},
		{"_abc", "other"},
		{"abc-def", "other"},
		{"abc def", "other"},
		{"abc.def", "other"},
		{"ns:kind", "other"},
		{"abcé", "other"},
		{"abc\n", "other"},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{strings.Repeat("a", 65), "other"},
		{"other", "other"},
	}
	for _, tt := range tests {
		checkOut(t, "FailureClass", []byte(tt.in), FailureClass([]byte(tt.in)), tt.want)
	}
}

func TestFailureType(t *testing.T) {
	long := "a." + strings.Repeat("B", 126)
	tests := []struct{ in, want string }{
		{"TimeoutError", "TimeoutError"},
		{"asyncio.TimeoutError", "asyncio.TimeoutError"},
		{"httpx.exceptions.ReadTimeout", "httpx.exceptions.ReadTimeout"},
		{"_Private", "_Private"},
		{"a._b.__c__", "a._b.__c__"},
		{"Error2", "Error2"},
		{"x", "x"},
		{"", nilOut},
		{"2Error", "other"},
		{"a.2b", "other"},
		{"Error.", "other"},
		{".Error", "other"},
		{"a..b", "other"},
		{".", "other"},
		{"Err or", "other"},
		{"Error()", "other"},
		{"mod:Error", "other"},
		{"Érror", "other"},
		{"read timed out after 300s", "other"},
		{long, long}, // exactly 128 bytes
		{long + "C", "other"},
	}
	if len(long) != 128 {
		t.Fatalf("len(long) = %d", len(long))
	}
	for _, tt := range tests {
		checkOut(t, "FailureType", []byte(tt.in), FailureType([]byte(tt.in)), tt.want)
	}
}

func TestRewardRange(t *testing.T) {
	tests := []struct {
		in     float64
		want   string
		scored bool
	}{
		{math.NaN(), nilOut, false},
		{math.Inf(1), "above_one", true},
		{math.Inf(-1), "negative", true},
		{math.Copysign(0, -1), "zero", true},
		{0, "zero", true},
		{0.5, "partial", true},
		{math.SmallestNonzeroFloat64, "partial", true},
		{math.Nextafter(1, 0), "partial", true},
		{1, "full", true},
		{1.0000001, "above_one", true},
		{math.Nextafter(1, 2), "above_one", true},
		{2, "above_one", true},
		{math.MaxFloat64, "above_one", true},
		{-1e-300, "negative", true},
		{-math.SmallestNonzeroFloat64, "negative", true},
		{-1, "negative", true},
	}
	for _, tt := range tests {
		got, scored := RewardRange(tt.in)
		if scored != tt.scored {
			t.Errorf("RewardRange(%v) scored = %v, want %v", tt.in, scored, tt.scored)
		}
		if tt.want == nilOut {
			if got != nil {
				t.Errorf("RewardRange(%v) = %q, want nil", tt.in, got)
			}
			continue
		}
		if string(got) != tt.want {
			t.Errorf("RewardRange(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRoute(t *testing.T) {
	r256 := "/" + strings.Repeat("r", 255)
	tests := []struct{ in, want string }{
		{"/v1/x", "/v1/x"},
		{"/", "/"},
		{"/v1/items/{item_id}", "/v1/items/{item_id}"},
		{"/v1/é", "/v1/é"},
		{"/a?b=1", "unmatched"},
		{"/a?", "unmatched"},
		{"v1/x", "unmatched"},
		{"", "unmatched"},
		{" /v1/x", "unmatched"},
		{r256 + "r", "unmatched"}, // 257 bytes
		{r256, r256},              // exactly 256 bytes
		{"unmatched", "unmatched"},
		{"/bad\xff", "unmatched"}, // not valid UTF-8
	}
	if len(r256) != 256 {
		t.Fatalf("len(r256) = %d", len(r256))
	}
	for _, tt := range tests {
		checkOut(t, "Route", []byte(tt.in), Route([]byte(tt.in)), tt.want)
	}
	if got := Route(nil); string(got) != "unmatched" {
		t.Errorf("Route(nil) = %q, want unmatched", got)
	}
}

func TestPhase(t *testing.T) {
	if got := Phase(false); string(got) != "before_response" {
		t.Errorf("Phase(false) = %q", got)
	}
	if got := Phase(true); string(got) != "during_response" {
		t.Errorf("Phase(true) = %q", got)
	}
}

func TestStatusCode(t *testing.T) {
	tests := []struct {
		in   int64
		want bool
	}{
		{math.MinInt64, false}, {-200, false}, {0, false}, {99, false},
		{100, true}, {200, true}, {404, true}, {599, true},
		{600, false}, {1200, false}, {math.MaxInt64, false},
	}
	for _, tt := range tests {
		if got := StatusCode(tt.in); got != tt.want {
			t.Errorf("StatusCode(%d) = %v, want %v", tt.in, got, tt.want)
		}
		if got := Int(schema.AttrHttpResponseStatusCode, tt.in); got != tt.want {
			t.Errorf("Int(status_code, %d) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestGCGeneration(t *testing.T) {
	for g, want := range map[int64]bool{-1: false, 0: true, 1: true, 2: true, 3: false, math.MaxInt64: false} {
		if got := GCGeneration(g); got != want {
			t.Errorf("GCGeneration(%d) = %v, want %v", g, got, want)
		}
		if got := Int(schema.AttrNemoGymGcGeneration, g); got != want {
			t.Errorf("Int(gc.generation, %d) = %v, want %v", g, got, want)
		}
	}
	if Int(schema.AttrHttpRoute, 1) || Int(schema.NumAttributes, 1) {
		t.Error("Int on a non-int attribute or an id outside the schema = true")
	}
}

func TestServerType(t *testing.T) {
	tests := []struct{ in, want string }{
		{"resources_servers", "resources_servers"},
		{"responses_api_agents", "responses_api_agents"},
		{"responses_api_models", "responses_api_models"},
		{"environment_servers", "environment_servers"},
		{"orchestrator", "orchestrator"},
		{"", nilOut},
		{"other", "other"},
		{"Orchestrator", "other"},
		{"orchestrator ", "other"},
		{"resources_server", "other"},
		{"gateway", "other"},
	}
	for _, tt := range tests {
		checkOut(t, "ServerType", []byte(tt.in), ServerType([]byte(tt.in)), tt.want)
	}
	// Every schema value is kept, so the table above can't miss one.
	for _, v := range schema.Attr(schema.AttrNemoGymServerType).Values {
		if got := ServerType([]byte(v)); string(got) != v {
			t.Errorf("ServerType(%q) = %q", v, got)
		}
	}
}

func TestCap(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"ascii cut", "abcdef", 5, "abcde"},
		{"empty", "", 5, ""},
		{"zero max", "abc", 0, ""},
		{"negative max", "abc", -1, ""},
		// 2-byte rune é (c3 a9)
		{"2-byte fits", "abcé", 5, "abcé"},
		{"2-byte split", "abcdé", 5, "abcd"},
		{"2-byte after boundary", "abcdeé", 5, "abcde"},
		// 3-byte rune € (e2 82 ac)
		{"3-byte fits", "ab€", 5, "ab€"},
		{"3-byte split after 1", "abcd€", 5, "abcd"},
		{"3-byte split after 2", "abc€", 5, "abc"},
		{"3-byte after boundary", "abcde€", 5, "abcde"},
		// 4-byte rune 😀 (f0 9f 98 80)
		{"4-byte fits", "a😀", 5, "a😀"},
		{"4-byte split after 1", "abcd😀", 5, "abcd"},
		{"4-byte split after 2", "abc😀", 5, "abc"},
		{"4-byte split after 3", "ab😀", 5, "ab"},
		{"4-byte after boundary", "abcde😀", 5, "abcde"},
		{"only runes", "😀😀", 5, "😀"},
		{"rune wider than max", "😀", 3, ""},
		{"mixed", "é€😀", 9, "é€😀"},
		{"mixed cut", "é€😀x", 9, "é€😀"},
		{"mixed cut in 4", "é€😀", 8, "é€"},
	}
	for _, tt := range tests {
		got := Cap([]byte(tt.in), tt.max)
		if string(got) != tt.want {
			t.Errorf("%s: Cap(%q, %d) = %q, want %q", tt.name, tt.in, tt.max, got, tt.want)
		}
		if !utf8.Valid(got) {
			t.Errorf("%s: Cap(%q, %d) = %q is not valid UTF-8", tt.name, tt.in, tt.max, got)
		}
	}
	// Every string attribute's default cap, 256 bytes, at every rune width.
	for _, r := range []string{"é", "€", "😀"} {
		for pad := range 4 {
			in := strings.Repeat("a", pad) + strings.Repeat(r, 300)
			got := Cap([]byte(in), schema.DefaultStringMaxBytes)
			if len(got) > 256 || len(got) < 256-3 || !utf8.Valid(got) || !strings.HasPrefix(in, string(got)) {
				t.Errorf("Cap(%d×a + %q×300, 256) = %d bytes, valid=%v", pad, r, len(got), utf8.Valid(got))
			}
		}
	}
}

func TestCapInvalidUTF8NeverPanics(t *testing.T) {
	inputs := []string{
		"\x80\x80\x80\x80\x80\x80\x80\x80",
		"abc\x80\x80\x80\x80\x80",
		"\xff\xfe\xfd\xfc",
		"ab\xf0\x9f",
		"\xe2\x82",
	}
	for _, in := range inputs {
		for max := -2; max <= len(in)+1; max++ {
			got := Cap([]byte(in), max)
			if len(got) > max && (max >= 0 || len(got) != 0) {
				t.Errorf("Cap(%q, %d) = %q, longer than max", in, max, got)
			}
			if !strings.HasPrefix(in, string(got)) {
				t.Errorf("Cap(%q, %d) = %q, not a prefix", in, max, got)
			}
		}
	}
}

// Outputs cut from the input have their capacity limited, so a caller's append never writes
// into the rest of the input.
func TestCutOutputsDoNotAliasTail(t *testing.T) {
	in := []byte("abcdefgh")
	out := Cap(in, 4)
	_ = append(out, 'X')
	if string(in) != "abcdefgh" {
		t.Errorf("append to Cap output changed the input: %q", in)
	}
	in = []byte("abc\xffdef")
	out, _ = (*Registry)(nil).String(schema.AttrNemoGymEventLoop, in)
	if string(out) != "abc" {
		t.Fatalf("String(event_loop, %q) = %q", in, out)
	}
	_ = append(out, 'X')
	if string(in) != "abc\xffdef" {
		t.Errorf("append to String output changed the input: %q", in)
	}
	// Package-level outputs: an append copies.
	fb := FailureClass([]byte("Bad"))
	_ = append(fb, 'X')
	if string(FailureClass([]byte("Bad"))) != "other" {
		t.Error("append to a package-level output changed it")
	}
}

func TestValidPrefix(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"é€😀", "é€😀"},
		{"abc\xff", "abc"},
		{"\xffabc", ""},
		{"é\xe2\x82", "é"},
		{"a\ufffdb", "a\ufffdb"}, // a real U+FFFD is valid
		{"ab\xed\xa0\x80", "ab"}, // an encoded surrogate is not valid UTF-8
	}
	for _, tt := range tests {
		if got := validPrefix([]byte(tt.in)); !bytes.Equal(got, []byte(tt.want)) {
			t.Errorf("validPrefix(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestAliases: the older spellings metadata.yaml declares as aliases are read as the values
// they name by both entry points, the gymattrs engine's (String) and the receiver's
// aggregator's (StringValidUTF8), with no allocation; the output is the schema's own value,
// never the input.
func TestAliases(t *testing.T) {
	var r *Registry
	for _, c := range []struct{ in, want string }{{"success", "scored"}, {"failure", "failed"}, {"scored", "scored"}} {
		for name, f := range map[string]func(schema.AttrID, []byte) ([]byte, bool){"String": r.String, "StringValidUTF8": r.StringValidUTF8} {
			in := []byte(c.in)
			out, ok := f(schema.AttrNemoGymRolloutOutcome, in)
			if !ok || string(out) != c.want {
				t.Errorf("%s(outcome, %q) = %q, %v; want %q", name, c.in, out, ok, c.want)
			}
			allocs := testing.AllocsPerRun(100, func() { _, _ = f(schema.AttrNemoGymRolloutOutcome, in) })
			if allocs != 0 {
				t.Errorf("%s(outcome, %q): %v allocations", name, c.in, allocs)
			}
		}
	}
	// An alias of a fallback enumeration would be read the same way; none is declared today,
	// so a value outside the set still takes the fallback.
	if out, _ := r.String(schema.AttrNemoGymServerType, []byte("success")); string(out) != schema.Attr(schema.AttrNemoGymServerType).Fallback {
		t.Errorf("server type %q: got %q", "success", out)
	}
}
