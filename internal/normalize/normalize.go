// Package normalize bounds Gym attribute values by the rules of docs/metrics.md
// ("Attributes"), as metadata.yaml states them. The receiver's aggregator and the
// attribute-bounding processor share it, so both give the same value for the same input.
//
// Every allowed value, fallback sentinel, cap and range comes from package schema (generated
// from metadata.yaml); nothing here types one again. The value patterns of metadata.yaml are
// matched by hand-written byte loops (match.go); a test holds them to the documented patterns.
//
// Hot path: no function here allocates. Inputs and outputs are []byte. An output is either a
// sub-slice of the input (capacity limited to its length, so an append never writes into the
// input) or a package-level slice built once at init from the schema. Callers must not modify
// an output. A nil output means "leave the attribute out" (an empty optional value).
package normalize

import (
	"bytes"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// attrRule is the init-time view of one schema attribute, ready for the hot path.
type attrRule struct {
	rule     schema.Rule
	max      int      // byte cap of a string value (MaxBytes, else the default cap)
	fallback []byte   // the value that replaces one that breaks the rule (nil: none)
	values   [][]byte // the enumerated values
	aliases  []alias  // values an older sender writes, each read as one of values
	match    func([]byte) bool
}

// alias is a value an older sender writes (from) and the schema's value it is read as (to, a
// slice built once at init).
type alias struct {
	from, to []byte
}

var (
	rules [schema.NumAttributes]attrRule

	// empty is the non-nil empty value: a free string attribute sent empty stays, empty.
	empty = []byte{}

	// Values of the derived attributes, in the order metadata.yaml lists them.
	rangeNegative, rangeZero, rangePartial, rangeFull, rangeAboveOne []byte
	phaseBefore, phaseDuring                                         []byte

	statusMin, statusMax int64
)

// bytesOf returns s as a []byte whose capacity is its length, so that an append by a caller
// copies instead of writing past the value.
func bytesOf(s string) []byte {
	b := []byte(s)
	return b[:len(b):len(b)]
}

func init() {
	for id := range schema.NumAttributes {
		a := schema.Attr(id)
		r := &rules[id]
		r.rule = a.Rule
		r.max = a.MaxBytes
		if r.max <= 0 {
			r.max = schema.DefaultStringMaxBytes
		}
		if a.Fallback != "" {
			r.fallback = bytesOf(a.Fallback)
		}
		for _, v := range a.Values {
			r.values = append(r.values, bytesOf(v))
		}
		// After Values: the rules that read values by position (reward range, phase) have none.
		for _, v := range a.OTLPValues {
			r.values = append(r.values, bytesOf(v))
		}
		for _, al := range a.Aliases {
			r.aliases = append(r.aliases, alias{from: bytesOf(al.From), to: bytesOf(al.To)})
		}
		if a.Pattern != "" {
			r.match = handMatchers[id]
			if r.match == nil {
				// An attribute metadata.yaml gained without a hand-written matcher: still bound
				// it right, by its documented pattern. TestHandMatchersCoverSchema fails on it.
				r.match = regexp.MustCompile("^(?:" + a.Pattern + ")$").Match
			}
		}
	}

	rr := rulesOf(schema.RuleRewardRange)
	mustValues(rr, 5)
	rangeNegative, rangeZero, rangePartial, rangeFull, rangeAboveOne =
		rr.values[0], rr.values[1], rr.values[2], rr.values[3], rr.values[4]

	ph := rulesOf(schema.RulePhase)
	mustValues(ph, 2)
	phaseBefore, phaseDuring = ph.values[0], ph.values[1]

	sc := schema.Attr(schema.AttrHttpResponseStatusCode)
	statusMin, statusMax = sc.Min, sc.Max

	defaultRegistry = mustRegistry()
}

// rulesOf returns the one attribute with the given derived rule.
func rulesOf(rule schema.Rule) *attrRule {
	var found *attrRule
	for id := range rules {
		if rules[id].rule == rule {
			if found != nil {
				panic(fmt.Sprintf("normalize: metadata.yaml has more than one attribute with rule %d", rule))
			}
			found = &rules[id]
		}
	}
	if found == nil {
		panic(fmt.Sprintf("normalize: metadata.yaml has no attribute with rule %d", rule))
	}
	return found
}

func mustValues(r *attrRule, n int) {
	if len(r.values) != n {
		panic(fmt.Sprintf("normalize: metadata.yaml lists %d values for a rule-%d attribute, want %d", len(r.values), r.rule, n))
	}
}

// FailureClass bounds nemo.gym.failure_class: a value matching the attribute's pattern
// ([a-z][a-z0-9_]*) within its MaxBytes (64) stays, any other non-empty value becomes the
// fallback (other). Empty gives nil: the attribute is left out.
func FailureClass(v []byte) []byte {
	return identifier(&rules[schema.AttrNemoGymFailureClass], v)
}

// FailureType bounds nemo.gym.failure_type: an exception class name matching the attribute's
// pattern ([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*) within its MaxBytes (128) stays,
// any other non-empty value becomes the fallback (other). Empty gives nil.
func FailureType(v []byte) []byte {
	return identifier(&rules[schema.AttrNemoGymFailureType], v)
}

func identifier(r *attrRule, v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	if len(v) <= r.max && r.match(v) {
		return v
	}
	return r.fallback
}

// RewardRange gives nemo.gym.rollout.reward.range of a reward. NaN is unscored: (nil, false).
// Otherwise scored is true and rng is negative (< 0, -Inf included), zero (== 0, -0.0
// included), partial (0 < r < 1), full (== 1) or above_one (> 1, +Inf included), the values of
// metadata.yaml in the order it lists them.
func RewardRange(r float64) (rng []byte, scored bool) {
	switch {
	case r != r: // NaN
		return nil, false
	case r < 0:
		return rangeNegative, true
	case r == 0:
		return rangeZero, true
	case r < 1:
		return rangePartial, true
	case r == 1:
		return rangeFull, true
	default:
		return rangeAboveOne, true
	}
}

// Route bounds http.route: a route template as sent (it starts with "/", holds no "?", is
// valid UTF-8 and is within the attribute's MaxBytes, 256) stays; anything else, the empty
// value and the sentinel itself included, becomes the fallback (unmatched).
func Route(v []byte) []byte {
	return route(&rules[schema.AttrHttpRoute], v)
}

func route(r *attrRule, v []byte) []byte {
	if !routeKept(r, v) || !utf8.Valid(v) {
		return r.fallback
	}
	return v
}

// routeValidUTF8 is route for a value known to be valid UTF-8.
func routeValidUTF8(r *attrRule, v []byte) []byte {
	if !routeKept(r, v) {
		return r.fallback
	}
	return v
}

// routeKept reports whether route keeps v, its UTF-8 aside.
func routeKept(r *attrRule, v []byte) bool {
	return len(v) > 0 && len(v) <= r.max && v[0] == '/' && bytes.IndexByte(v, '?') < 0
}

// Phase gives nemo.gym.request.phase: the attribute's first value (before_response) when the
// response had not started, its second (during_response) when it had.
func Phase(responseStarted bool) []byte {
	if responseStarted {
		return phaseDuring
	}
	return phaseBefore
}

// StatusCode reports whether code is a valid http.response.status_code: within the
// attribute's Min..Max (100..599). Any other code is rejected.
func StatusCode(code int64) bool {
	return code >= statusMin && code <= statusMax
}

// ServerType bounds nemo.gym.server.type: one of the attribute's values stays, any other
// non-empty value becomes the fallback (other). Empty gives nil: the attribute is left out.
func ServerType(v []byte) []byte {
	return fallbackEnum(&rules[schema.AttrNemoGymServerType], v)
}

func fallbackEnum(r *attrRule, v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	if oneOf(r.values, v) {
		return v
	}
	if to := aliasOf(r, v); to != nil {
		return to
	}
	return r.fallback
}

// aliasOf returns the value v is read as when v is one of the attribute's aliases (a value an
// older Gym writes, metadata.yaml's aliases), else nil. The one place aliases apply: both the
// receiver's aggregator and the gymattrs engine bound enumerated values here.
func aliasOf(r *attrRule, v []byte) []byte {
	for i := range r.aliases {
		if string(r.aliases[i].from) == string(v) {
			return r.aliases[i].to
		}
	}
	return nil
}

func oneOf(values [][]byte, v []byte) bool {
	for _, s := range values {
		if string(s) == string(v) {
			return true
		}
	}
	return false
}

// GCGeneration reports whether g is a valid nemo.gym.gc.generation: one of the attribute's
// IntValues (0, 1, 2).
func GCGeneration(g int64) bool {
	return intOneOf(schema.Attr(schema.AttrNemoGymGcGeneration).IntValues, g)
}

func intOneOf(values []int64, v int64) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

// Cap cuts v so that len(out) <= max, at a rune boundary: a multi-byte rune is never split,
// so a value longer than max keeps up to max bytes of whole runes (at least max-3). v is
// assumed valid UTF-8; on invalid input Cap does not panic, but the output may be invalid too
// (use String with a RuleString attribute for a value that must come out valid). A max below
// zero is taken as zero.
func Cap(v []byte, max int) []byte {
	if len(v) <= max {
		return v
	}
	if max <= 0 {
		return v[:0:0]
	}
	i := max // len(v) > max, so v[i] exists: the first byte cut off
	for k := 1; k < utf8.UTFMax && i > 0 && !utf8.RuneStart(v[i]); k++ {
		i-- // v[i] continues a rune that starts before it: cut before that rune
	}
	if !utf8.RuneStart(v[i]) {
		// More continuation bytes in a row than any rune has: invalid input. Cut at max,
		// whatever it splits.
		i = max
	}
	return v[:i:i]
}

// validPrefix returns the longest prefix of v that is valid UTF-8.
func validPrefix(v []byte) []byte {
	if utf8.Valid(v) {
		return v
	}
	for i := 0; i < len(v); {
		if v[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(v[i:])
		if r == utf8.RuneError && size == 1 {
			return v[:i:i]
		}
		i += size
	}
	return v
}

// freeString bounds a free string attribute: at most max bytes of valid UTF-8, cut at a rune
// boundary, and, should the input not be valid UTF-8, cut before its first invalid byte.
// Empty stays empty (non-nil: the attribute is kept).
func freeString(max int, v []byte) []byte {
	if len(v) == 0 {
		return empty
	}
	return validPrefix(Cap(v, max))
}

// FreeString bounds a string value that has no rule of its own (an attribute of an instrument
// the schema does not know) as a RuleString attribute with no MaxBytes of its own: at most
// schema.DefaultStringMaxBytes of valid UTF-8, cut at a rune boundary. The result is a prefix
// of v.
func FreeString(v []byte) []byte { return freeString(schema.DefaultStringMaxBytes, v) }

// Int applies the rule of an int attribute (http.response.status_code,
// nemo.gym.gc.generation) to an int value: true when the value is allowed. False for an id that
// is not an int-rule attribute of the schema.
func Int(id schema.AttrID, v int64) bool {
	if int(id) >= len(rules) {
		return false
	}
	switch rules[id].rule {
	case schema.RuleStatusCode, schema.RuleIntRange:
		a := schema.Attr(id)
		return v >= a.Min && v <= a.Max
	case schema.RuleIntEnum:
		return intOneOf(schema.Attr(id).IntValues, v)
	}
	return false
}
