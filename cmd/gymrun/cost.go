package main

// The cost of each benchmark at the user's prices (`summary --prices FILE`): the benchmark's
// token sums by model, billed by internal/prices (the formula the cost rules compute too).

import (
	"fmt"
	"io"
	"math"

	"github.com/gym-telemetry/otelcol-gym/internal/prices"
)

// Cost is a benchmark's cost in USD (as the gym.cost rules give it: per scored rollout only
// where a model is priced, the reward per USD only where the cost is not 0). Models the table
// has no price for cost nothing here: their tokens are in UnpricedModels (model, type ->
// tokens), never priced by a guess. A model whose token sum saturated (overflow.go) has an
// unknown cost: null, and so are the benchmark's usd and what is divided by it.
type Cost struct {
	USD              *float64                    `json:"usd"`
	ByModel          map[string]*float64         `json:"by_model"`
	PerScoredRollout *float64                    `json:"per_scored_rollout"` // null without a scored rollout
	RewardPerUSD     *float64                    `json:"reward_per_usd"`     // reward.sum / usd; null when usd is 0
	UnpricedModels   map[string]map[string]int64 `json:"unpriced_models"`
}

// cost bills br's tokens (b's sums) at t's prices; what is unknown is named in o.
func cost(t *prices.Table, br *BenchReport, b *bench, o *overflows) *Cost {
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
	// A saturated sum is less than the tokens: the cost it gives is not the cost. (The table's
	// prices and the saturated sums are within the formula's bounds: Inexact stays empty.)
	unknown := map[string]bool{}
	for k := range b.satTokens {
		unknown[label(k[1])] = true
	}
	for _, m := range bill.Inexact {
		unknown[m] = true
	}
	c := &Cost{ByModel: map[string]*float64{}, UnpricedModels: map[string]map[string]int64{}}
	known := true
	for _, m := range sortedNames(bill.ByModel) {
		usd := bill.ByModel[m]
		if unknown[m] {
			c.ByModel[m], known = nil, false
			o.prices = append(o.prices, pointer("benchmarks", o.bench, "cost", "by_model", m))
			continue
		}
		c.ByModel[m] = &usd
	}
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
	if !known {
		o.prices = append(o.prices, pointer("benchmarks", o.bench, "cost", "usd"))
		if br.Scored > 0 {
			o.prices = append(o.prices, pointer("benchmarks", o.bench, "cost", "per_scored_rollout"))
		}
		o.prices = append(o.prices, pointer("benchmarks", o.bench, "cost", "reward_per_usd"))
		return c
	}
	c.USD = &bill.USD
	if br.Scored > 0 && len(c.ByModel) > 0 { // nothing priced: no cost to share out
		c.PerScoredRollout = o.num(bill.USD/float64(br.Scored), &o.prices, "cost", "per_scored_rollout")
	}
	if bill.USD > 0 {
		// A tiny cost (prices near 0) can make the ratio overflow; an unknown reward sum leaves
		// it unknown.
		ratio := math.NaN()
		if br.Reward.Sum != nil {
			ratio = *br.Reward.Sum / bill.USD
		}
		c.RewardPerUSD = o.num(ratio, &o.prices, "cost", "reward_per_usd")
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
// scored rollout and the reward per USD, the total, and the tokens without a price. An
// unknown number is "-" (the overflow section names it).
func writeCost(w io.Writer, r Report, names []string) {
	var lines, unpriced []string
	total := 0.0
	for _, n := range names {
		c := r.Benchmarks[n].Cost
		if c == nil {
			return // no --prices
		}
		if c.USD == nil {
			total = math.NaN() // unknown: shown as "-"
		} else {
			total += *c.USD
		}
		lines = append(lines, fmt.Sprintf("  %s\t\t%s\tper scored rollout %s\treward per USD %s\t",
			n, usd(c.USD), usd(c.PerScoredRollout), num("%.4f", c.RewardPerUSD)))
		for _, m := range sortedNames(c.ByModel) {
			lines = append(lines, fmt.Sprintf("  %s\t%s\t%s\t\t\t", n, m, usd(c.ByModel[m])))
		}
		for _, m := range sortedNames(c.UnpricedModels) {
			for _, t := range sortedNames(c.UnpricedModels[m]) {
				unpriced = append(unpriced, fmt.Sprintf("  %s\t%s\t%s\t%d\t", n, m, t, c.UnpricedModels[m][t]))
			}
		}
	}
	var all *float64
	if finite(total) {
		all = &total
	}
	lines = append(lines, fmt.Sprintf("  total\t\t%s\t\t\t", usd(all)))
	section(w, "\ncost (USD; benchmark, model):", lines)
	section(w, "\ntokens without a price, not in the cost (benchmark, model, type):", unpriced)
}

// usd shows an amount of USD, "-" when unknown.
func usd(v *float64) string { return num("%.6f", v) }
