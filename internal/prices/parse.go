package prices

// The table's file read as a YAML node tree rather than decoded into structs: so that every
// error can name the model and the key as the user wrote them, with the line, and a bad input
// price is reported once, against input, not again against the cached_input it defaults.

import (
	"errors"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// model is one model's entry of the file: its name as written, the line of its key, and its
// price or why it has none.
type model struct {
	name  string
	line  int
	price Price
	err   error
}

// pair is a key and its value in a mapping, merge keys (<<) applied.
type pair struct {
	key, value *yaml.Node
}

const tableFormat = "models: {MODEL: {input: USD, output: USD, cached_input: USD, reasoning: USD}}, USD per million tokens"

// maxMerge bounds the nesting of merge keys followed: a table has no use for deep ones.
const maxMerge = 8

// parseModels reads the models of a table in the file's order; errors of the file's structure
// (not YAML, not a mapping, an unknown or repeated key) in the order of their lines.
func parseModels(data []byte) ([]model, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a price table (%s): %w", tableFormat, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 { // an empty file, or comments only
		return nil, nil
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a price table (%s): %s at line %d", tableFormat, kind(root), root.Line)
	}
	top, errs := pairs(root, "", 0)
	var list *yaml.Node
	for _, p := range top {
		if p.key.Value != "models" {
			errs = append(errs, fmt.Errorf("%s: unknown key at line %d (a price table has models only)", p.key.Value, p.key.Line))
			continue
		}
		list = resolve(p.value)
	}
	if list == nil || list.ShortTag() == "!!null" {
		return nil, errors.Join(errs...)
	}
	if list.Kind != yaml.MappingNode {
		return nil, errors.Join(append(errs, fmt.Errorf("models: %s at line %d, not a mapping of model names to prices", kind(list), list.Line))...)
	}
	entries, perrs := pairs(list, "models: ", 0)
	errs = append(errs, perrs...)
	out := make([]model, 0, len(entries))
	for _, e := range entries {
		m := model{name: e.key.Value, line: e.key.Line}
		m.price, m.err = price(m, resolve(e.value))
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}

// price reads a model's entry: input and output required, cached_input at input's price and
// reasoning at output's when not given (or null). Each error names the model and the key.
func price(m model, v *yaml.Node) (Price, error) {
	at := fmt.Sprintf("models: %q: ", m.name)
	if v.Kind != yaml.MappingNode {
		return Price{}, fmt.Errorf("%s%s at line %d, not a mapping of token types to prices", at, kind(v), v.Line)
	}
	entries, errs := pairs(v, at, 0)
	var given, refused [NumTypes]bool // refused: given, but not a price (not also reported missing)
	var p Price
	for _, e := range entries {
		typ, ok := TypeIndex(e.key.Value)
		if !ok {
			errs = append(errs, fmt.Errorf("%s%s: unknown key at line %d (input, output, cached_input or reasoning)", at, e.key.Value, e.key.Line))
			continue
		}
		val := resolve(e.value)
		if val.ShortTag() == "!!null" {
			continue // as not given
		}
		f, err := number(val)
		if err != nil {
			errs, refused[typ] = append(errs, fmt.Errorf("%s%s: %w", at, e.key.Value, err)), true
			continue
		}
		p[typ], given[typ] = f, true
	}
	for _, typ := range []int{Input, Output} {
		if !given[typ] && !refused[typ] {
			errs = append(errs, fmt.Errorf("%s%s: required (the model at line %d)", at, Types[typ], m.line))
		}
	}
	// A default is the price it copies, already checked: a bad input is reported once.
	if !given[CachedInput] {
		p[CachedInput] = p[Input]
	}
	if !given[Reasoning] {
		p[Reasoning] = p[Output]
	}
	return p, errors.Join(errs...)
}

// number is a price node's value: a YAML number from 0 to MaxPrice.
func number(v *yaml.Node) (float64, error) {
	bad := func(shown string) error {
		return fmt.Errorf("%s is not a price at line %d (a number of USD per million tokens, from 0 to %s)",
			shown, v.Line, strconv.FormatFloat(MaxPrice, 'f', -1, 64))
	}
	if v.Kind != yaml.ScalarNode {
		return 0, bad(kind(v))
	}
	if tag := v.ShortTag(); tag != "!!int" && tag != "!!float" {
		return 0, bad(strconv.Quote(v.Value))
	}
	var f float64
	if err := v.Decode(&f); err != nil {
		return 0, bad(strconv.Quote(v.Value))
	}
	if !(f >= 0 && f <= MaxPrice) { // NaN too
		return 0, bad(fmt.Sprint(f))
	}
	return f + 0, nil // -0 is 0
}

// pairs are a mapping's keys and values in the file's order, each key once: a key written
// twice is an error (with both lines); a merge key (<<) adds the keys of the mappings it names
// that the mapping does not give itself, the first merged winning, as YAML's merge does.
func pairs(n *yaml.Node, at string, depth int) ([]pair, []error) {
	var out, merged []pair
	var errs []error
	seen := map[string]int{} // key -> line
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.ShortTag() == "!!merge" {
			if depth >= maxMerge {
				errs = append(errs, fmt.Errorf("%smerge keys (<<) nested deeper than %d at line %d", at, maxMerge, k.Line))
				continue
			}
			m, merrs := mergeOf(resolve(v), at, depth)
			merged, errs = append(merged, m...), append(errs, merrs...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("%s%s as a key at line %d", at, kind(k), k.Line))
			continue
		}
		if line, dup := seen[k.Value]; dup {
			errs = append(errs, fmt.Errorf("%s%s: already defined at line %d, again at line %d", at, keyName(at, k.Value), line, k.Line))
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, pair{k, v})
	}
	for _, p := range merged {
		if _, given := seen[p.key.Value]; !given {
			seen[p.key.Value] = p.key.Line
			out = append(out, p)
		}
	}
	return out, errs
}

// mergeOf is what a merge key's value adds: a mapping's pairs, or those of a list of mappings.
func mergeOf(v *yaml.Node, at string, depth int) ([]pair, []error) {
	switch v.Kind {
	case yaml.MappingNode:
		return pairs(v, at, depth+1)
	case yaml.SequenceNode:
		var out []pair
		var errs []error
		for _, item := range v.Content {
			if item = resolve(item); item.Kind != yaml.MappingNode {
				errs = append(errs, fmt.Errorf("%smerge key (<<) of %s at line %d: a mapping or a list of mappings merges", at, kind(item), item.Line))
				continue
			}
			p, perrs := pairs(item, at, depth+1)
			out, errs = append(out, p...), append(errs, perrs...)
		}
		return out, errs
	}
	return nil, []error{fmt.Errorf("%smerge key (<<) of %s at line %d: a mapping or a list of mappings merges", at, kind(v), v.Line)}
}

// keyName is a key as errors show it: a model's name quoted, as everywhere.
func keyName(at, key string) string {
	if at == "models: " {
		return strconv.Quote(key)
	}
	return key
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxMerge; i++ {
		n = n.Alias
	}
	return n
}

// kind names a node's kind in an error.
func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "nothing"
}
