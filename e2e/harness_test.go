//go:build linux

package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// Helpers of the transport, process-stats, gymattrs and reliability
// tests: a controllable OTLP sink, configurations from templates, line generators, and
// readers of the exports a sink received.

// lines returns n NDJSON lines of `rollout.completed` (outcome omitted: one count of
// gym.rollout.completed_total each) after a resource line naming service.name=service, each
// with a distinct unknown field (ignored by the receiver), so that no two files ever share
// their first bytes. With resource == false the resource line is left out.
func lines(service string, from, n int, resource bool) string {
	var b strings.Builder
	if resource {
		fmt.Fprintf(&b, `{"event":"resource","attributes":{"service.name":%q}}`+"\n", service)
	}
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, `{"event":"rollout.completed","outcome":"omitted","dispatch_name":"d%d","seq":"%s-%d"}`+"\n", i%3, service, i)
	}
	return b.String()
}

// completed sums gym.rollout.completed_total over the resources of md that match.
func completed(md pmetric.Metrics, match func(pcommon.Map) bool) (float64, bool) {
	return sumOf(md, "gym.rollout.completed_total", match)
}

// sumOf sums every point of the named Sum or Gauge metric (a histogram: its counts) over the
// resources of md that match; found reports whether any point was there.
func sumOf(md pmetric.Metrics, name string, match func(pcommon.Map) bool) (total float64, found bool) {
	for _, m := range metricsNamed(md, match, name) {
		for _, dp := range numberPoints(m).All() {
			found = true
			total += numberOf(dp)
		}
		for _, dp := range histogramPoints(m).All() {
			total += float64(dp.Count())
			found = true
		}
	}
	return total, found
}

// putAny puts a map of attribute values (string, int64, float64, bool), in the order of their
// keys.
func putAny(m pcommon.Map, a map[string]any) {
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if err := m.PutEmpty(k).FromRaw(a[k]); err != nil {
			panic(err)
		}
	}
}

// sdkScope appends to md a resource with the attributes and a scope of that name in it, as a
// Gym process's SDK export has, and returns the scope.
func sdkScope(md pmetric.Metrics, scope string, resource map[string]any) pmetric.ScopeMetrics {
	rm := md.ResourceMetrics().AppendEmpty()
	putAny(rm.Resource().Attributes(), resource)
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scope)
	return sm
}

// numberPoints are the points of a Sum or a Gauge (none of another type).
func numberPoints(m pmetric.Metric) pmetric.NumberDataPointSlice {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints()
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints()
	}
	return pmetric.NewNumberDataPointSlice()
}

// histogramPoints are the points of a Histogram (none of another type).
func histogramPoints(m pmetric.Metric) pmetric.HistogramDataPointSlice {
	if m.Type() == pmetric.MetricTypeHistogram {
		return m.Histogram().DataPoints()
	}
	return pmetric.NewHistogramDataPointSlice()
}

func numberOf(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

// service matches resources whose service.name is name.
func service(name string) func(pcommon.Map) bool {
	return func(m pcommon.Map) bool {
		v, ok := m.Get("service.name")
		return ok && v.Str() == name
	}
}

// attrIs matches resources with the attribute key equal to the string value.
func attrIs(key, value string) func(pcommon.Map) bool {
	return func(m pcommon.Map) bool {
		v, ok := m.Get(key)
		return ok && v.AsString() == value
	}
}

// waitCompleted waits until the newest export that holds gym.rollout.completed_total for the
// matching resources sums to want, and fails with the last value seen otherwise.
func waitCompleted(t *testing.T, sink *harness.OTLPSink, what string, match func(pcommon.Map) bool, want float64) {
	t.Helper()
	var got float64
	err := harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		got = latestCompleted(sink.Exports(), match)
		if got != want {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "%s: gym.rollout.completed_total is %v, want %v", what, got, want)
}

// latestCompleted is gym.rollout.completed_total of the matching resources in the last export
// that has it (-1 when none has).
func latestCompleted(exports []pmetric.Metrics, match func(pcommon.Map) bool) float64 {
	for i := len(exports) - 1; i >= 0; i-- {
		if v, ok := completed(exports[i], match); ok {
			return v
		}
	}
	return -1
}

// vmRSS reads a process's resident set size in bytes from /proc/<pid>/status.
func vmRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) != 2 || fields[1] != "kB" {
				return 0, fmt.Errorf("VmRSS line %q", sc.Text())
			}
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// metricsNamed yields every metric named name under the resources of md that match (nil:
// all), with its resource's attributes.
func metricsNamed(md pmetric.Metrics, match func(pcommon.Map) bool, name string) iter.Seq2[pcommon.Map, pmetric.Metric] {
	return func(yield func(pcommon.Map, pmetric.Metric) bool) {
		for _, rm := range md.ResourceMetrics().All() {
			resource := rm.Resource().Attributes()
			if match != nil && !match(resource) {
				continue
			}
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Name() == name && !yield(resource, m) {
						return
					}
				}
			}
		}
	}
}
