package normalize

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// patternAttrs are the schema attributes that document a Pattern, each with the regexp of
// its pattern matched in full.
func patternAttrs(t testing.TB) map[schema.AttrID]*regexp.Regexp {
	t.Helper()
	m := map[schema.AttrID]*regexp.Regexp{}
	for id := range schema.NumAttributes {
		if p := schema.Attr(id).Pattern; p != "" {
			m[id] = regexp.MustCompile("^(?:" + p + ")$")
		}
	}
	if len(m) == 0 {
		t.Fatal("metadata.yaml documents no pattern")
	}
	return m
}

// TestHandMatchersCoverSchema: every attribute with a Pattern has a hand-written matcher (the
// regexp fallback in init is only a safety net), and no matcher is bound to an attribute that
// has no pattern.
func TestHandMatchersCoverSchema(t *testing.T) {
	for id := range patternAttrs(t) {
		if handMatchers[id] == nil {
			t.Errorf("%s documents pattern %q but has no hand-written matcher", schema.Attr(id).Key, schema.Attr(id).Pattern)
		}
	}
	for id := range handMatchers {
		if schema.Attr(id).Pattern == "" {
			t.Errorf("hand-written matcher bound to %s, which documents no pattern", schema.Attr(id).Key)
		}
	}
}

// handPicked are inputs at the edges of the three patterns.
var handPicked = []string{
	"", "a", "z", "A", "Z", "_", "0", "9", ".", ":", "-", " ", "é", "\xff", "\x00",
	"ab", "a_", "a0", "a_0_z", "0a", "_a", "Aa", "aA", "a-b", "a b", "a\n", "\na",
	"a:b", "a:", ":b", ":", "a::b", "a:b:c", "A:b", "a:B", "a_1:b_2", "a:1", "1:a", "a:_b", "a :b", "a: b",
	"a.b", "a.", ".a", "a..b", "A.B", "_._", "a.1", "a.b1", "a1.b", "a.B.c.D", "a.b:c", "a.b-c",
	"Error", "TimeoutError", "asyncio.TimeoutError", "builtins.ValueError", "__main__.MyError",
	"transport_timeout", "sandbox:oom", "agent_request_failed", "read timed out after 300s",
	"aé", "éa", "a\xffb", "a.é", "a:é", "a\u0131", "\u212a", // ı and the Kelvin sign fold to ASCII letters in (?i); the patterns are case-sensitive
	strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("a", 128), strings.Repeat("a", 129),
	"a:" + strings.Repeat("b", 126), "a:" + strings.Repeat("b", 127),
	"A." + strings.Repeat("b", 126), "A." + strings.Repeat("b", 127),
	"0.1", "9lives", "_.-", "a-", "-a", "a/b", "rollout_driver", "model.policy-model",
	"GPU-3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0f", "MIG-3F1C2A9B-0D4E-4C7A-9B1E-5A6F7C8D9E0F",
	"GPU-3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0f0", "GPU-3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0g",
	"GPU-3f1c2a9b0d4e-4c7a-9b1e-5a6f7c8d9e0f", "GPU-", "GPU", "GPX-3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0f",
	"MIG-GPU-3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0f", "GPU--3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0",
}

// bounded is the whole rule of a pattern attribute: the pattern in full within MaxBytes.
func bounded(id schema.AttrID, re *regexp.Regexp, v []byte) bool {
	a := schema.Attr(id)
	return re.Match(v) && (a.MaxBytes == 0 || len(v) <= a.MaxBytes)
}

// checkAgree checks, for one input, that every hand matcher agrees with its pattern, and
// that the attribute's normalising function keeps exactly the values the pattern and cap admit.
func checkAgree(t testing.TB, res map[schema.AttrID]*regexp.Regexp, v []byte) {
	t.Helper()
	for id, re := range res {
		a := schema.Attr(id)
		if got, want := handMatchers[id](v), re.Match(v); got != want {
			t.Errorf("%s: matcher(%q) = %v, pattern %q says %v", a.Key, v, got, a.Pattern, want)
		}
		out, ok := (*Registry)(nil).String(id, v)
		if !ok {
			t.Errorf("%s: String(%q) rejected", a.Key, v)
			continue
		}
		kept := out != nil && string(out) == string(v) && len(v) > 0
		if len(v) == 0 {
			if out != nil {
				t.Errorf("%s: String(%q) = %q, want nil", a.Key, v, out)
			}
			continue
		}
		want := bounded(id, re, v)
		if id == schema.AttrNemoGymFailureKind && slices.Contains(schema.FailureKinds, string(v)) {
			want = true
		}
		if kept != want && string(v) != a.Fallback {
			t.Errorf("%s: String(%q) = %q, pattern and cap say kept=%v", a.Key, v, out, want)
		}
		if !kept && string(out) != a.Fallback {
			t.Errorf("%s: String(%q) = %q, want the fallback %q", a.Key, v, out, a.Fallback)
		}
	}
}

func TestMatchersAgreeWithSchemaPatterns(t *testing.T) {
	res := patternAttrs(t)
	for _, s := range handPicked {
		checkAgree(t, res, []byte(s))
	}
	for _, k := range schema.FailureKinds {
		checkAgree(t, res, []byte(k))
	}
}

// alphabet is weighted towards the bytes the patterns care about.
var alphabet = []string{
	"a", "b", "z", "q", "A", "Z", "M", "0", "9", "5", "_", "_", ".", ".", ":", ":",
	"-", " ", "?", "/", "é", "€", "😀", "\xff", "\x80", "\x00", "\n",
}

// genLower generates a value of [a-z][a-z0-9_]*.
func genLower(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.WriteByte(byte('a' + rng.IntN(26)))
	for range n {
		switch rng.IntN(3) {
		case 0:
			b.WriteByte(byte('a' + rng.IntN(26)))
		case 1:
			b.WriteByte(byte('0' + rng.IntN(10)))
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// genSegment generates a value of [A-Za-z_][A-Za-z0-9_]*.
func genSegment(rng *rand.Rand, n int) string {
	const first = "abcxyzABCXYZ_"
	const rest = "abcxyzABCXYZ_0189"
	var b strings.Builder
	b.WriteByte(first[rng.IntN(len(first))])
	for range n {
		b.WriteByte(rest[rng.IntN(len(rest))])
	}
	return b.String()
}

// mutate changes, inserts or deletes one byte.
func mutate(rng *rand.Rand, s string) string {
	if s == "" {
		return alphabet[rng.IntN(len(alphabet))]
	}
	i := rng.IntN(len(s))
	switch rng.IntN(3) {
	case 0:
		return s[:i] + alphabet[rng.IntN(len(alphabet))] + s[i+1:]
	case 1:
		return s[:i] + alphabet[rng.IntN(len(alphabet))] + s[i:]
	default:
		return s[:i] + s[i+1:]
	}
}

// TestMatchersPropertyLoop is the quick property check: random strings over a weighted
// alphabet, strings generated from each pattern's grammar (near the length caps too) and
// mutations of those, each checked against the regexp of the documented pattern.
func TestMatchersPropertyLoop(t *testing.T) {
	res := patternAttrs(t)
	rng := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	var positives int
	for i := range n {
		var s string
		switch i % 5 {
		case 0: // random
			var b strings.Builder
			for range rng.IntN(12) {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			s = b.String()
		case 1: // lower identifier, up to past the 64-byte cap
			s = genLower(rng, rng.IntN(70))
		case 2: // namespaced, up to past the 128-byte cap
			s = genLower(rng, rng.IntN(70)) + ":" + genLower(rng, rng.IntN(70))
		case 3: // dotted name, up to past the 128-byte cap
			s = genSegment(rng, rng.IntN(40))
			for range rng.IntN(4) {
				s += "." + genSegment(rng, rng.IntN(40))
			}
		case 4: // a mutation of a generated value
			s = mutate(rng, genLower(rng, rng.IntN(8))+":"+genSegment(rng, rng.IntN(8)))
		}
		if rng.IntN(4) == 0 {
			s = mutate(rng, s)
		}
		for _, re := range res {
			if re.MatchString(s) {
				positives++
			}
		}
		checkAgree(t, res, []byte(s))
		if t.Failed() {
			t.Fatalf("stopping after the first failing input %q", s)
		}
	}
	if positives < n/4 {
		t.Errorf("only %d matching inputs in %d: the generator does not exercise the patterns", positives, n)
	}
}

// FuzzPatterns holds the hand matchers to the documented patterns, and Cap to its contract,
// on fuzzed input: go test -fuzz=FuzzPatterns ./internal/normalize/
func FuzzPatterns(f *testing.F) {
	for _, s := range handPicked {
		f.Add([]byte(s), len(s)/2)
	}
	res := patternAttrs(f)
	f.Fuzz(func(t *testing.T, v []byte, max int) {
		checkAgree(t, res, v)
		checkCap(t, v, max%300)
	})
}

// checkCap checks Cap's contract on one input: a prefix, within max, whole runes, as long as
// whole runes allow.
func checkCap(t testing.TB, v []byte, max int) {
	t.Helper()
	out := Cap(v, max)
	if len(out) > len(v) || string(out) != string(v[:len(out)]) {
		t.Fatalf("Cap(%q, %d) = %q, not a prefix", v, max, out)
	}
	if max < 0 {
		max = 0
	}
	if len(out) > max {
		t.Fatalf("Cap(%q, %d) = %q, over max", v, max, out)
	}
	if len(v) <= max && len(out) != len(v) {
		t.Fatalf("Cap(%q, %d) = %q, cut a value within max", v, max, out)
	}
	if utf8.Valid(v) {
		if !utf8.Valid(out) {
			t.Fatalf("Cap(%q, %d) = %q, split a rune", v, max, out)
		}
		if len(v) > max && len(out) < max-(utf8.UTFMax-1) {
			t.Fatalf("Cap(%q, %d) = %q, cut more than a rune", v, max, out)
		}
	}
	free, _ := (*Registry)(nil).String(schema.AttrNemoGymEventLoop, v)
	if !utf8.Valid(free) || len(free) > schema.DefaultStringMaxBytes {
		t.Fatalf("String(event_loop, %q) = %q, not at most %d bytes of valid UTF-8", v, free, schema.DefaultStringMaxBytes)
	}
}

func TestCapProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		v := []byte(b.String())
		checkCap(t, v, rng.IntN(len(v)+3)-1)
	}
}
