// Package pdatatest walks the metrics of a batch for the tests of the engine and the
// components: every metric, whatever its resource and scope.
package pdatatest

import (
	"iter"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Metrics yields every metric of md, resource by resource, scope by scope.
func Metrics(md pmetric.Metrics) iter.Seq[pmetric.Metric] {
	return func(yield func(pmetric.Metric) bool) {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if !yield(m) {
						return
					}
				}
			}
		}
	}
}

// Named returns every metric of md called name.
func Named(md pmetric.Metrics, name string) []pmetric.Metric {
	var out []pmetric.Metric
	for m := range Metrics(md) {
		if m.Name() == name {
			out = append(out, m)
		}
	}
	return out
}

// Metric returns the first metric of md called name; the test fails without one.
func Metric(t testing.TB, md pmetric.Metrics, name string) pmetric.Metric {
	t.Helper()
	if ms := Named(md, name); len(ms) > 0 {
		return ms[0]
	}
	t.Fatalf("no metric %s", name)
	return pmetric.Metric{}
}
