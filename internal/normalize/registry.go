package normalize

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Registry holds Gym's registries (schema.FailureKinds, schema.HealthChecks) plus the
// entries a configuration adds, and the health checks it ignores. It is immutable once built
// and safe for concurrent use. A nil *Registry is Gym's registries alone.
type Registry struct {
	kinds   map[string]struct{}
	checks  map[string]struct{}
	ignored map[string]struct{}
}

// defaultRegistry is Gym's registries with nothing configured (the nil *Registry).
var defaultRegistry *Registry

func mustRegistry() *Registry {
	r, err := NewRegistry(nil, nil, nil)
	if err != nil {
		panic("normalize: metadata.yaml registries: " + err.Error())
	}
	return r
}

// The receiver configuration keys the lists come from, used to name a bad entry.
const (
	listFailureKinds        = "failure_kinds"
	listHealthChecks        = "health_checks"
	listIgnoredHealthChecks = "ignored_health_checks"
)

// NewRegistry builds a registry of Gym's failure kinds and health checks plus the configured
// failureKinds and healthChecks, and the configured ignoredHealthChecks. Every configured
// entry must be non-empty, valid UTF-8 and within the MaxBytes of its attribute where the
// attribute has one (nemo.gym.failure_kind: 128 bytes); a configured failure kind need not be
// namespaced. Duplicates (among themselves or with Gym's own) are harmless. The error names
// every bad entry with its list and index.
func NewRegistry(failureKinds, healthChecks, ignoredHealthChecks []string) (*Registry, error) {
	var errs []error
	check := func(list string, max int, entries []string) {
		for i, e := range entries {
			if err := checkEntry(e, max); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d] %s: %w", list, i, quote(e), err))
			}
		}
	}
	kindMax := schema.Attr(schema.AttrNemoGymFailureKind).MaxBytes
	checkMax := schema.Attr(schema.AttrNemoGymHealthCheck).MaxBytes
	check(listFailureKinds, kindMax, failureKinds)
	check(listHealthChecks, checkMax, healthChecks)
	check(listIgnoredHealthChecks, checkMax, ignoredHealthChecks)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Registry{
		kinds:   set(schema.FailureKinds, failureKinds),
		checks:  set(schema.HealthChecks, healthChecks),
		ignored: set(nil, ignoredHealthChecks),
	}, nil
}

func checkEntry(e string, max int) error {
	switch {
	case e == "":
		return errors.New("is empty")
	case !utf8.ValidString(e):
		return errors.New("is not valid UTF-8")
	case max > 0 && len(e) > max:
		return fmt.Errorf("is %d bytes, over the attribute's limit of %d", len(e), max)
	}
	return nil
}

// quote quotes an entry for an error message, a long one shortened.
func quote(e string) string {
	const show = 48
	if len(e) > show {
		return fmt.Sprintf("%q...", e[:show])
	}
	return fmt.Sprintf("%q", e)
}

func set(lists ...[]string) map[string]struct{} {
	m := map[string]struct{}{}
	for _, l := range lists {
		for _, e := range l {
			m[e] = struct{}{}
		}
	}
	return m
}

func (r *Registry) get() *Registry {
	if r == nil {
		return defaultRegistry
	}
	return r
}

// FailureKind bounds nemo.gym.failure_kind: a registered kind (Gym's or configured) stays; else
// a namespaced kind matching the attribute's pattern ([a-z][a-z0-9_]*:[a-z][a-z0-9_]*) in full
// within its MaxBytes (128) stays; any other non-empty value becomes the fallback
// (unregistered). Empty gives nil: the attribute is left out.
func (r *Registry) FailureKind(v []byte) []byte {
	return r.get().failureKind(&rules[schema.AttrNemoGymFailureKind], v)
}

func (r *Registry) failureKind(a *attrRule, v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	if _, ok := r.kinds[string(v)]; ok {
		return v
	}
	if len(v) <= a.max && a.match(v) {
		return v
	}
	return a.fallback
}

// HealthCheck bounds nemo.gym.health.check: a registered check id (Gym's or configured)
// stays, anything else (the empty id too) becomes the fallback (unregistered). Whether the
// check is ignored is IgnoredHealthCheck's question, asked on the raw id first.
func (r *Registry) HealthCheck(v []byte) []byte {
	return r.get().healthCheck(&rules[schema.AttrNemoGymHealthCheck], v)
}

func (r *Registry) healthCheck(a *attrRule, v []byte) []byte {
	if _, ok := r.checks[string(v)]; ok {
		return v
	}
	return a.fallback
}

// IgnoredHealthCheck reports whether the raw check id (before normalisation) is configured as
// ignored: such a check is never counted as flagged.
func (r *Registry) IgnoredHealthCheck(raw []byte) bool {
	_, ok := r.get().ignored[string(raw)]
	return ok
}

// String bounds a string value of attribute id by the attribute's Rule, for a processor that
// bounds any attribute of any schema instrument:
//
//   - RuleString: at most MaxBytes (else schema.DefaultStringMaxBytes) of valid UTF-8, cut at
//     a rune boundary, and before the first invalid byte should the value not be valid UTF-8.
//     Empty stays empty (non-nil).
//   - RuleFailureKind, RuleIdentifier, RuleFallbackEnum: the value or the attribute's
//     Fallback, as FailureKind, FailureClass/FailureType and ServerType; empty gives nil.
//   - RuleHealthCheck, RuleRoute: as HealthCheck and Route.
//   - RuleEnum, and the derived RuleRewardRange and RulePhase: one of Values stays; an alias
//     (a value an older Gym writes) becomes the value it names; anything else is rejected.
//     RuleFallbackEnum reads aliases the same way before its fallback.
//   - RuleStatusCode, RuleIntEnum, RuleBool: the attribute is not a string, so a string value
//     is rejected (use Int, StatusCode or GCGeneration on int values).
//
// ok=false means the value is rejected (out is nil). ok=true with out == nil means the
// attribute is to be left out (its value was empty). The rule is the attribute's own; an
// instrument that narrows the values (schema.Instrument.Allows) is the caller's to check.
// An id outside the schema is rejected.
func (r *Registry) String(id schema.AttrID, v []byte) (out []byte, ok bool) {
	if int(id) >= len(rules) {
		return nil, false
	}
	a := &rules[id]
	switch a.rule {
	case schema.RuleString:
		return freeString(a.max, v), true
	case schema.RuleRoute:
		return route(a, v), true
	}
	return r.byRule(a, v)
}

// StringValidUTF8 is String for a value the caller knows to be valid UTF-8 (the receiver's
// decoder validates every line before its values reach the aggregator): it gives what String
// gives, without validating the UTF-8 again. On a value that is not valid UTF-8 its output
// may not be either; the processor, whose values come from anywhere, uses String.
func (r *Registry) StringValidUTF8(id schema.AttrID, v []byte) (out []byte, ok bool) {
	if int(id) >= len(rules) {
		return nil, false
	}
	a := &rules[id]
	switch a.rule {
	case schema.RuleString:
		if len(v) == 0 {
			return empty, true
		}
		return Cap(v, a.max), true // a cut at a rune boundary of valid UTF-8 is valid
	case schema.RuleRoute:
		return routeValidUTF8(a, v), true
	}
	return r.byRule(a, v)
}

// byRule applies the rules whose outcome does not depend on whether v is valid UTF-8.
func (r *Registry) byRule(a *attrRule, v []byte) (out []byte, ok bool) {
	switch a.rule {
	case schema.RuleFailureKind:
		return r.get().failureKind(a, v), true
	case schema.RuleIdentifier:
		return identifier(a, v), true
	case schema.RuleFallbackEnum:
		return fallbackEnum(a, v), true
	case schema.RuleHealthCheck:
		return r.get().healthCheck(a, v), true
	case schema.RuleEnum, schema.RuleRewardRange, schema.RulePhase:
		if oneOf(a.values, v) {
			return v, true
		}
		if to := aliasOf(a, v); to != nil {
			return to, true
		}
	}
	return nil, false
}
