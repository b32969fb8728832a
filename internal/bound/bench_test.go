package bound

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// benchBatch is one export of a busy Gym driver through its SDK: 3,000 dispatch names on
// completed_total (free-text note per stream, more than the cardinality limit), failures
// with free-text reasons, and one cumulative histogram point per dispatch on rollout turns.
func benchBatch(k int) pmetric.Metrics {
	const n = 3000
	comp := make([]pt, 0, n+200)
	turns := make([]pt, 0, n)
	for d := range n {
		name := fmt.Sprintf("dispatch-%04d", d)
		comp = append(comp, pt{a: attrs{outcome: "scored", dispatch: name, "nemo.gym.note": "ok " + name}, start: 1, t: 60 * k, i: int64(k * (d%5 + 1))})
		turns = append(turns, hist(attrs{"batch.id": name}, 1, 60*k, rolloutCount, float64(10*k), 1, 9, uint64(k), 0, uint64(k)))
	}
	for r := range 200 {
		comp = append(comp, pt{a: attrs{outcome: "failed", dispatch: "math", fKind: "weird kind", fType: "TimeoutError",
			"failure_reason": fmt.Sprintf("read timed out after %ds", r)}, start: 1, t: 60 * k, i: int64(k)})
	}
	return newBatch().resource(driverRes).
		counter(completed, "1", comp...).
		histogram("gym.driver.rollout.turns", "{turn}", cumulative, turns...).md
}

// BenchmarkProcessBatch reports data points per second through the processor in steady
// state (every series already known), the batch copy excluded.
func BenchmarkProcessBatch(b *testing.B) {
	benchProcess(b, newTestProcessor(b, nil), benchBatch, true)
}

// BenchmarkProcessSDKBatch is the small mixed batch of the golden test (40 points, three
// resources, every rule).
func BenchmarkProcessSDKBatch(b *testing.B) {
	benchProcess(b, newTestProcessor(b, goldenConfig), sdkBatch, false)
}

// unknownBatch is export k of instruments the schema does not know (bounded by the generic
// rules): a cumulative counter and a cumulative histogram over 3,000 workers (more than the
// cardinality limit, so 1,001 fold into each overflow series), and a gauge per worker with a
// free-text note longer than the cap (capped at every batch).
func unknownBatch(k int) pmetric.Metrics {
	const n = 3000
	calls := make([]pt, 0, n)
	lat := make([]pt, 0, n)
	depth := make([]pt, 0, n)
	for w := range n {
		a := attrs{"worker.id": fmt.Sprintf("w%05d", w), "tool": "python"}
		calls = append(calls, pt{a: a, start: 1, t: 60 * k, i: int64(k * (w%5 + 1))})
		lat = append(lat, hist(a, 1, 60*k, []float64{1, 10, 100, 1000}, float64(10*k), 1, 9, uint64(k), 0, uint64(k)))
		depth = append(depth, pt{a: attrs{"worker.id": fmt.Sprintf("w%05d", w), "note": longNote}, t: 60 * k, i: int64(w)})
	}
	return newBatch().resource(driverRes).
		counter("gym.agent.tool_calls_total", "{call}", calls...).
		histogram("gym.agent.tool_latency_ms", "ms", cumulative, lat...).
		gauge("gym.agent.queue_depth", "{item}", depth...).md
}

var longNote = strings.Repeat("queue drained at step; ", 20) // 460 bytes

// BenchmarkProcessUnknownBatch is BenchmarkProcessBatch for instruments outside the schema
// (unknown_metrics: bound, the default).
func BenchmarkProcessUnknownBatch(b *testing.B) {
	benchProcess(b, newTestProcessor(b, nil), unknownBatch, true)
}

// benchProcess reports data points per second through tp, exports 1 and 2 of batch in turn
// (the batch copy excluded); warm first processes export 1 once, so that every series is
// known (steady state).
func benchProcess(b *testing.B, tp *testProcessor, batch func(int) pmetric.Metrics, warm bool) {
	batches := []pmetric.Metrics{batch(1), batch(2)}
	perBatch := batches[0].DataPointCount()
	if warm {
		md := pmetric.NewMetrics()
		batches[0].CopyTo(md)
		tp.run(b, md)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration // Process's own CPU time (the GC's on its behalf included)
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		md := pmetric.NewMetrics()
		batches[i%2].CopyTo(md)
		b.StartTimer()
		cpu0 := cpuTime()
		if _, err := tp.Process(context.Background(), md); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - cpu0
	}
	b.ReportMetric(float64(perBatch)*float64(b.N)/b.Elapsed().Seconds(), "points/s")
	// Per CPU-second: on a shared machine the wall clock says more about the neighbours.
	if cpu > 0 {
		b.ReportMetric(float64(perBatch)*float64(b.N)/cpu.Seconds(), "points/cpu-s")
	}
}

// cpuTime is the CPU time this process used (user and system, every thread).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
