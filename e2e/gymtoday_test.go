//go:build linux

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The instruments of Gym's newer releases (concurrency limits, model calls, memory of server
// trees, nemo-lens, token capture, run-file tokens) as a Gym SDK sends them by OTLP, through
// the real binary: otlp -> gymattrs -> otlp_http. Each instrument comes with an undeclared
// attribute (removed, its points merged), values outside its bounded sets (normalised, or the
// point dropped and counted), and more series than the cardinality limit (one overflow
// series). The expected points are typed here by hand from docs/metrics.md.

const gymTodayLimit = 4

// gymTodayInstrument is one new instrument: how it is sent, the good attributes of its first
// series, and what the output must hold.
type gymTodayInstrument struct {
	name, unit string
	kind       pmetric.MetricType
	monotonic  bool
	good       map[string]any // a declared attribute set (its values within the rules)
	// bad: attributes that break a rule and the attribute set they become ("" when the
	// point is dropped: a value outside an enumeration).
	bad     map[string]any
	badWant string
	// vary is a declared string attribute whose distinct values make series past the limit
	// ("" for an undimensioned instrument).
	vary string
}

var (
	conc   = map[string]any{"nemo.gym.concurrency.component": "model_server", "nemo.gym.concurrency.limit_name": "max_requests", "nemo.gym.server.name": "policy"}
	concBd = map[string]any{"nemo.gym.concurrency.component": "Model Server", "nemo.gym.concurrency.limit_name": "max_requests"}
	concW  = `{nemo.gym.concurrency.component="other" nemo.gym.concurrency.limit_name="max_requests"}`
	call   = map[string]any{"nemo.gym.server.name": "policy", "nemo.gym.model_call.dialect": "responses"}
	srvMem = map[string]any{"nemo.gym.server.name": "math", "nemo.gym.server.type": "resources_servers", "process.pid": int64(4243)}
)

func with(base map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

var gymTodayInstruments = []gymTodayInstrument{
	{name: "gym.concurrency.limit", unit: "{slot}", kind: pmetric.MetricTypeGauge, good: conc, bad: concBd, badWant: concW, vary: "nemo.gym.concurrency.limit_name"},
	{name: "gym.concurrency.active", unit: "{slot}", kind: pmetric.MetricTypeSum, good: conc, bad: concBd, badWant: concW, vary: "nemo.gym.concurrency.limit_name"}, // sent as a non-monotonic Sum
	{name: "gym.concurrency.available", unit: "{slot}", kind: pmetric.MetricTypeGauge, good: conc, bad: concBd, badWant: concW, vary: "nemo.gym.concurrency.limit_name"},
	{name: "gym.concurrency.queue_depth", unit: "{waiter}", kind: pmetric.MetricTypeSum, good: conc, bad: concBd, badWant: concW, vary: "nemo.gym.concurrency.limit_name"},
	{name: "gym.concurrency.admission_timeouts_total", unit: "1", kind: pmetric.MetricTypeSum, monotonic: true, good: conc, bad: concBd, badWant: concW, vary: "nemo.gym.concurrency.limit_name"},
	{name: "gym.concurrency.admission_cancelled_total", unit: "1", kind: pmetric.MetricTypeSum, monotonic: true, good: conc, bad: concBd, badWant: concW, vary: "nemo.gym.concurrency.limit_name"},
	{name: "gym.model_call.duration_ms", unit: "ms", kind: pmetric.MetricTypeHistogram, good: with(call, "nemo.gym.model_call.outcome", "ok"),
		bad: with(call, "nemo.gym.model_call.dialect", "completions", "nemo.gym.model_call.outcome", "HTTP 500"), vary: "nemo.gym.server.name",
		badWant: `{nemo.gym.model_call.dialect="unknown" nemo.gym.model_call.outcome="other" nemo.gym.server.name="policy"}`},
	{name: "gym.model_call.ttft_ms", unit: "ms", kind: pmetric.MetricTypeHistogram, good: call, bad: with(call, "nemo.gym.model_call.dialect", "Chat"), vary: "nemo.gym.server.name",
		badWant: `{nemo.gym.model_call.dialect="unknown" nemo.gym.server.name="policy"}`},
	{name: "gym.model_call.tokens", unit: "{token}", kind: pmetric.MetricTypeHistogram, good: with(call, "nemo.gym.model_call.token.type", "output"),
		bad: with(call, "nemo.gym.model_call.token.type", "cached_input"), vary: "nemo.gym.server.name"},
	{name: "gym.model_call.finish_total", unit: "1", kind: pmetric.MetricTypeSum, monotonic: true, good: with(call, "nemo.gym.model_call.finish_reason", "stop"),
		bad: with(call, "nemo.gym.model_call.finish_reason", "eos"), vary: "nemo.gym.server.name",
		badWant: `{nemo.gym.model_call.dialect="responses" nemo.gym.model_call.finish_reason="other" nemo.gym.server.name="policy"}`},
	{name: "gym.server.memory.usage", unit: "By", kind: pmetric.MetricTypeGauge, good: with(srvMem, "memory.type", "rss"), bad: with(srvMem, "memory.type", "uss"), vary: "nemo.gym.server.name"},
	{name: "gym.server.memory.sampled_peak", unit: "By", kind: pmetric.MetricTypeGauge, good: with(srvMem, "memory.type", "pss"),
		bad: with(srvMem, "memory.type", "pss", "nemo.gym.server.type", "gpu"), vary: "nemo.gym.server.name",
		badWant: `{memory.type="pss" nemo.gym.server.name="math" nemo.gym.server.type="other" process.pid=4243}`},
	{name: "gym.server.processes", unit: "{process}", kind: pmetric.MetricTypeGauge, good: srvMem, bad: with(srvMem, "process.pid", "4244"), vary: "nemo.gym.server.name",
		badWant: `{nemo.gym.server.name="math" nemo.gym.server.type="resources_servers" process.pid=4244}`},
	{name: "gym.host.memory.usage", unit: "By", kind: pmetric.MetricTypeGauge},
	{name: "gym.host.memory.available", unit: "By", kind: pmetric.MetricTypeGauge},
	{name: "gym.host.memory.total", unit: "By", kind: pmetric.MetricTypeGauge},
	{name: "gym.host.memory.sampled_peak", unit: "By", kind: pmetric.MetricTypeGauge},
	{name: "gym.rollout.duration_ms", unit: "ms", kind: pmetric.MetricTypeHistogram},
	{name: "gym.verify.duration_ms", unit: "ms", kind: pmetric.MetricTypeHistogram},
	{name: "gym.verify.success_rate", unit: "1", kind: pmetric.MetricTypeGauge},
	{name: "gym.servers.active", unit: "{server}", kind: pmetric.MetricTypeGauge},
	{name: "gym.token_capture.operation.duration_ms", unit: "ms", kind: pmetric.MetricTypeHistogram,
		good: map[string]any{"nemo.gym.token_capture.operation": "tokenize", "nemo.gym.token_capture.implementation": "hf_fast", "nemo.gym.token_capture.size_class": "lt_4k"},
		bad:  map[string]any{"nemo.gym.token_capture.operation": "tokenize", "nemo.gym.token_capture.implementation": "hf_fast", "nemo.gym.token_capture.size_class": "lt_1m"},
		vary: "nemo.gym.token_capture.operation"},
	{name: "gym.token_capture.operation.tokens_total", unit: "{token}", kind: pmetric.MetricTypeSum, monotonic: true,
		good: map[string]any{"nemo.gym.token_capture.operation": "detokenize"}, bad: map[string]any{"nemo.gym.token_capture.operation": "de tokenize"},
		badWant: `{nemo.gym.token_capture.operation="other"}`, vary: "nemo.gym.token_capture.operation"},
	{name: "gym.token_capture.outcome_total", unit: "1", kind: pmetric.MetricTypeSum, monotonic: true,
		good:    map[string]any{"nemo.gym.token_capture.outcome": "captured", "nemo.gym.token_capture.reason": "ok"},
		bad:     map[string]any{"nemo.gym.token_capture.outcome": "captured", "nemo.gym.token_capture.reason": "too long: 200k"},
		badWant: `{nemo.gym.token_capture.outcome="captured" nemo.gym.token_capture.reason="other"}`, vary: "nemo.gym.token_capture.reason"},
	{name: "gym.token_capture.digest.calls_total", unit: "1", kind: pmetric.MetricTypeSum, monotonic: true,
		good: map[string]any{"nemo.gym.token_capture.digest": "sha256"}, bad: map[string]any{"nemo.gym.token_capture.digest": "sha-256"},
		badWant: `{nemo.gym.token_capture.digest="other"}`, vary: "nemo.gym.token_capture.digest"},
	{name: "gym.token_capture.digest.bytes_total", unit: "By", kind: pmetric.MetricTypeSum, monotonic: true,
		good: map[string]any{"nemo.gym.token_capture.digest": "sha256"}, bad: map[string]any{"nemo.gym.token_capture.digest": "md5!"},
		badWant: `{nemo.gym.token_capture.digest="other"}`, vary: "nemo.gym.token_capture.digest"},
	{name: "gym.token_capture.cache.size", unit: "1", kind: pmetric.MetricTypeSum,
		good: map[string]any{"nemo.gym.token_capture.cache": "prefix"}, bad: map[string]any{"nemo.gym.token_capture.cache": "9cache"},
		badWant: `{nemo.gym.token_capture.cache="other"}`, vary: "nemo.gym.token_capture.cache"},
	{name: "gym.rollout.tokens", unit: "{token}", kind: pmetric.MetricTypeHistogram,
		good: map[string]any{"gen_ai.token.type": "input", "gen_ai.response.model": "gpt-4.1", "nemo.gym.rollout.dispatch.name": "math"},
		bad:  map[string]any{"gen_ai.token.type": "total", "nemo.gym.rollout.dispatch.name": "math"}, vary: "nemo.gym.rollout.dispatch.name"},
	{name: "gym.rollout.finish_total", unit: "1", kind: pmetric.MetricTypeSum, monotonic: true,
		good:    map[string]any{"nemo.gym.rollout.finish_reason": "max_output_tokens", "nemo.gym.rollout.dispatch.name": "math"},
		bad:     map[string]any{"nemo.gym.rollout.finish_reason": "truncated", "nemo.gym.rollout.dispatch.name": "math"},
		badWant: `{nemo.gym.rollout.dispatch.name="math" nemo.gym.rollout.finish_reason="other"}`, vary: "nemo.gym.rollout.dispatch.name"},
	{name: "gym.rollout.tool_calls", unit: "{tool_call}", kind: pmetric.MetricTypeHistogram, good: map[string]any{"nemo.gym.rollout.dispatch.name": "swe"}, vary: "nemo.gym.rollout.dispatch.name"},
}

// addPoint adds one point of value v (a histogram: one sample of v) with attributes a.
func addPoint(m pmetric.Metric, a map[string]any, v int64, start, now pcommon.Timestamp) {
	var attrs pcommon.Map
	switch m.Type() {
	case pmetric.MetricTypeGauge, pmetric.MetricTypeSum:
		var dp pmetric.NumberDataPoint
		if m.Type() == pmetric.MetricTypeGauge {
			dp = m.Gauge().DataPoints().AppendEmpty()
		} else {
			dp = m.Sum().DataPoints().AppendEmpty()
			dp.SetStartTimestamp(start)
		}
		dp.SetTimestamp(now)
		if m.Name() == "gym.verify.success_rate" {
			dp.SetDoubleValue(float64(v) / 100)
		} else {
			dp.SetIntValue(v)
		}
		attrs = dp.Attributes()
	case pmetric.MetricTypeHistogram:
		dp := m.Histogram().DataPoints().AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(now)
		dp.ExplicitBounds().FromRaw([]float64{10, 100})
		buckets := []uint64{0, 0, 0}
		switch {
		case v <= 10:
			buckets[0] = 1
		case v <= 100:
			buckets[1] = 1
		default:
			buckets[2] = 1
		}
		dp.BucketCounts().FromRaw(buckets)
		dp.SetCount(1)
		dp.SetSum(float64(v))
		dp.SetMin(float64(v))
		dp.SetMax(float64(v))
		attrs = dp.Attributes()
	}
	putAny(attrs, a)
}

// gymTodayBatch is one export of a Gym process with every new instrument: for a dimensioned
// one, two points of its good attribute set that differ only by an undeclared attribute
// (values 3 and 4), its bad point (value 5), and series past the limit (values 1); for an
// undimensioned one, two points that differ by an undeclared attribute.
func gymTodayBatch(start, now pcommon.Timestamp) pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := sdkScope(md, "nemo_gym.telemetry", map[string]any{"service.name": "nemo-gym/math", "service.instance.id": "r1-rank0", "nemo.run.id": "r1", "process.pid": int64(4242)})
	for _, in := range gymTodayInstruments {
		m := sm.Metrics().AppendEmpty()
		m.SetName(in.name)
		m.SetUnit(in.unit)
		switch in.kind {
		case pmetric.MetricTypeGauge:
			m.SetEmptyGauge()
		case pmetric.MetricTypeSum:
			m.SetEmptySum().SetIsMonotonic(in.monotonic)
			m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		case pmetric.MetricTypeHistogram:
			m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		}
		addPoint(m, with(in.good, "nemo.gym.rollout.id", "r-1"), 3, start, now)
		addPoint(m, with(in.good, "nemo.gym.rollout.id", "r-2"), 4, start, now+1)
		if in.bad != nil {
			addPoint(m, in.bad, 5, start, now)
		}
		if in.vary != "" {
			for i := range 2 * gymTodayLimit {
				addPoint(m, with(in.good, in.vary, fmt.Sprintf("x%d", i)), 1, start, now)
			}
		}
	}
	return md
}

func TestGymattrsOTLPGymToday(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	col, ports, otlpURL := startOTLP(t, "gymtoday.yaml", sink, map[string]any{"limit": gymTodayLimit})
	start := pcommon.NewTimestampFromTime(time.Now().Add(-time.Minute))
	now := pcommon.NewTimestampFromTime(time.Now())
	postOTLP(t, otlpURL, gymTodayBatch(start, now))
	require.NoError(t, harness.Eventually(10*time.Second, 100*time.Millisecond, func() error {
		if sink.Count() == 0 {
			return harness.ErrNotYet
		}
		return nil
	}))
	out := sink.Exports()[0]
	require.Equal(t, 1, out.ResourceMetrics().Len())

	got := map[string]map[string]float64{} // name -> attribute set -> value (histograms: sum)
	kinds := map[string]pmetric.MetricType{}
	for _, sm := range out.ResourceMetrics().At(0).ScopeMetrics().All() {
		for _, m := range sm.Metrics().All() {
			kinds[m.Name()] = m.Type()
			series := map[string]float64{}
			got[m.Name()] = series
			add := func(attrs pcommon.Map, v float64) {
				_, dup := series[formatAttrs(attrs)]
				assert.False(t, dup, "%s: two points of one series %s", m.Name(), formatAttrs(attrs))
				series[formatAttrs(attrs)] = v
			}
			for _, dp := range numberPoints(m).All() {
				add(dp.Attributes(), numberOf(dp))
			}
			for _, dp := range histogramPoints(m).All() {
				add(dp.Attributes(), dp.Sum())
			}
		}
	}

	dropped := 0
	for _, in := range gymTodayInstruments {
		series, ok := got[in.name]
		if !assert.True(t, ok, "%s reached the backend", in.name) {
			continue
		}
		assert.Equal(t, in.kind, kinds[in.name], "%s keeps the kind it was sent as", in.name)
		goodKey := formatAttrs(attrsOf(in.good))
		for key := range series {
			assert.NotContains(t, key, "nemo.gym.rollout.id", "%s: the undeclared attribute is removed", in.name)
		}
		// The two points of the good set merged: a gauge keeps the newest (4), a cumulative
		// sum or histogram adds the two streams (3 + 4); the success rate is a double.
		want := 7.0
		if in.kind == pmetric.MetricTypeGauge {
			want = 4
			if in.name == "gym.verify.success_rate" {
				want = 0.04
			}
		}
		assert.Equal(t, want, series[goodKey], "%s: the good series %s", in.name, goodKey)
		switch {
		case in.bad != nil && in.badWant == "":
			dropped++
			for key, v := range series {
				assert.NotEqual(t, 5.0, v, "%s: the point outside the enumeration is dropped (%s)", in.name, key)
			}
		case in.bad != nil:
			assert.Equal(t, 5.0, series[in.badWant], "%s: the bad value normalised, %s", in.name, in.badWant)
		}
		if in.vary == "" {
			assert.Len(t, series, 1, "%s is undimensioned", in.name)
			continue
		}
		// The limit: limit - 1 series of their own, the rest in one overflow series that
		// holds what they sent.
		assert.Len(t, series, gymTodayLimit, "%s: at most cardinality_limit series", in.name)
		admitted := 0
		for key := range series {
			if key != `{otel.metric.overflow=true}` {
				admitted++
			}
		}
		var total, inTotal float64
		for _, v := range series {
			total += v
		}
		inTotal = 3 + 4 + float64(2*gymTodayLimit)
		if in.bad != nil && in.badWant != "" {
			inTotal += 5
		}
		if in.kind == pmetric.MetricTypeGauge {
			continue // gauges keep the newest value of what folds, not a total
		}
		assert.Equal(t, inTotal, total, "%s: nothing lost but the dropped point", in.name)
		assert.Contains(t, series, `{otel.metric.overflow=true}`, "%s overflowed", in.name)
	}

	// Each dropped point is counted, by reason.
	require.NoError(t, harness.Eventually(10*time.Second, 200*time.Millisecond, func() error {
		if v := harness.TelemetryValue(t, ports, "otelcol_processor_gymattrs_points_dropped", "reason", "rejected_value"); v != float64(dropped) {
			return fmt.Errorf("points_dropped{reason=rejected_value} is %v, want %d", v, dropped)
		}
		return nil
	}))
	require.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))
}

func attrsOf(a map[string]any) pcommon.Map {
	m := pcommon.NewMap()
	putAny(m, a)
	return m
}
