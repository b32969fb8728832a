package prices

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The indexes name the schema's gen_ai.token.type values.
func TestTypesAreTheSchemas(t *testing.T) {
	want := map[int]string{Input: "input", Output: "output", Reasoning: "reasoning", CachedInput: "cached_input"}
	require.Len(t, Types, NumTypes)
	for i, name := range want {
		assert.Equal(t, name, Types[i])
		got, ok := TypeIndex(name)
		assert.True(t, ok)
		assert.Equal(t, i, got)
	}
	_, ok := TypeIndex("total")
	assert.False(t, ok)
}

func TestCost(t *testing.T) {
	p := Price{Input: 2, Output: 8, CachedInput: 0.5, Reasoning: 10}
	for _, tc := range []struct {
		name string
		tok  Tokens
		want float64 // USD, worked out by hand
	}{
		{"nothing", Tokens{}, 0},
		{"a million input tokens", Tokens{Input: 1e6}, 2},
		{"a million output tokens", Tokens{Output: 1e6}, 8},
		// 1M input of which 400k cached: 600k at 2, 400k at 0.5.
		{"cached input is part of input", Tokens{Input: 1e6, CachedInput: 4e5}, 1.2 + 0.2},
		// 1M output of which 250k reasoning: 750k at 8, 250k at 10.
		{"reasoning is part of output", Tokens{Output: 1e6, Reasoning: 2.5e5}, 6 + 2.5},
		{"all four", Tokens{Input: 3000, CachedInput: 1000, Output: 500, Reasoning: 100}, (2000*2 + 1000*0.5 + 400*8 + 100*10) / 1e6},
		// The formula is linear: what the data says, never clamped (the rules compute the same).
		{"more cached than input", Tokens{Input: 100, CachedInput: 300}, (-200*2 + 300*0.5) / 1e6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, p.Cost(tc.tok), 1e-12)
		})
	}
	// Linear: the cost of a sum is the sum of the costs.
	a, b := Tokens{Input: 1234, CachedInput: 200, Output: 77, Reasoning: 7}, Tokens{Input: 1, Output: 99999, Reasoning: 5000}
	var sum Tokens
	for i := range sum {
		sum[i] = a[i] + b[i]
	}
	assert.InDelta(t, p.Cost(a)+p.Cost(b), p.Cost(sum), 1e-12)
}

// The formula's inputs are bounded: within them its result is exact and no product or sum
// overflows; outside them (a price series no table gave, a NaN) each input is taken at the
// nearest bound, the result is a finite number within ±MaxUSD, and CostOK says it is not the
// data's.
func TestCostBounded(t *testing.T) {
	top := Price{MaxPrice, MaxPrice, MaxPrice, MaxPrice}
	usd, ok := top.CostOK(Tokens{Input: MaxTokens, Output: MaxTokens})
	assert.True(t, ok, "the bounds themselves are inputs")
	assert.Equal(t, 2*MaxTokens*MaxPrice/1e6, usd)
	usd, ok = top.CostOK(Tokens{MaxTokens, MaxTokens, MaxTokens, MaxTokens})
	assert.True(t, ok)
	assert.Equal(t, 2*MaxTokens*MaxPrice/1e6, usd, "all cached and reasoning")
	for _, tc := range []struct {
		name string
		p    Price
		tok  Tokens
		want float64
	}{
		// 1.7e308 USD per million on a million tokens made +Inf: taken at MaxPrice.
		{"a huge finite price", Price{Input: 1.7e308, Output: 1}, Tokens{Input: 1e6}, MaxPrice},
		{"an infinite price", Price{Input: math.Inf(1), Output: 1}, Tokens{Input: 1e6}, MaxPrice},
		{"a NaN price", Price{Input: 1, Output: math.NaN()}, Tokens{Output: 1e6}, MaxPrice},
		{"a negative price", Price{Input: -3, Output: 1}, Tokens{Input: 1e6}, 0},
		{"a NaN token count", Price{Input: 1, Output: 1}, Tokens{Input: math.NaN()}, MaxTokens / 1e6},
		{"a huge token count", Price{Input: 2, Output: 1}, Tokens{Input: 1e300}, 2 * MaxTokens / 1e6},
		{"a negative token count", Price{Input: 1, Output: 1}, Tokens{Output: -1e6}, 0},
		{"everything at its worst", Price{math.Inf(1), math.NaN(), 1e308, -1}, Tokens{math.Inf(1), 1e308, math.NaN(), math.Inf(-1)}, 2 * MaxTokens * MaxPrice / 1e6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			usd, ok := tc.p.CostOK(tc.tok)
			assert.False(t, ok)
			assert.Equal(t, tc.want, usd)
			assert.Equal(t, usd, tc.p.Cost(tc.tok), "Cost is CostOK's number")
			assert.LessOrEqual(t, math.Abs(usd), MaxUSD)
		})
	}
	// The least the formula gives within the bounds: more cached than input at its dearest.
	usd, ok = Price{Input: MaxPrice, Output: MaxPrice}.CostOK(Tokens{CachedInput: MaxTokens, Reasoning: MaxTokens})
	assert.True(t, ok)
	assert.Equal(t, -2*MaxTokens*MaxPrice/1e6, usd)
	assert.GreaterOrEqual(t, usd, -MaxUSD)
}

func TestParseDefaults(t *testing.T) {
	tab, err := Parse([]byte(`# USD per million tokens
models:
  gpt-4.1-mini: {input: 0.40, output: 1.60, cached_input: 0.10}
  o4-mini: {input: 1.1, output: 4.4, reasoning: 5}
  free: {input: 0, output: 0}
`))
	require.NoError(t, err)
	assert.Equal(t, []string{"free", "gpt-4.1-mini", "o4-mini"}, tab.Models())
	p, ok := tab.Price("gpt-4.1-mini")
	require.True(t, ok)
	assert.Equal(t, Price{Input: 0.40, Output: 1.60, CachedInput: 0.10, Reasoning: 1.60}, p, "reasoning at output's price")
	p, _ = tab.Price("o4-mini")
	assert.Equal(t, Price{Input: 1.1, Output: 4.4, CachedInput: 1.1, Reasoning: 5}, p, "cached_input at input's price")
	_, ok = tab.Price("gpt-4.1")
	assert.False(t, ok, "a model not in the table has no price")
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("m", schema.Attr(schema.AttrGenAiResponseModel).MaxBytes)
	for _, tc := range []struct{ name, yaml, want string }{
		{"empty", ``, "no model priced"},
		{"no models", "models: {}\n", "no model priced"},
		{"unknown top-level key", "models: {a: {input: 1, output: 1}}\ncurrency: EUR\n", "currency: unknown key at line 2"},
		{"unknown price key", "models: {a: {input: 1, output: 1, total: 3}}\n", `"a": total: unknown key at line 1`},
		{"negative", "models: {a: {input: -1, output: 1}}\n", `"a": input: -1 is not a price`},
		{"NaN", "models: {a: {input: 1, output: .nan}}\n", `"a": output: NaN is not a price`},
		{"infinite", "models: {a: {input: 1, output: 1, reasoning: .inf}}\n", `"a": reasoning: +Inf is not a price`},
		{"a string", "models: {a: {input: cheap, output: 1}}\n", `"a": input: "cheap" is not a price at line 1`},
		{"too large", "models: {a: {input: 1, output: 1.7e308}}\n", `"a": output: 1.7e+308 is not a price at line 1`},
		{"a mapping", "models: {a: {input: {usd: 1}, output: 1}}\n", `"a": input: a mapping is not a price at line 1`},
		{"a model not a mapping", "models: {a: 3}\n", `"a": "3" at line 1, not a mapping`},
		{"input missing", "models: {a: {output: 1}}\n", `"a": input: required`},
		{"output missing", "models: {a: {input: 1, reasoning: 2}}\n", `"a": output: required`},
		{"empty name", "models: {\"\": {input: 1, output: 1}}\n", "an empty model name"},
		{"the same model once cut", "models: {" + long + "x: {input: 1, output: 1}, " + long + "y: {input: 2, output: 2}}\n", "are the same model as the metrics name it"},
		{"duplicate model", "models:\n  a: {input: 1, output: 1}\n  a: {input: 2, output: 2}\n", `models: "a": already defined at line 2, again at line 3`},
		{"duplicate key", "models:\n  a: {input: 1, output: 1, input: 2}\n", `models: "a": input: already defined at line 2, again at line 2`},
		{"not a mapping", "models: [a, b]\n", "models: a list at line 1, not a mapping"},
		{"not a table", "[models]\n", "not a price table"},
		{"not YAML", "models: {a: [}\n", "not a price table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	var b strings.Builder
	b.WriteString("models:\n")
	for i := range MaxModels + 1 {
		b.WriteString("  m" + strings.Repeat("0", 3) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": {input: 1, output: 1}\n")
	}
	_, err := Parse([]byte(b.String()))
	require.ErrorContains(t, err, "at most 256")
}

// Every error names the model and the key as the file has them, with the line; a bad input
// price is reported once, against input, not against the cached_input that defaults to it.
func TestParseErrorsNameModelKeyLine(t *testing.T) {
	_, err := Parse([]byte(`models:
  cheap-model:
    input: cheap
    output: 1
  huge:
    input: 1
    output: 1.7e308
  negative: {input: -1, output: 2}
  missing: {reasoning: 1}
`))
	require.Error(t, err)
	assert.Equal(t, []string{
		`models: "cheap-model": input: "cheap" is not a price at line 3 (a number of USD per million tokens, from 0 to 1000000)`,
		`models: "huge": output: 1.7e+308 is not a price at line 7 (a number of USD per million tokens, from 0 to 1000000)`,
		`models: "negative": input: -1 is not a price at line 8 (a number of USD per million tokens, from 0 to 1000000)`,
		`models: "missing": input: required (the model at line 9)`,
		`models: "missing": output: required (the model at line 9)`,
	}, strings.Split(err.Error(), "\n"), "in the order of their lines, each once")
	assert.NotContains(t, err.Error(), "cached_input", "never a key the user did not write")
	assert.NotContains(t, err.Error(), "reasoning")
}

// A price is a number from 0 to MaxPrice: the bound itself is a price, the next float above it
// is not; -0 is 0.
func TestParseBounds(t *testing.T) {
	tab, err := Parse([]byte("models: {a: {input: 1e6, output: -0, cached_input: 0x10, reasoning: 1_000}}\n"))
	require.NoError(t, err)
	p, _ := tab.Price("a")
	assert.Equal(t, Price{Input: MaxPrice, Output: 0, CachedInput: 16, Reasoning: 1000}, p)
	assert.False(t, math.Signbit(p[Output]))
	_, err = Parse([]byte(fmt.Sprintf("models: {a: {input: %v, output: 1}}\n", math.Nextafter(MaxPrice, math.Inf(1)))))
	require.ErrorContains(t, err, `"a": input: 1.0000000000000001e+06 is not a price at line 1`)
	_, err = Parse([]byte("models: {a: {input: 1e400, output: 1}}\n")) // beyond float64: a string to YAML
	require.ErrorContains(t, err, `"a": input: "1e400" is not a price`)
}

// Anchors, aliases and merge keys read as YAML reads them: a model's own keys win over merged
// ones; null is not given (the default applies).
func TestParseMerge(t *testing.T) {
	tab, err := Parse([]byte(`models:
  a: &std {input: 1, output: 2, cached_input: 0.5}
  b: {<<: *std, output: 3, cached_input: ~}
  c: *std
  d: {<<: [*std, {reasoning: 9}], input: 4}
`))
	require.NoError(t, err)
	get := func(m string) Price { p, _ := tab.Price(m); return p }
	assert.Equal(t, Price{Input: 1, Output: 2, CachedInput: 0.5, Reasoning: 2}, get("a"))
	assert.Equal(t, Price{Input: 1, Output: 3, CachedInput: 1, Reasoning: 3}, get("b"), "null: at input's price")
	assert.Equal(t, get("a"), get("c"))
	assert.Equal(t, Price{Input: 4, Output: 2, CachedInput: 0.5, Reasoning: 9}, get("d"))
	_, err = Parse([]byte("models:\n  a: &x {input: -5, output: 1}\n  b: {<<: *x, output: 2}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `models: "b": input: -5 is not a price at line 2`, "the line where the value is written")
	_, err = Parse([]byte("models:\n  a: {<<: 3, input: 1, output: 1}\n"))
	require.ErrorContains(t, err, `models: "a": merge key (<<) of "3" at line 2`)
}

// A key is the model as the metrics' label has it: capped as gen_ai.response.model is.
func TestModelNormalised(t *testing.T) {
	max := schema.Attr(schema.AttrGenAiResponseModel).MaxBytes
	long := strings.Repeat("é", max) // 2 bytes a rune: cut at a rune boundary
	tab, err := Parse([]byte("models: {" + long + ": {input: 1, output: 2}}\n"))
	require.NoError(t, err)
	require.Len(t, tab.Models(), 1)
	assert.Equal(t, long[:max], tab.Models()[0])
	assert.Equal(t, long[:max], Model(long))
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "prices.yaml")
	require.NoError(t, os.WriteFile(good, []byte("models: {m: {input: 1, output: 2}}\n"), 0o600))
	tab, err := Load(good)
	require.NoError(t, err)
	assert.Equal(t, []string{"m"}, tab.Models())

	_, err = Load(filepath.Join(dir, "missing.yaml"))
	require.ErrorContains(t, err, "missing.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("models: {m: {input: -1, output: 2}}\n"), 0o600))
	_, err = Load(bad)
	require.ErrorContains(t, err, bad+`: models: "m": input: -1 is not a price at line 1`)
	huge := filepath.Join(dir, "huge.yaml")
	require.NoError(t, os.WriteFile(huge, make([]byte, maxFileBytes+1), 0o600))
	_, err = Load(huge)
	require.ErrorContains(t, err, "larger than")
}

func TestBill(t *testing.T) {
	tab, err := Parse([]byte("models: {a: {input: 1, output: 2}, b: {input: 3, output: 4, cached_input: 1}}\n"))
	require.NoError(t, err)
	bill := tab.Bill(map[string]Tokens{
		"a":       {Input: 1e6, Output: 5e5},
		"b":       {Input: 2e6, CachedInput: 1e6, Output: 1e6, Reasoning: 1e5},
		"unknown": {Input: 10},
		"":        {Output: 3},
	})
	pa, _ := tab.Price("a")
	pb, _ := tab.Price("b")
	assert.InDelta(t, 1+1.0, bill.ByModel["a"], 1e-12)
	assert.InDelta(t, 3+1+4*0.9+4*0.1, bill.ByModel["b"], 1e-12)
	assert.InDelta(t, pa.Cost(Tokens{Input: 1e6, Output: 5e5})+pb.Cost(Tokens{Input: 2e6, CachedInput: 1e6, Output: 1e6, Reasoning: 1e5}), bill.USD, 1e-12)
	assert.Len(t, bill.ByModel, 2)
	assert.Equal(t, map[string]Tokens{"unknown": {Input: 10}, "": {Output: 3}}, bill.Unpriced, "counted apart, never priced")
	assert.Empty(t, bill.Inexact)

	// A token sum out of bounds: the model's cost is bounded, and said not to be the data's.
	bill = tab.Bill(map[string]Tokens{"a": {Input: math.Inf(1)}, "b": {Input: 1e6}})
	assert.Equal(t, []string{"a"}, bill.Inexact)
	assert.Equal(t, MaxTokens/1e6, bill.ByModel["a"])
	assert.False(t, math.IsInf(bill.USD, 0))
}

func TestSeries(t *testing.T) {
	tab, err := Parse([]byte("models: {b: {input: 3, output: 4, cached_input: 1}, a: {input: 1, output: 2}}\n"))
	require.NoError(t, err)
	collector := pcommon.NewResource()
	collector.Attributes().PutStr("service.name", "otelcol-gym")
	collector.Attributes().PutStr("service.instance.id", "inst-1")
	s := NewSeries(tab, "/etc/otelcol-gym/prices.yaml", collector, "scope", "v1")
	require.Equal(t, 8, s.Points())
	md := pmetric.NewMetrics()
	s.AppendTo(md, pcommon.Timestamp(42))
	s.AppendTo(md, pcommon.Timestamp(43)) // a second collection: another copy, the first untouched
	require.Equal(t, 2, md.ResourceMetrics().Len())
	for i, ts := range []pcommon.Timestamp{42, 43} {
		rm := md.ResourceMetrics().At(i)
		assert.Equal(t, map[string]any{"gym.source": "prices", "log.file.path": "/etc/otelcol-gym/prices.yaml", "service.instance.id": "inst-1"}, rm.Resource().Attributes().AsRaw())
		sm := rm.ScopeMetrics().At(0)
		assert.Equal(t, "scope", sm.Scope().Name())
		m := sm.Metrics().At(0)
		assert.Equal(t, "gym.token.price_per_million", m.Name())
		assert.Equal(t, "{USD}", m.Unit())
		got := map[string]float64{}
		for j := 0; j < m.Gauge().DataPoints().Len(); j++ {
			dp := m.Gauge().DataPoints().At(j)
			assert.Equal(t, ts, dp.Timestamp())
			a := dp.Attributes().AsRaw()
			assert.Len(t, a, 2)
			got[a["gen_ai.response.model"].(string)+"/"+a["gen_ai.token.type"].(string)] = dp.DoubleValue()
		}
		assert.Equal(t, map[string]float64{
			"a/input": 1, "a/output": 2, "a/reasoning": 2, "a/cached_input": 1,
			"b/input": 3, "b/output": 4, "b/reasoning": 4, "b/cached_input": 1,
		}, got)
	}
	// Without an instance id the resource has none.
	md = pmetric.NewMetrics()
	NewSeries(tab, "p.yaml", pcommon.NewResource(), "scope", "v1").AppendTo(md, 1)
	_, has := md.ResourceMetrics().At(0).Resource().Attributes().Get("service.instance.id")
	assert.False(t, has)
}

// The example table shipped beside the default configuration is a valid table.
func TestExampleTable(t *testing.T) {
	tab, err := Load(filepath.Join("..", "..", "config", "prices.example.yaml"))
	require.NoError(t, err)
	assert.NotEmpty(t, tab.Models())
}
