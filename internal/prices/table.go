// Package prices is the user's price table of model tokens and the one cost formula: what the
// gym receiver exports as gym.token.price_per_million and what `gymrun summary --prices`
// bills. Prices are the user's, never built in: a model the table does not name has no cost,
// its tokens are counted apart, never priced by a guess.
package prices

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"go.yaml.in/yaml/v3"

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

// Price is a model's price of each token type in USD per million tokens, indexed by Input,
// Output, Reasoning, CachedInput; a table's prices have every entry filled.
type Price [NumTypes]float64

// Table is a validated price table: model (as the metrics name it) -> price.
type Table struct {
	models map[string]Price
	names  []string // sorted: the export order
}

// entry is a model's line of the file; nil: not given.
type entry struct {
	Input       *float64 `yaml:"input"`
	Output      *float64 `yaml:"output"`
	CachedInput *float64 `yaml:"cached_input"`
	Reasoning   *float64 `yaml:"reasoning"`
}

type file struct {
	Models map[string]entry `yaml:"models"`
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
// to input's price and reasoning to output's. A price is a finite number >= 0; an unknown key,
// an empty model name or two names that the metrics' rule makes one are errors.
func Parse(data []byte) (*Table, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) { // EOF: an empty file
		return nil, fmt.Errorf("not a price table (models: {MODEL: {input: USD, output: USD, cached_input: USD, reasoning: USD}}, USD per million tokens): %w", err)
	}
	if len(f.Models) == 0 {
		return nil, errors.New("models: no model priced")
	}
	if len(f.Models) > MaxModels {
		return nil, fmt.Errorf("models: %d models, at most %d", len(f.Models), MaxModels)
	}
	t := &Table{models: make(map[string]Price, len(f.Models))}
	keys := make([]string, 0, len(f.Models))
	for k := range f.Models {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	from := map[string]string{}
	for _, k := range keys {
		name := Model(k)
		if name == "" {
			errs = append(errs, errors.New("models: an empty model name"))
			continue
		}
		if prev, dup := from[name]; dup {
			errs = append(errs, fmt.Errorf("models: %q and %q are the same model as the metrics name it (%q)", prev, k, name))
			continue
		}
		from[name] = k
		p, err := f.Models[k].price()
		if err != nil {
			errs = append(errs, fmt.Errorf("models: %q: %w", k, err))
			continue
		}
		t.models[name] = p
		t.names = append(t.names, name)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.Strings(t.names)
	return t, nil
}

func (e entry) price() (Price, error) {
	var p Price
	var errs []error
	get := func(typ int, v, dflt *float64) {
		if v == nil {
			v = dflt
		}
		if v == nil {
			errs = append(errs, fmt.Errorf("%s: required", Types[typ]))
			return
		}
		if math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0 {
			errs = append(errs, fmt.Errorf("%s: %v is not a price (a finite number of USD per million tokens, 0 or more)", Types[typ], *v))
			return
		}
		p[typ] = *v
	}
	get(Input, e.Input, nil)
	get(Output, e.Output, nil)
	get(CachedInput, e.CachedInput, e.Input)
	get(Reasoning, e.Reasoning, e.Output)
	return p, errors.Join(errs...)
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
