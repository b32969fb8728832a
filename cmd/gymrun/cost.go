package main

// The cost of each benchmark at the user's prices (`summary --prices FILE`): the benchmark's
// token sums by model, billed by internal/prices (the formula the cost rules compute too).

import (
	"fmt"
	"io"

	"github.com/gym-telemetry/otelcol-gym/internal/prices"
)

// Cost is a benchmark's cost in USD (as the gym.cost rules give it: per scored rollout only
// where a model is priced, the reward per USD only where the cost is not 0). Models the table has no price for cost nothing here:
// their tokens are in UnpricedModels (model, type -> tokens), never priced by a guess.
type Cost struct {
	USD              float64                     `json:"usd"`
	ByModel          map[string]float64          `json:"by_model"`
	PerScoredRollout *float64                    `json:"per_scored_rollout"` // null without a scored rollout
	RewardPerUSD     *float64                    `json:"reward_per_usd"`     // reward.sum / usd; null when usd is 0
	UnpricedModels   map[string]map[string]int64 `json:"unpriced_models"`
}

// cost bills br's tokens at t's prices.
func cost(t *prices.Table, br *BenchReport) *Cost {
	usage := map[string]prices.Tokens{}
	for typ, models := range br.Tokens {
		i, ok := prices.TypeIndex(typ)
		if !ok {
			continue // the summary's types are the schema's
		}
		for m, n := range models {
			tok := usage[label(m)]
			tok[i] += float64(n)
			usage[label(m)] = tok
		}
	}
	bill := t.Bill(usage)
	c := &Cost{USD: bill.USD, ByModel: bill.ByModel, UnpricedModels: map[string]map[string]int64{}}
	for typ, models := range br.Tokens {
		for m, n := range models {
			if _, unpriced := bill.Unpriced[label(m)]; unpriced {
				if c.UnpricedModels[m] == nil {
					c.UnpricedModels[m] = map[string]int64{}
				}
				c.UnpricedModels[m][typ] = n
			}
		}
	}
	if br.Scored > 0 && len(c.ByModel) > 0 { // nothing priced: no cost to share out

		v := c.USD / float64(br.Scored)
		c.PerScoredRollout = &v
	}
	if c.USD > 0 {
		v := br.Reward.Sum / c.USD
		c.RewardPerUSD = &v
	}
	return c
}

// label is the summary's model name as the metrics' label has it: none for absent.
func label(model string) string {
	if model == absent {
		return ""
	}
	return model
}

// writeCost writes the cost section of the text form: each benchmark's cost, by model, per
// scored rollout and the reward per USD, the total, and the tokens without a price.
func writeCost(w io.Writer, r Report, names []string) {
	var lines, unpriced []string
	total := 0.0
	for _, n := range names {
		c := r.Benchmarks[n].Cost
		if c == nil {
			return // no --prices
		}
		total += c.USD
		per, rpu := "-", "-"
		if c.PerScoredRollout != nil {
			per = fmt.Sprintf("%.6f", *c.PerScoredRollout)
		}
		if c.RewardPerUSD != nil {
			rpu = fmt.Sprintf("%.4f", *c.RewardPerUSD)
		}
		lines = append(lines, fmt.Sprintf("  %s\t\t%.6f\tper scored rollout %s\treward per USD %s\t", n, c.USD, per, rpu))
		for _, m := range sortedNames(c.ByModel) {
			lines = append(lines, fmt.Sprintf("  %s\t%s\t%.6f\t\t\t", n, m, c.ByModel[m]))
		}
		for _, m := range sortedNames(c.UnpricedModels) {
			for _, t := range sortedNames(c.UnpricedModels[m]) {
				unpriced = append(unpriced, fmt.Sprintf("  %s\t%s\t%s\t%d\t", n, m, t, c.UnpricedModels[m][t]))
			}
		}
	}
	lines = append(lines, fmt.Sprintf("  total\t\t%.6f\t\t\t", total))
	section(w, "\ncost (USD; benchmark, model):", lines)
	section(w, "\ntokens without a price, not in the cost (benchmark, model, type):", unpriced)
}
