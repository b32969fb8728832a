package live

import (
	"fmt"
	"net/http"
	"runtime"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/clock"
)

// benchBatch is one export of a busy run: servers servers, each with the instruments the page
// reads (rollouts by outcome, kind and benchmark, rewards, tokens, model calls, event loop, GC,
// memory, CPU, GPU), and the flight recorder's in-flight series.
func benchBatch(run string, servers int) (pmetric.Metrics, int) {
	b := newBatch()
	lag := []float64{0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000}
	counts := make([]uint64, len(lag)+1)
	for i := range counts {
		counts[i] = uint64(i)
	}
	for s := range servers {
		ms := b.resource(serverRes(run, fmt.Sprintf("server-%d", s))...)
		for _, d := range []string{"math", "code"} {
			sum(ms, "gym.rollout.completed_total", 100, false, "nemo.gym.rollout.outcome", "scored", "nemo.gym.rollout.dispatch.name", d)
			for _, k := range []string{"transport_timeout", "agent_timeout", "judge_unparseable", "provider_unavailable"} {
				sum(ms, "gym.rollout.completed_total", 3, false, "nemo.gym.rollout.outcome", "failed", "nemo.gym.failure_kind", k, "nemo.gym.rollout.dispatch.name", d)
			}
			for _, r := range []string{"zero", "partial", "full"} {
				sum(ms, "gym.rollout.rewarded_total", 30, false, "nemo.gym.rollout.reward.range", r, "nemo.gym.rollout.dispatch.name", d, "nemo.gym.rollout.masked", "false")
			}
		}
		for _, ty := range []string{"input", "output", "reasoning", "cached_input"} {
			hist(ms, "gym.rollout.tokens", lag, counts, 1e6, "gen_ai.token.type", ty, "gen_ai.response.model", "m1", "nemo.gym.rollout.dispatch.name", "math")
		}
		for _, ty := range []string{"input", "output", "reasoning"} {
			hist(ms, "gym.model_call.tokens", lag, counts, 1e5, "nemo.gym.model_call.token.type", ty, "nemo.gym.server.name", "model", "nemo.gym.model_call.dialect", "responses")
		}
		hist(ms, "gym.event_loop.lag_ms", lag, counts, 500, "nemo.gym.event_loop", "main")
		for _, g := range []string{"0", "1", "2"} {
			hist(ms, "gym.gc.pause_duration_ms", lag, counts, 10, "nemo.gym.gc.generation", g)
		}
		gauge(ms, "process.memory.usage", 1<<30)
		gauge(ms, "gym.process.cpu.percent", 85.5)
		gauge(ms, "gym.process.gpu.utilization_percent", 70, "nemo.gym.gpu.index", "0")
	}
	flight := b.resource(KeyRun, run)
	for _, st := range []string{"model_call", "verify", "agent", "sandbox"} {
		gauge(flight, "gym.rollout.in_flight", 12, "nemo.gym.server.name", "agent", "nemo.gym.rollout.stage", st)
		gauge(flight, "gym.rollout.stalled", 1, "nemo.gym.server.name", "agent", "nemo.gym.rollout.stage", st)
	}
	return b.md, b.md.DataPointCount()
}

// BenchmarkConsume: one export of a run of 20 servers (608 points), in steady state (every
// series known).
func BenchmarkConsume(b *testing.B) {
	s := NewStore(DefaultLimits(), nil)
	md, points := benchBatch("r1", 20)
	s.Consume(md)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Consume(md)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*points), "ns/point")
}

// fullStore is a store at its default bounds' worst: MaxRuns runs of 20 servers, every chart
// with MaxChartSeries+1 series over the whole horizon.
func fullStore(tb testing.TB) *Store {
	tb.Helper()
	lim := DefaultLimits()
	clk := clock.NewFake(t0)
	s := NewStore(lim, clk)
	batches := make([]pmetric.Metrics, lim.MaxRuns)
	for r := range batches {
		batches[r], _ = benchBatch(fmt.Sprintf("run-%d", r), 20)
	}
	for range int(lim.Horizon / lim.Resolution) {
		for _, md := range batches {
			s.Consume(md)
		}
		s.Tick()
		clk.Advance(lim.Resolution)
	}
	return s
}

// BenchmarkServeRun: GET /api/v1/runs/{id} (the current numbers) and its history.
func BenchmarkServeRun(b *testing.B) {
	s := fullStore(b)
	h := NewHandler(s, nil, 16)
	for _, path := range []string{"/api/v1/runs", "/api/v1/runs/run-0", "/api/v1/runs/run-0/history"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				w := serve(h, http.MethodGet, path)
				size = w.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/answer")
		})
	}
}

// BenchmarkFullStoreMemory measures the heap a store holds at its default bounds' worst
// (docs/performance.md quotes it).
func BenchmarkFullStoreMemory(b *testing.B) {
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := fullStore(b)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-held")
		runtime.KeepAlive(s)
	}
}
