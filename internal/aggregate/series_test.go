package aggregate

import (
	"math"
	"sort"
	"testing"
)

// bucketOf on orderedFloat keys is sort.SearchFloat64s on the floats.
func TestBucketOfIsSearchFloat64s(t *testing.T) {
	vals := []float64{math.Inf(-1), -1e300, -2, -1, -0.5, -1e-300, 0, 1e-300, 0.5, 1, 2, 1e300, math.Inf(1)}
	for _, x := range vals {
		for _, y := range vals {
			if (x < y) != (orderedFloat(x) < orderedFloat(y)) {
				t.Fatalf("order of %v and %v", x, y)
			}
		}
	}
	for n := range 40 {
		bounds := make([]float64, n)
		keys := make([]uint64, n)
		for i := range bounds {
			bounds[i] = float64(2*i) - 5
			keys[i] = orderedFloat(bounds[i])
		}
		for v := -8.0; v < float64(2*n); v += 0.5 {
			if got, want := bucketOf(keys, orderedFloat(v)), sort.SearchFloat64s(bounds, v); got != want {
				t.Fatalf("%d bounds, %v: bucket %d, want %d", n, v, got, want)
			}
		}
	}
}
