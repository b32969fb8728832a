package live

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCost: a run's tokens priced at the price series by the one formula; a model without a
// price (or with some of its types only) and tokens naming no model are apart, never priced.
func TestCost(t *testing.T) {
	s, _ := newTestStore(DefaultLimits())
	b := newBatch()
	drv := b.resource(serverRes("r1", "driver")...)
	sum(drv, "gym.rollout.completed_total", 7, false, "nemo.gym.rollout.outcome", "scored", "nemo.gym.rollout.dispatch.name", "math")
	tokens := func(typ, model string, n float64) {
		attrs := []string{"gen_ai.token.type", typ, "nemo.gym.rollout.dispatch.name", "math"}
		if model != "" {
			attrs = append(attrs, "gen_ai.response.model", model)
		}
		hist(drv, "gym.rollout.tokens", []float64{1e6}, []uint64{1, 0}, n, attrs...)
	}
	tokens("input", "m1", 1500)
	tokens("cached_input", "m1", 300)
	tokens("output", "m1", 900)
	tokens("reasoning", "m1", 200)
	tokens("output", "m2", 40)
	tokens("output", "", 5)
	prices := b.resource()
	for typ, p := range map[string]float64{"input": 2, "cached_input": 0.5, "output": 8, "reasoning": 10} {
		gauge(prices, PriceMetric, p, "gen_ai.response.model", "m1", "gen_ai.token.type", typ)
	}
	gauge(prices, PriceMetric, 1, "gen_ai.response.model", "m2", "gen_ai.token.type", "input") // m2: input only
	s.Consume(b.md)

	v := s.Run("r1")
	require.NotNil(t, v)
	require.NotNil(t, v.Cost)
	// (1500 − 300)·2 + 300·0.5 + (900 − 200)·8 + 200·10 = 10150 USD per million tokens.
	want := 10150.0 / 1e6
	assert.InDelta(t, want, v.Cost.USD, 1e-12)
	require.Len(t, v.Cost.ByModel, 1)
	assert.Equal(t, "m1", v.Cost.ByModel[0].Name)
	require.NotNil(t, v.Cost.PerScoredRollout)
	assert.InDelta(t, want/7, *v.Cost.PerScoredRollout, 1e-12)
	assert.Equal(t, []TokenRow{
		{Instrument: "gym.rollout.tokens", Type: "output", Model: "", Tokens: 5},
		{Instrument: "gym.rollout.tokens", Type: "output", Model: "m2", Tokens: 40},
	}, v.Cost.Unpriced)
	assert.Len(t, v.Cost.Prices, 5)
}

// TestCostPastThePriceBound: a price series past the price table's bound (a sender's, not a
// table's: 1.7e308 USD per million tokens) makes that model's cost and the total unknown (null
// in the API), never +Inf or a clamped figure shown as the data's.
func TestCostPastThePriceBound(t *testing.T) {
	s, _ := newTestStore(DefaultLimits())
	b := newBatch()
	drv := b.resource(serverRes("r1", "driver")...)
	hist(drv, "gym.rollout.tokens", []float64{1e6}, []uint64{1, 0}, 1e6, "gen_ai.token.type", "input", "nemo.gym.rollout.dispatch.name", "math", "gen_ai.response.model", "m1")
	prices := b.resource()
	for typ, p := range map[string]float64{"input": 1e15, "cached_input": 1, "output": 1, "reasoning": 1} {
		gauge(prices, PriceMetric, p, "gen_ai.response.model", "m1", "gen_ai.token.type", typ)
	}
	s.Consume(b.md)
	v := s.Run("r1")
	require.NotNil(t, v)
	require.NotNil(t, v.Cost)
	out, err := json.Marshal(v.Cost)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"usd":null`)
	assert.Contains(t, string(out), `{"name":"m1","value":null}`)
}

// TestUnknownReadsBackAsUnknown: a reader of the API (gymrun top) decodes a null value or cost
// as NaN, never as 0.
func TestUnknownReadsBackAsUnknown(t *testing.T) {
	in := CostSection{USD: math.NaN(), ByModel: []Count{{"m", math.Inf(1)}, {"n", 2}}, Unpriced: []TokenRow{}, Prices: []Price{}}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	var out CostSection
	require.NoError(t, json.Unmarshal(b, &out))
	assert.True(t, math.IsNaN(out.USD))
	assert.True(t, math.IsNaN(out.ByModel[0].Value))
	assert.Equal(t, 2.0, out.ByModel[1].Value)
}
