package harness

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// GymOTTL returns the transform processor's statements (datapoint context) that come as close
// to gymattrs as OTTL can, generated from internal/schema like gymattrs' own tables:
//
//  1. per instrument, keep_keys(attributes, [declared...]) where metric.name == "...";
//  2. gym.rollout.completed_total: the optional failure attributes deleted on a scored
//     completion;
//  3. per attribute rule that replaces a value (registry, identifier pattern within its
//     MaxBytes, fallback enum, route template): set(attributes[k], fallback) where the value
//     breaks the rule;
//  4. free strings capped at their MaxBytes: truncate_all when every free string has the same
//     cap (and the identifiers, already replaced by a short fallback when too long, are below
//     it), else one Substring per key.
//
// With grouped, the instruments that declare the same attributes share one keep_keys, its
// condition an or of their names (fewer statements per point; the same result).
//
// What OTTL cannot do (a rejected value drops the point: that is the filter processor's job;
// merging the series whose attributes were dropped; the cardinality limit and its overflow
// series; counting what was changed) is in docs/performance.md.
func GymOTTL(grouped bool) []string {
	var sets []string              // declared key lists, in schema order
	names := map[string][]string{} // key list -> the conditions on the instruments declaring it
	for id := range schema.NumInstruments {
		in := schema.Get(id)
		keys := make([]string, len(in.Attrs))
		for i, ia := range in.Attrs {
			keys[i] = ottlString(schema.Attr(ia.ID).Key)
		}
		set := strings.Join(keys, ", ")
		if !grouped {
			set = in.Name + "\x00" + set // one statement per instrument
		}
		if names[set] == nil {
			sets = append(sets, set)
		}
		names[set] = append(names[set], "metric.name == "+ottlString(in.Name))
	}
	var out []string
	for _, set := range sets {
		_, keys, ok := strings.Cut(set, "\x00")
		if !ok {
			keys = set
		}
		out = append(out, fmt.Sprintf("keep_keys(attributes, [%s]) where %s", keys, strings.Join(names[set], " or ")))
	}

	// The scored gate (the one conditional attribute rule of the schema; internal/bound).
	completed := schema.Get(schema.GymRolloutCompletedTotal)
	outcome := schema.Attr(schema.AttrNemoGymRolloutOutcome)
	var optional []string
	for _, ia := range completed.Attrs {
		if ia.Optional {
			optional = append(optional, regexp.QuoteMeta(schema.Attr(ia.ID).Key))
		}
	}
	if len(optional) > 0 {
		out = append(out, fmt.Sprintf("delete_matching_keys(attributes, %s) where metric.name == %s and attributes[%s] == %s",
			ottlString("^(?:"+strings.Join(optional, "|")+")$"), ottlString(completed.Name),
			ottlString(outcome.Key), ottlString(outcome.Values[0])))
	}

	caps := map[int][]string{} // free-string cap -> keys
	longestFallback := 0
	for id := range schema.NumAttributes {
		a := schema.Attr(id)
		k := "attributes[" + ottlString(a.Key) + "]"
		present := k + " != nil"
		breaks := ""
		switch a.Rule {
		case schema.RuleFallbackEnum:
			breaks = "not IsMatch(" + k + ", " + ottlString(anyOf(a.Values)) + ")"
		case schema.RuleIdentifier:
			breaks = fmt.Sprintf("(Len(%s) > %d or not IsMatch(%s, %s))", k, a.MaxBytes, k, ottlString("^(?:"+a.Pattern+")$"))
		case schema.RuleFailureKind:
			breaks = fmt.Sprintf("not IsMatch(%s, %s) and (Len(%s) > %d or not IsMatch(%s, %s))",
				k, ottlString(anyOf(schema.FailureKinds)), k, a.MaxBytes, k, ottlString("^(?:"+a.Pattern+")$"))
		case schema.RuleHealthCheck:
			breaks = "not IsMatch(" + k + ", " + ottlString(anyOf(schema.HealthChecks)) + ")"
		case schema.RuleRoute:
			// a template: starts with "/", no query string, within MaxBytes (internal/normalize)
			breaks = fmt.Sprintf("(Len(%s) > %d or not IsMatch(%s, %s))", k, a.MaxBytes, k, ottlString(`^/[^?]*$`))
		case schema.RuleString:
			c := a.MaxBytes
			if c <= 0 {
				c = schema.DefaultStringMaxBytes
			}
			caps[c] = append(caps[c], a.Key)
		}
		if breaks != "" {
			out = append(out, fmt.Sprintf("set(%s, %s) where %s and %s", k, ottlString(a.Fallback), present, breaks))
			longestFallback = max(longestFallback, len(a.Fallback))
		}
	}
	if len(caps) == 1 {
		for c := range caps {
			if c >= longestFallback && c >= maxIdentifierBytes() {
				return append(out, fmt.Sprintf("truncate_all(attributes, %d)", c))
			}
		}
	}
	lens := make([]int, 0, len(caps))
	for c := range caps {
		lens = append(lens, c)
	}
	slices.Sort(lens)
	for _, c := range lens {
		for _, key := range caps[c] {
			k := "attributes[" + ottlString(key) + "]"
			out = append(out, fmt.Sprintf("set(%s, Substring(%s, 0, %d)) where %s != nil and Len(%s) > %d", k, k, c, k, k, c))
		}
	}
	return out
}

// maxIdentifierBytes is the largest cap of the pattern rules: a kept value is at most that long.
func maxIdentifierBytes() int {
	n := 0
	for id := range schema.NumAttributes {
		if a := schema.Attr(id); a.Rule != schema.RuleString {
			n = max(n, a.MaxBytes)
		}
	}
	return n
}

// anyOf is an anchored regular expression matching exactly one of values.
func anyOf(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = regexp.QuoteMeta(v)
	}
	return "^(?:" + strings.Join(q, "|") + ")$"
}

// ottlString is s as an OTTL string literal (double quotes; backslash and quote escaped).
func ottlString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TransformConfig is the transform processor's configuration block (under processors:) for
// the statements, indented for the generated collector configuration.
func TransformConfig(statements []string) string {
	var b strings.Builder
	b.WriteString("  transform:\n    error_mode: ignore\n    metric_statements:\n      - context: datapoint\n        statements:\n")
	for _, s := range statements {
		// YAML single-quoted: only the quote itself needs escaping.
		fmt.Fprintf(&b, "          - '%s'\n", strings.ReplaceAll(s, "'", "''"))
	}
	return b.String()
}
