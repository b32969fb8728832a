package schema

import "fmt"

// MinCardinalityLimit is the least cardinality_limit: one series and the overflow series that
// takes every series over the limit.
const MinCardinalityLimit = 2

// CheckCardinalityLimit checks a `cardinality_limit` key (the gym receiver's, the gymattrs
// rules'), by the one rule and with the one message.
func CheckCardinalityLimit(n int) error {
	if n < MinCardinalityLimit {
		return fmt.Errorf("cardinality_limit: must be at least %d (one series and the overflow series), got %d", MinCardinalityLimit, n)
	}
	return nil
}
