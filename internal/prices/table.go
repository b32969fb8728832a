// Package prices is the user's price table of model tokens and the one cost formula: what the
// gym receiver exports as gym.token.price_per_million and what `gymrun summary --prices`
// bills. Prices are the user's, never built in: a model the table does not name has no cost,
// its tokens are counted apart, never priced by a guess.
package prices

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The token types of gen_ai.token.type, in the schema's order: the index of a Price's and a
// Tokens' entries. Reasoning is part of output and cached_input part of input.
const (
	Input = iota
	Output
	Reasoning
	CachedInput
	NumTypes
)

// Types are the gen_ai.token.type values, indexed by Input, Output, Reasoning, CachedInput.
var Types = schema.Attr(schema.AttrGenAiTokenType).Values

// MaxModels bounds a table: its series (4 a model) stay within the default cardinality_limit
// of an instrument on one resource.
const MaxModels = 256

// maxFileBytes bounds the file read: a table of MaxModels models is a few tens of KiB.
const maxFileBytes = 1 << 20

// MaxPrice bounds a price, in USD per million tokens: a dollar a token, hundreds of times any
// price list's. With token counts within MaxTokens it keeps every cost, and every sum of a
// table's costs, a finite number (cost.go).
const MaxPrice = 1e6

// Price is a model's price of each token type in USD per million tokens, indexed by Input,
// Output, Reasoning, CachedInput; a table's prices have every entry filled, each within
// [0, MaxPrice].
type Price [NumTypes]float64

// Table is a validated price table: model (as the metrics name it) -> price.
type Table struct {
	models map[string]Price
	names  []string // sorted: the export order
}

// Load reads and validates the table of a file; errors name the file.
func Load(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("prices: %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("prices: %s: larger than %d bytes", path, maxFileBytes)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("prices: %s: %w", path, err)
	}
	return t, nil
}

// Parse validates a table: a `models` mapping of model name to {input, output, cached_input,
// reasoning} in USD per million tokens. input and output are required; cached_input defaults
// to input's price and reasoning to output's. A price is a number from 0 to MaxPrice; an
// unknown key, an empty model name, a key given twice or two names that the metrics' rule
// makes one are errors. Every error names the model and the key as the file has them, and the
// line (parse.go).
func Parse(data []byte) (*Table, error) {
	models, err := parseModels(data)
	if err == nil && len(models) == 0 {
		return nil, errors.New("models: no model priced")
	}
	if len(models) > MaxModels {
		return nil, fmt.Errorf("models: %d models, at most %d", len(models), MaxModels)
	}
	errs := []error{err} // the file's structure first; nil when sound
	t := &Table{models: make(map[string]Price, len(models))}
	from := map[string]model{}
	for _, m := range models { // in the file's order: the errors in the order of their lines
		name := Model(m.name)
		if name == "" {
			errs = append(errs, fmt.Errorf("models: an empty model name at line %d", m.line))
			continue
		}
		if prev, dup := from[name]; dup {
			errs = append(errs, fmt.Errorf("models: %q (line %d) and %q (line %d) are the same model as the metrics name it (%q)", prev.name, prev.line, m.name, m.line, name))
			continue
		}
		from[name] = m
		if m.err != nil {
			errs = append(errs, m.err)
			continue
		}
		t.models[name] = m.price
		t.names = append(t.names, name)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.Strings(t.names)
	return t, nil
}

// Model is a model name as the metrics' gen_ai.response.model label has it (the schema's rule
// of the attribute): the key the table and the tokens meet on.
func Model(name string) string {
	out, _ := (*normalize.Registry)(nil).String(schema.AttrGenAiResponseModel, []byte(name))
	return string(out)
}

// Price is the price of a model as the metrics name it; false when the table has none.
func (t *Table) Price(model string) (Price, bool) {
	p, ok := t.models[model]
	return p, ok
}

// Models are the models priced, sorted.
func (t *Table) Models() []string { return t.names }
