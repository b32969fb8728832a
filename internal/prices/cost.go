package prices

import "slices"

// Tokens are token sums of one model, indexed like Price (Input, Output, Reasoning,
// CachedInput): reasoning is part of output, cached_input part of input.
type Tokens [NumTypes]float64

// TypeIndex is the index of a gen_ai.token.type value; false for another value.
func TypeIndex(name string) (int, bool) {
	for i, t := range Types {
		if t == name {
			return i, true
		}
	}
	return 0, false
}

// MaxTokens bounds a token count the formula takes: 2^63, above any count of the run files
// (an int64) and any sum of gymrun's (saturated at the largest int64).
const MaxTokens = 1 << 63

// MaxUSD bounds every cost the formula gives, either way: each of its four terms is at most
// MaxTokens·MaxPrice/1e6 USD (about 9.2e18), so a sum of the costs of many models stays a
// finite number too.
const MaxUSD = 4 * MaxTokens * MaxPrice / 1e6

// Cost is THE cost formula, in USD, of a model's token sums at its price (USD per million):
//
//	(input − cached_input)·input + cached_input·cached_input + (output − reasoning)·output + reasoning·reasoning
//
// It is linear, so the cost of sums is the sum of costs. deploy/prometheus/gym.rules.yaml
// computes the same from gym.rollout.tokens and gym.token.price_per_million
// (gym:cost_marginal_price:usd_per_million, gym:cost_usd:by_model); e2e's TestDashboardCost
// checks that they agree.
//
// It is always a finite number within ±MaxUSD, whatever its inputs: a price outside
// [0, MaxPrice] or a token count outside [0, MaxTokens] (a NaN, an infinity, a negative, a
// price series that no table gave) is taken at the nearest bound, NaN at the top. CostOK says
// when that happened.
func (p Price) Cost(t Tokens) float64 {
	usd, _ := p.CostOK(t)
	return usd
}

// CostOK is Cost and whether it is the formula's value of the inputs as given: false when an
// input was outside its bounds, and the cost is then not the data's (show it as unknown).
// Within the bounds no product or sum can overflow.
func (p Price) CostOK(t Tokens) (usd float64, ok bool) {
	ok = true
	for i := range NumTypes {
		var okP, okT bool
		p[i], okP = clamp(p[i], MaxPrice)
		t[i], okT = clamp(t[i], MaxTokens)
		ok = ok && okP && okT
	}
	return ((t[Input]-t[CachedInput])*p[Input] + t[CachedInput]*p[CachedInput] +
		(t[Output]-t[Reasoning])*p[Output] + t[Reasoning]*p[Reasoning]) / 1e6, ok
}

// clamp is v within [0, hi], and whether it was: a NaN is taken at hi.
func clamp(v, hi float64) (float64, bool) {
	switch {
	case v >= 0 && v <= hi:
		return v, true
	case v < 0:
		return 0, false
	}
	return hi, false
}

// Bill is the cost of token sums by model.
type Bill struct {
	USD      float64            // every priced model's cost
	ByModel  map[string]float64 // the cost of each priced model
	Unpriced map[string]Tokens  // the tokens of the models the table has no price for ("": no model named)
	// Inexact are the priced models whose cost is not the data's (CostOK false: a token sum
	// out of bounds), sorted; USD is not exact either when there is one.
	Inexact []string
}

// Bill prices usage (model as the metrics name it -> its token sums): the models the table
// prices into USD and ByModel, the others into Unpriced, never guessed.
func (t *Table) Bill(usage map[string]Tokens) Bill {
	b := Bill{ByModel: map[string]float64{}, Unpriced: map[string]Tokens{}}
	for model, tok := range usage {
		p, ok := t.Price(model)
		if !ok {
			b.Unpriced[model] = tok
			continue
		}
		c, exact := p.CostOK(tok)
		if !exact {
			b.Inexact = append(b.Inexact, model)
		}
		b.ByModel[model] = c
		b.USD += c
	}
	slices.Sort(b.Inexact)
	return b
}
