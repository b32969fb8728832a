package live

import (
	"encoding/json"
	"math"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// MaxValue bounds the magnitude of every number the store keeps: 2^53, below which every
// integer is exact in a float64 and in the page's JavaScript. A point beyond it, or one that is
// NaN or ±Inf (encoding/json cannot write them, and a NaN made every answer fail), is
// rejected and counted, and its series keeps its last good value. Every number the API then
// computes is a sum of at most max_series such values per run, or a mean or quantile of them:
// finite by construction.
const MaxValue = 1 << 53

// Rejected counts the points a batch had that the store did not take: NonFinite (a value, sum
// or bound that is NaN or ±Inf), OutOfRange (a magnitude past MaxValue, a total a delta would
// carry past it, a negative price, a histogram whose buckets do not match its bounds).
type Rejected struct {
	NonFinite  uint64
	OutOfRange uint64
}

type verdict uint8

const (
	valid verdict = iota
	nonFinite
	outOfRange
)

func check(v float64) verdict {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return nonFinite
	case math.Abs(v) > MaxValue:
		return outOfRange
	}
	return valid
}

// checkHistogram reads a histogram point's shape: finite increasing bounds, one more bucket
// than bounds (or no buckets at all), counts and sum within MaxValue.
func checkHistogram(dp pmetric.HistogramDataPoint) verdict {
	if v := check(dp.Sum()); v != valid {
		return v
	}
	eb, bc := dp.ExplicitBounds(), dp.BucketCounts()
	for i := 0; i < eb.Len(); i++ {
		if v := check(eb.At(i)); v != valid {
			return v
		}
		if i > 0 && eb.At(i) <= eb.At(i-1) {
			return outOfRange
		}
	}
	if bc.Len() != 0 && bc.Len() != eb.Len()+1 {
		return outOfRange
	}
	if dp.Count() > MaxValue {
		return outOfRange
	}
	for i := 0; i < bc.Len(); i++ {
		if bc.At(i) > MaxValue {
			return outOfRange
		}
	}
	return valid
}

// reject counts a point the store did not take.
func (s *Store) reject(v verdict) {
	switch v {
	case nonFinite:
		s.dropped.NonFinite++
		s.batch.NonFinite++
	case outOfRange:
		s.dropped.OutOfRange++
		s.batch.OutOfRange++
	}
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// finitePtr is p, or nil (unknown: null in the API, "–" on the page) when *p is not finite.
func finitePtr(p *float64) *float64 {
	if p == nil || !isFinite(*p) {
		return nil
	}
	return p
}

// num is a number that the API writes null when it is not finite: for the numbers computed by
// formulas outside this package (the cost's), which the store's bounds do not cover.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	if !isFinite(float64(n)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

// UnmarshalJSON reads null as NaN (unknown), so that a reader of the API (gymrun top) never
// takes an unknown number for 0.
func (n *num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = num(math.NaN())
		return nil
	}
	return json.Unmarshal(b, (*float64)(n))
}

// UnmarshalJSON reads a null value as NaN.
func (c *Count) UnmarshalJSON(b []byte) error {
	var v struct {
		Name  string `json:"name"`
		Value num    `json:"value"`
	}
	err := json.Unmarshal(b, &v)
	c.Name, c.Value = v.Name, float64(v.Value)
	return err
}

// UnmarshalJSON reads a null cost as NaN.
func (c *CostSection) UnmarshalJSON(b []byte) error {
	var v struct {
		USD              num        `json:"usd"`
		ByModel          []Count    `json:"by_model"`
		PerScoredRollout *float64   `json:"per_scored_rollout"`
		Unpriced         []TokenRow `json:"unpriced_tokens"`
		Prices           []Price    `json:"prices"`
	}
	err := json.Unmarshal(b, &v)
	*c = CostSection{USD: float64(v.USD), ByModel: v.ByModel, PerScoredRollout: v.PerScoredRollout, Unpriced: v.Unpriced, Prices: v.Prices}
	return err
}

// MarshalJSON writes a value that is not finite as null.
func (c Count) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name  string `json:"name"`
		Value num    `json:"value"`
	}{c.Name, num(c.Value)})
}

// MarshalJSON writes a cost that is not finite as null.
func (c CostSection) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		USD              num        `json:"usd"`
		ByModel          []Count    `json:"by_model"`
		PerScoredRollout *float64   `json:"per_scored_rollout"`
		Unpriced         []TokenRow `json:"unpriced_tokens"`
		Prices           []Price    `json:"prices"`
	}{num(c.USD), c.ByModel, finitePtr(c.PerScoredRollout), c.Unpriced, c.Prices})
}
