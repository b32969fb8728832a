package bound

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/pdatatest"
)

// The instruments of Gym's newer releases (concurrency limits, model calls, memory of server
// trees, nemo-lens, token capture, run-file tokens) as a Gym SDK sends them by OTLP, with
// undeclared attributes and values outside the bounded sets. Every expected point below is
// written by hand from the schema's tables (docs/metrics.md), not produced by the code.

var (
	modelCallMS  = []float64{100, 250, 500, 1000, 2000, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000}
	modelTokens  = []float64{16, 64, 256, 1024, 4096, 16384, 32768, 65536, 131072, 262144, 524288, 1048576}
	lensMS       = []float64{100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1200000, 1800000, 3600000}
	captureMS    = []float64{0.01, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 300000}
	genaiTokens  = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	conComponent = "nemo.gym.concurrency.component"
	conLimit     = "nemo.gym.concurrency.limit_name"
	srvName      = "nemo.gym.server.name"
	dialect      = "nemo.gym.model_call.dialect"
)

func TestGymTodayConcurrency(t *testing.T) {
	tp := newTestProcessor(t, nil)
	md := newBatch().resource(gymResource("r1-rank0")).
		// Gauges: two points that differ only by an undeclared attribute merge, the newest
		// wins; a component that breaks its pattern, and a limit name over 128 bytes, are
		// other.
		gauge("gym.concurrency.limit", "{slot}",
			pt{a: attrs{conComponent: "model_server", conLimit: "max_requests", srvName: "policy", "nemo.gym.rollout.id": "r-1"}, t: 10, i: 64},
			pt{a: attrs{conComponent: "model_server", conLimit: "max_requests", srvName: "policy", "nemo.gym.rollout.id": "r-2"}, t: 11, i: 32},
			pt{a: attrs{conComponent: "Model Server", conLimit: "sandboxes"}, t: 10, i: 8},
			pt{a: attrs{conComponent: "agent", conLimit: strings.Repeat("l", 129)}, t: 10, i: 4},
		).
		// The same "now" value as a non-monotonic cumulative Sum: kept a Sum; two streams
		// merged by an undeclared attribute add up.
		sum("gym.concurrency.active", "{slot}", false, pmetric.AggregationTemporalityCumulative,
			pt{a: attrs{conComponent: "model_server", conLimit: "max_requests", "worker": 1}, start: 1, t: 10, i: 3},
			pt{a: attrs{conComponent: "model_server", conLimit: "max_requests", "worker": 2}, start: 1, t: 10, i: 4},
		).
		gauge("gym.concurrency.available", "{slot}", pt{a: attrs{conComponent: "model_server", conLimit: "max_requests"}, t: 10, i: 57}).
		sum("gym.concurrency.queue_depth", "{waiter}", false, pmetric.AggregationTemporalityCumulative,
			pt{a: attrs{conComponent: "model_server", conLimit: "max-requests.v2"}, start: 1, t: 10, i: 5}).
		counter("gym.concurrency.admission_timeouts_total", "1",
			pt{a: attrs{conComponent: "model_server", conLimit: "max_requests", "sandbox.id": "sb-1"}, start: 1, t: 10, i: 2},
			pt{a: attrs{conComponent: "model_server", conLimit: "max_requests", "sandbox.id": "sb-2"}, start: 1, t: 10, i: 1},
		).
		// A counter sent as a Gauge is not the schema's instrument: counted as mismatched, and
		// bounded by the generic rules only (its attributes stay; unknown_test.go).
		gauge("gym.concurrency.admission_cancelled_total", "1", pt{a: attrs{conComponent: "x", "raw": "kept"}, t: 10, i: 9}).
		md
	out := tp.run(t, md)

	limit := byAttrs(points(out, "gym.concurrency.limit"))
	require.Len(t, limit, 3)
	assert.EqualValues(t, 32, limit["nemo.gym.concurrency.component=model_server,nemo.gym.concurrency.limit_name=max_requests,nemo.gym.server.name=policy"].Int)
	assert.EqualValues(t, 8, limit["nemo.gym.concurrency.component=other,nemo.gym.concurrency.limit_name=sandboxes"].Int)
	assert.EqualValues(t, 4, limit["nemo.gym.concurrency.component=agent,nemo.gym.concurrency.limit_name=other"].Int)

	active := metricNamed(t, out, "gym.concurrency.active")
	require.Equal(t, pmetric.MetricTypeSum, active.Type(), "kept as sent")
	assert.False(t, active.Sum().IsMonotonic())
	got := byAttrs(metricPoints(active))
	require.Len(t, got, 1)
	assert.EqualValues(t, 7, got["nemo.gym.concurrency.component=model_server,nemo.gym.concurrency.limit_name=max_requests"].Int)

	assert.EqualValues(t, 57, byAttrs(points(out, "gym.concurrency.available"))["nemo.gym.concurrency.component=model_server,nemo.gym.concurrency.limit_name=max_requests"].Int)
	assert.EqualValues(t, 5, byAttrs(points(out, "gym.concurrency.queue_depth"))["nemo.gym.concurrency.component=model_server,nemo.gym.concurrency.limit_name=max-requests.v2"].Int)
	assert.EqualValues(t, 3, byAttrs(points(out, "gym.concurrency.admission_timeouts_total"))["nemo.gym.concurrency.component=model_server,nemo.gym.concurrency.limit_name=max_requests"].Int)

	cancelled := points(out, "gym.concurrency.admission_cancelled_total")
	require.Len(t, cancelled, 1)
	assert.Equal(t, "kept", cancelled[0].Attrs["raw"], "a mismatched kind keeps its attributes")
	assert.EqualValues(t, 1, tp.counter(t, "points_mismatched"))
	assertBounded(t, out)
}

func TestGymTodayModelCalls(t *testing.T) {
	tp := newTestProcessor(t, nil)
	md := newBatch().resource(gymResource("r1-model")).
		histogram("gym.model_call.duration_ms", "ms", pmetric.AggregationTemporalityCumulative,
			hist(attrs{srvName: "policy", dialect: "responses", "nemo.gym.model_call.outcome": "ok", "gen_ai.request.id": "a"}, 1, 10, modelCallMS, 300, 300, 300, 0, 1),
			hist(attrs{srvName: "policy", dialect: "responses", "nemo.gym.model_call.outcome": "ok", "gen_ai.request.id": "b"}, 1, 10, modelCallMS, 1500, 1500, 1500, 0, 0, 0, 0, 1),
			// A dialect outside the set is unknown; an outcome that is not an error category,
			// other.
			hist(attrs{srvName: "policy", dialect: "completions", "nemo.gym.model_call.outcome": "HTTP 500"}, 1, 10, modelCallMS, 50, 50, 50, 1),
		).
		histogram("gym.model_call.ttft_ms", "ms", pmetric.AggregationTemporalityCumulative,
			hist(attrs{srvName: "policy", dialect: "chat", "stream": true}, 1, 10, []float64{50, 100}, 70, 70, 70, 0, 1)).
		histogram("gym.model_call.tokens", "{token}", pmetric.AggregationTemporalityCumulative,
			hist(attrs{srvName: "policy", dialect: "chat", "nemo.gym.model_call.token.type": "output"}, 1, 10, modelTokens, 100, 100, 100, 0, 0, 1),
			// cached_input is a run-file token type, not a model-call one: the point is dropped.
			hist(attrs{srvName: "policy", dialect: "chat", "nemo.gym.model_call.token.type": "cached_input"}, 1, 10, modelTokens, 10, 10, 10, 1),
		).
		counter("gym.model_call.finish_total", "1",
			pt{a: attrs{srvName: "policy", dialect: "messages", "nemo.gym.model_call.finish_reason": "end_turn"}, start: 1, t: 10, i: 6},
			pt{a: attrs{srvName: "policy", dialect: "messages", "nemo.gym.model_call.finish_reason": "eos"}, start: 1, t: 10, i: 2},
			pt{a: attrs{srvName: "policy", dialect: "messages", "nemo.gym.model_call.finish_reason": "guardrail"}, start: 1, t: 10, i: 1},
		).md
	out := tp.run(t, md)

	dur := byAttrs(points(out, "gym.model_call.duration_ms"))
	require.Len(t, dur, 2)
	ok := dur["nemo.gym.model_call.dialect=responses,nemo.gym.model_call.outcome=ok,nemo.gym.server.name=policy"]
	assert.EqualValues(t, 2, ok.Count, "two streams merged by an undeclared attribute")
	assert.Equal(t, 1800.0, ok.Sum)
	assert.Equal(t, []uint64{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ok.Buckets)
	assert.EqualValues(t, 1, dur["nemo.gym.model_call.dialect=unknown,nemo.gym.model_call.outcome=other,nemo.gym.server.name=policy"].Count)

	ttft := points(out, "gym.model_call.ttft_ms")
	require.Len(t, ttft, 1)
	assert.Equal(t, []float64{50, 100}, ttft[0].Bounds, "a histogram keeps its sender's boundaries")
	assert.Equal(t, map[string]any{srvName: "policy", dialect: "chat"}, ttft[0].Attrs)

	tokens := byAttrs(points(out, "gym.model_call.tokens"))
	require.Len(t, tokens, 1)
	assert.Equal(t, 100.0, tokens["nemo.gym.model_call.dialect=chat,nemo.gym.model_call.token.type=output,nemo.gym.server.name=policy"].Sum)
	assert.EqualValues(t, 1, tp.dropped(t, "rejected_value"))

	finish := byAttrs(points(out, "gym.model_call.finish_total"))
	require.Len(t, finish, 2)
	assert.EqualValues(t, 6, finish["nemo.gym.model_call.dialect=messages,nemo.gym.model_call.finish_reason=end_turn,nemo.gym.server.name=policy"].Int)
	assert.EqualValues(t, 3, finish["nemo.gym.model_call.dialect=messages,nemo.gym.model_call.finish_reason=other,nemo.gym.server.name=policy"].Int)
	assertBounded(t, out)
}

func TestGymTodayMemory(t *testing.T) {
	tp := newTestProcessor(t, nil)
	srv := func(pid any, typ string, extra attrs) attrs {
		a := attrs{srvName: "math", "nemo.gym.server.type": "resources_servers", "process.pid": pid, "memory.type": typ}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	md := newBatch().resource(gymResource("r1-orchestrator")).
		gauge("gym.server.memory.usage", "By",
			pt{a: srv(4243, "rss", attrs{"child.pids": "4244,4245"}), t: 10, i: 1 << 30},
			pt{a: srv("4243", "pss", nil), t: 10, i: 900 << 20}, // a pid sent as a string is an int
			pt{a: srv(4243, "uss", nil), t: 10, i: 800 << 20},   // not a memory type: dropped
			pt{a: srv(-1, "rss", nil), t: 10, i: 1},             // not a pid: dropped
		).
		gauge("gym.server.memory.sampled_peak", "By", pt{a: srv(4243, "rss", nil), t: 10, i: 2 << 30}).
		gauge("gym.server.processes", "{process}",
			pt{a: attrs{srvName: "math", "nemo.gym.server.type": "gpu_servers", "process.pid": 4243}, t: 10, i: 3}).
		gauge("gym.host.memory.usage", "By", pt{a: attrs{"host.name": "node7"}, t: 10, i: 10 << 30}).
		gauge("gym.host.memory.available", "By", pt{t: 10, i: 54 << 30}).
		gauge("gym.host.memory.total", "By", pt{t: 10, i: 64 << 30}).
		gauge("gym.host.memory.sampled_peak", "By", pt{t: 10, i: 12 << 30}).
		md
	out := tp.run(t, md)

	usage := byAttrs(points(out, "gym.server.memory.usage"))
	require.Len(t, usage, 2)
	assert.EqualValues(t, 1<<30, usage["memory.type=rss,nemo.gym.server.name=math,nemo.gym.server.type=resources_servers,process.pid=4243"].Int)
	assert.EqualValues(t, 900<<20, usage["memory.type=pss,nemo.gym.server.name=math,nemo.gym.server.type=resources_servers,process.pid=4243"].Int)
	assert.EqualValues(t, 2, tp.dropped(t, "rejected_value"))
	assert.EqualValues(t, 3, byAttrs(points(out, "gym.server.processes"))["nemo.gym.server.name=math,nemo.gym.server.type=other,process.pid=4243"].Int)
	host := points(out, "gym.host.memory.usage")
	require.Len(t, host, 1)
	assert.Empty(t, host[0].Attrs, "host memory has no attributes")
	assert.EqualValues(t, 64<<30, points(out, "gym.host.memory.total")[0].Int)
	assertBounded(t, out)
}

func TestGymTodayLensAndTokenCapture(t *testing.T) {
	tp := newTestProcessor(t, nil)
	op, impl := "nemo.gym.token_capture.operation", "nemo.gym.token_capture.implementation"
	md := newBatch().resource(gymResource("r1-lens")).
		histogram("gym.rollout.duration_ms", "ms", pmetric.AggregationTemporalityCumulative,
			hist(attrs{"nemo.gym.rollout.id": "r-1"}, 1, 10, lensMS, 4000, 4000, 4000, 0, 0, 0, 0, 0, 1),
			hist(attrs{"nemo.gym.rollout.id": "r-2"}, 1, 10, lensMS, 90, 90, 90, 1),
		).
		histogram("gym.verify.duration_ms", "ms", pmetric.AggregationTemporalityCumulative,
			hist(nil, 1, 10, lensMS, 200, 200, 200, 0, 1)).
		gauge("gym.verify.success_rate", "1", pt{a: attrs{"verifier": "math"}, t: 10, f: 0.75, double: true}).
		gauge("gym.servers.active", "{server}", pt{t: 10, i: 4}).
		histogram("gym.token_capture.operation.duration_ms", "ms", pmetric.AggregationTemporalityCumulative,
			hist(attrs{op: "tokenize", impl: "hf_fast", "nemo.gym.token_capture.size_class": "lt_4k"}, 1, 10, captureMS, 0.3, 0.3, 0.3, 0, 0, 0, 1),
			hist(attrs{op: "tokenize", impl: "hf fast", "nemo.gym.token_capture.error": "cancelled"}, 1, 10, captureMS, 2, 2, 2, 0, 0, 0, 0, 0, 1),
			hist(attrs{op: "tokenize", impl: "hf_fast", "nemo.gym.token_capture.size_class": "lt_1m"}, 1, 10, captureMS, 1, 1, 1, 0, 0, 0, 0, 1),
		).
		counter("gym.token_capture.operation.tokens_total", "{token}", pt{a: attrs{op: "detokenize"}, start: 1, t: 10, i: 12345}).
		counter("gym.token_capture.outcome_total", "1",
			pt{a: attrs{"nemo.gym.token_capture.outcome": "captured", "nemo.gym.token_capture.reason": "ok"}, start: 1, t: 10, i: 7},
			pt{a: attrs{"nemo.gym.token_capture.outcome": "skipped", "nemo.gym.token_capture.reason": "too long: 200k"}, start: 1, t: 10, i: 1},
		).
		counter("gym.token_capture.digest.calls_total", "1", pt{a: attrs{"nemo.gym.token_capture.digest": "sha256"}, start: 1, t: 10, i: 3}).
		counter("gym.token_capture.digest.bytes_total", "By", pt{a: attrs{"nemo.gym.token_capture.digest": "sha256"}, start: 1, t: 10, i: 4096}).
		sum("gym.token_capture.cache.size", "1", false, pmetric.AggregationTemporalityCumulative,
			pt{a: attrs{"nemo.gym.token_capture.cache": "prefix"}, start: 1, t: 10, i: 17}).
		md
	out := tp.run(t, md)

	dur := points(out, "gym.rollout.duration_ms")
	require.Len(t, dur, 1, "undimensioned: the rollout ids merge")
	assert.EqualValues(t, 2, dur[0].Count)
	assert.Equal(t, 4090.0, dur[0].Sum)
	assert.Empty(t, dur[0].Attrs)
	rate := points(out, "gym.verify.success_rate")
	require.Len(t, rate, 1)
	assert.True(t, rate[0].IsDbl)
	assert.Equal(t, 0.75, rate[0].Double)
	assert.EqualValues(t, 4, points(out, "gym.servers.active")[0].Int)

	capture := byAttrs(points(out, "gym.token_capture.operation.duration_ms"))
	require.Len(t, capture, 2)
	assert.Contains(t, capture, "nemo.gym.token_capture.implementation=hf_fast,nemo.gym.token_capture.operation=tokenize,nemo.gym.token_capture.size_class=lt_4k")
	assert.Contains(t, capture, "nemo.gym.token_capture.error=cancelled,nemo.gym.token_capture.implementation=other,nemo.gym.token_capture.operation=tokenize")
	assert.EqualValues(t, 1, tp.dropped(t, "rejected_value"), "size class lt_1m")
	outcome := byAttrs(points(out, "gym.token_capture.outcome_total"))
	assert.EqualValues(t, 7, outcome["nemo.gym.token_capture.outcome=captured,nemo.gym.token_capture.reason=ok"].Int)
	assert.EqualValues(t, 1, outcome["nemo.gym.token_capture.outcome=skipped,nemo.gym.token_capture.reason=other"].Int)
	assert.EqualValues(t, 17, points(out, "gym.token_capture.cache.size")[0].Int)
	assertBounded(t, out)
}

func TestGymTodayRunFileInstrumentsByOTLP(t *testing.T) {
	tp := newTestProcessor(t, nil)
	tt, model := "gen_ai.token.type", "gen_ai.response.model"
	md := newBatch().resource(gymResource("r1-driver")).
		histogram("gym.rollout.tokens", "{token}", pmetric.AggregationTemporalityCumulative,
			hist(attrs{tt: "input", model: "gpt-4.1", dispatch: "math", "nemo.gym.rollout.id": "r-1"}, 1, 10, genaiTokens, 900, 900, 900, 0, 0, 0, 0, 0, 1),
			hist(attrs{tt: "cached_input", dispatch: "math"}, 1, 10, genaiTokens, 512, 512, 512, 0, 0, 0, 0, 0, 1),
			hist(attrs{tt: "total", dispatch: "math"}, 1, 10, genaiTokens, 1000, 1000, 1000, 0, 0, 0, 0, 0, 1),
			hist(attrs{tt: "output", model: strings.Repeat("m", 300), dispatch: "math"}, 1, 10, genaiTokens, 3, 3, 3, 0, 1),
		).
		counter("gym.rollout.finish_total", "1",
			pt{a: attrs{"nemo.gym.rollout.finish_reason": "max_output_tokens", model: "gpt-4.1", dispatch: "math"}, start: 1, t: 10, i: 2},
			pt{a: attrs{"nemo.gym.rollout.finish_reason": "truncated", dispatch: "math"}, start: 1, t: 10, i: 1},
		).
		histogram("gym.rollout.tool_calls", "{tool_call}", pmetric.AggregationTemporalityCumulative,
			hist(attrs{dispatch: "swe", "tool": "bash"}, 1, 10, rolloutCount, 9, 9, 9, 0, 0, 0, 0, 1)).
		md
	out := tp.run(t, md)

	tokens := byAttrs(points(out, "gym.rollout.tokens"))
	require.Len(t, tokens, 3)
	assert.Equal(t, 900.0, tokens["gen_ai.response.model=gpt-4.1,gen_ai.token.type=input,nemo.gym.rollout.dispatch.name=math"].Sum)
	assert.Equal(t, 512.0, tokens["gen_ai.token.type=cached_input,nemo.gym.rollout.dispatch.name=math"].Sum, "the model is optional")
	assert.Contains(t, tokens, "gen_ai.response.model="+strings.Repeat("m", 256)+",gen_ai.token.type=output,nemo.gym.rollout.dispatch.name=math")
	assert.EqualValues(t, 1, tp.dropped(t, "rejected_value"), "token type total")
	finish := byAttrs(points(out, "gym.rollout.finish_total"))
	assert.EqualValues(t, 2, finish["gen_ai.response.model=gpt-4.1,nemo.gym.rollout.dispatch.name=math,nemo.gym.rollout.finish_reason=max_output_tokens"].Int)
	assert.EqualValues(t, 1, finish["nemo.gym.rollout.dispatch.name=math,nemo.gym.rollout.finish_reason=other"].Int)
	calls := points(out, "gym.rollout.tool_calls")
	require.Len(t, calls, 1)
	assert.Equal(t, map[string]any{dispatch: "swe"}, calls[0].Attrs)
	assertBounded(t, out)
}

// TestGymTodayCardinality: a new instrument keeps at most cardinality_limit series per
// resource, the overflow series included, and loses no count.
func TestGymTodayCardinality(t *testing.T) {
	tp := newTestProcessor(t, func(cfg *Config) { cfg.CardinalityLimit = 5 })
	var pts []pt
	var total int64
	for i := range 12 {
		n := int64(i + 1)
		total += n
		pts = append(pts, pt{a: attrs{conComponent: "agent", conLimit: "limit_" + string(rune('a'+i))}, start: 1, t: 10, i: n})
	}
	out := tp.run(t, newBatch().resource(gymResource("r1-agent")).counter("gym.concurrency.admission_cancelled_total", "1", pts...).md)
	got := points(out, "gym.concurrency.admission_cancelled_total")
	require.Len(t, got, 5)
	var sum int64
	for _, p := range got {
		sum += p.Int
	}
	assert.Equal(t, total, sum)
	assert.EqualValues(t, 5+6+7+8+9+10+11+12, byAttrs(got)[overflowKey].Int, "series 5 to 12 fold into the overflow series")
}

func metricNamed(t *testing.T, md pmetric.Metrics, name string) pmetric.Metric {
	t.Helper()
	return pdatatest.Metric(t, md, name)
}
