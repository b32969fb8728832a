package prices

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

// Cost is THE cost formula, in USD, of a model's token sums at its price (USD per million):
//
//	(input − cached_input)·input + cached_input·cached_input + (output − reasoning)·output + reasoning·reasoning
//
// It is linear, so the cost of sums is the sum of costs. deploy/prometheus/gym.rules.yaml
// computes the same from gym.rollout.tokens and gym.token.price_per_million
// (gym:cost_marginal_price:usd_per_million, gym:cost_usd:by_model); e2e's TestDashboardCost
// checks that they agree.
func (p Price) Cost(t Tokens) float64 {
	return ((t[Input]-t[CachedInput])*p[Input] + t[CachedInput]*p[CachedInput] +
		(t[Output]-t[Reasoning])*p[Output] + t[Reasoning]*p[Reasoning]) / 1e6
}

// Bill is the cost of token sums by model.
type Bill struct {
	USD      float64            // every priced model's cost
	ByModel  map[string]float64 // the cost of each priced model
	Unpriced map[string]Tokens  // the tokens of the models the table has no price for ("": no model named)
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
		c := p.Cost(tok)
		b.ByModel[model] = c
		b.USD += c
	}
	return b
}
