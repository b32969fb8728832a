package live

import (
	"cmp"
	"math"
	"slices"

	"github.com/gym-telemetry/otelcol-gym/internal/prices"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// CostSection is a run's cost at the prices of the price series (gym.token.price_per_million,
// the gym receiver's `prices`), by internal/prices' one formula: the numbers of the gym.cost
// recording rules (gym:cost_usd:sum summed over the run's benchmarks, gym:cost_usd:by_model,
// gym:cost_unpriced_tokens:sum). Present when price series arrived.
type CostSection struct {
	USD     float64 `json:"usd"`
	ByModel []Count `json:"by_model"`
	// PerScoredRollout is USD over the run's scored rollouts; null while no model is priced or
	// nothing is scored.
	PerScoredRollout *float64 `json:"per_scored_rollout"`
	// Unpriced are the run-file tokens of models without a price (model "": none named), by
	// type: never priced by a guess, never in USD.
	Unpriced []TokenRow `json:"unpriced_tokens"`
	Prices   []Price    `json:"prices"`
}

// Price is one price series: USD per million tokens of a model and token type.
type Price struct {
	Model         string  `json:"model"`
	TokenType     string  `json:"token_type"`
	USDPerMillion float64 `json:"usd_per_million"`
}

// price is a model's price from the price series: every token type's, or false (the receiver
// exports all four of a priced model).
func (s *Store) price(model string) (prices.Price, bool) {
	var p prices.Price
	for i, typ := range prices.Types {
		v, ok := s.prices[priceKey{model, typ}]
		if !ok {
			return p, false
		}
		p[i] = v
	}
	return p, true
}

// cost prices the run's gym.rollout.tokens (by model and type) at the price series.
func (s *Store) cost(a *agg, scored float64) *CostSection {
	usage := map[string]prices.Tokens{}
	for k, t := range a.tokens {
		i, ok := prices.TypeIndex(k.typ)
		if !ok || t.Instrument != schema.Get(schema.GymRolloutTokens).Name {
			continue
		}
		u := usage[t.Model]
		u[i] += t.Tokens
		usage[t.Model] = u
	}
	c := &CostSection{ByModel: []Count{}, Unpriced: []TokenRow{}, Prices: []Price{}}
	for model, tok := range usage {
		p, ok := s.price(model)
		if !ok {
			for i, n := range tok {
				if n == 0 {
					continue
				}
				c.Unpriced = append(c.Unpriced, TokenRow{Instrument: schema.Get(schema.GymRolloutTokens).Name, Type: prices.Types[i], Model: model, Tokens: n})
			}
			continue
		}
		usd, exact := p.CostOK(tok)
		if !exact {
			usd = math.NaN() // a price past the table's bound: unknown (null), and so is the total
		}
		c.USD += usd
		c.ByModel = append(c.ByModel, Count{model, usd})
	}
	if len(c.ByModel) > 0 && scored > 0 {
		per := c.USD / scored
		c.PerScoredRollout = &per
	}
	slices.SortFunc(c.ByModel, func(x, y Count) int { return cmp.Or(cmp.Compare(y.Value, x.Value), cmp.Compare(x.Name, y.Name)) })
	slices.SortFunc(c.Unpriced, func(x, y TokenRow) int { return cmp.Or(cmp.Compare(x.Model, y.Model), cmp.Compare(x.Type, y.Type)) })
	for k, v := range s.prices {
		c.Prices = append(c.Prices, Price{Model: k.model, TokenType: k.tokenType, USDPerMillion: v})
	}
	slices.SortFunc(c.Prices, func(x, y Price) int {
		return cmp.Or(cmp.Compare(x.Model, y.Model), cmp.Compare(x.TokenType, y.TokenType))
	})
	return c
}
