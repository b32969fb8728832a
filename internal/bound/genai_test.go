package bound

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// genai_conventions: the GenAI client metrics derived from Gym's bounded model calls. The
// expected points are written by hand from the conventions (v1.41.0) and docs/gym.md.

const (
	outcomeKey  = "nemo.gym.model_call.outcome"
	gymTokenKey = "nemo.gym.model_call.token.type"
	opDuration  = "gen_ai.client.operation.duration"
	opTTFC      = "gen_ai.client.operation.time_to_first_chunk"
	tokenUsage  = "gen_ai.client.token.usage"
)

var (
	modelTTFTMS = []float64{50, 100, 250, 500, 1000, 2000, 5000, 10000, 30000, 60000, 120000, 300000}
	// The same boundaries in seconds, typed as decimals: the derived points must carry
	// exactly these doubles.
	modelCallS = []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800}
	modelTTFTS = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
)

func genAIOn(c *Config) { c.GenAIConventions = true }

// modelCallBatch is export k of a model server's SDK: cumulative, values growing with k.
func modelCallBatch(k int, temp pmetric.AggregationTemporality) pmetric.Metrics {
	g := func(v float64) float64 { return v * float64(k) }
	u := func(v uint64) uint64 { return v * uint64(k) }
	return newBatch().resource(gymResource("model-0")).
		histogram("gym.model_call.duration_ms", "ms", temp,
			// two streams that differ by an undeclared attribute: one series
			hist(attrs{srvName: "policy", dialect: "responses", outcomeKey: "ok", "gen_ai.request.id": "a"}, 1, 10*k, modelCallMS, g(300), 300, 300, 0, u(1)),
			hist(attrs{srvName: "policy", dialect: "responses", outcomeKey: "ok", "gen_ai.request.id": "b"}, 1, 10*k, modelCallMS, g(1500), 1500, 1500, 0, 0, 0, 0, u(1)),
			hist(attrs{srvName: "policy", dialect: "chat", outcomeKey: "timeout"}, 1, 10*k, modelCallMS, g(60000), 60000, 60000, 0, 0, 0, 0, 0, 0, 0, 0, u(1)),
			hist(attrs{srvName: "judge", dialect: "messages", outcomeKey: "Rate Limited!"}, 1, 10*k, modelCallMS, g(50), 50, 50, u(1)),
			hist(attrs{srvName: "judge", dialect: "completions", outcomeKey: "ok"}, 1, 10*k, modelCallMS, g(700), 700, 700, 0, 0, 0, u(1)),
		).
		histogram("gym.model_call.ttft_ms", "ms", temp,
			hist(attrs{srvName: "policy", dialect: "responses"}, 1, 10*k, modelTTFTMS, g(120), 120, 120, 0, 0, u(1)),
		).
		histogram("gym.model_call.tokens", "{token}", temp,
			hist(attrs{srvName: "policy", dialect: "responses", gymTokenKey: "input"}, 1, 10*k, modelTokens, g(1000), 1000, 1000, 0, 0, 0, u(1)),
			hist(attrs{srvName: "policy", dialect: "responses", gymTokenKey: "output"}, 1, 10*k, modelTokens, g(200), 200, 200, 0, 0, u(1)),
			hist(attrs{srvName: "policy", dialect: "responses", gymTokenKey: "reasoning"}, 1, 10*k, modelTokens, g(50), 50, 50, 0, u(1)),
		).md
}

// seconds divides the expected millisecond values as the conventions' unit wants.
func seconds(ms float64) float64 { return ms / 1000 }

func TestGenAIOffByDefault(t *testing.T) {
	assert.False(t, DefaultConfig().GenAIConventions, "genai_conventions is opt in")
	tp := newTestProcessor(t, nil)
	out := tp.run(t, modelCallBatch(1, cumulative))
	for _, name := range []string{opDuration, opTTFC, tokenUsage} {
		assert.Empty(t, points(out, name), "%s derived while genai_conventions is off", name)
	}
	assert.Len(t, points(out, "gym.model_call.duration_ms"), 4)
}

func TestGenAIDerived(t *testing.T) {
	tp := newTestProcessor(t, genAIOn)
	off := newTestProcessor(t, nil)
	for k := 1; k <= 2; k++ {
		in := modelCallBatch(k, cumulative)
		ref := off.run(t, modelCallBatch(k, cumulative))
		out := tp.run(t, in)
		g := func(v float64) float64 { return v * float64(k) }
		u := func(v uint64) uint64 { return v * uint64(k) }

		// The gym.* metrics are exported as without the switch.
		for _, name := range []string{"gym.model_call.duration_ms", "gym.model_call.ttft_ms", "gym.model_call.tokens"} {
			assert.Equal(t, byAttrs(points(ref, name)), byAttrs(points(out, name)), "export %d: %s changed by genai_conventions", k, name)
		}

		dur := byAttrs(points(out, opDuration))
		require.Len(t, dur, 4, "export %d: one derived series per bounded Gym series", k)
		want := map[string]struct {
			sum, lo, hi float64
			bucket      int
		}{
			// responses: OpenAI's Responses API; the two streams merged as the Gym series is
			"gen_ai.operation.name=chat,gen_ai.provider.name=openai,nemo.gym.model_call.dialect=responses,nemo.gym.server.name=policy": {g(300) + g(1500), 300, 1500, -1},
			// a failure: error.type is the outcome
			"error.type=timeout,gen_ai.operation.name=chat,gen_ai.provider.name=openai,nemo.gym.model_call.dialect=chat,nemo.gym.server.name=policy": {g(60000), 60000, 60000, 8},
			// an outcome outside its pattern is `other` on the Gym series, so on the derived one
			"error.type=other,gen_ai.operation.name=chat,gen_ai.provider.name=anthropic,nemo.gym.model_call.dialect=messages,nemo.gym.server.name=judge": {g(50), 50, 50, 0},
			// a dialect Gym cannot tell is `unknown`: the conventions' _OTHER provider
			"gen_ai.operation.name=chat,gen_ai.provider.name=_OTHER,nemo.gym.model_call.dialect=unknown,nemo.gym.server.name=judge": {g(700), 700, 700, 3},
		}
		gymDur := byAttrs(points(out, "gym.model_call.duration_ms"))
		for key, w := range want {
			p, ok := dur[key]
			if !assert.True(t, ok, "export %d: no derived series %s; have %v", k, key, keysOf(dur)) {
				continue
			}
			assert.Equal(t, modelCallS, p.Bounds, "boundaries in seconds")
			assert.Equal(t, seconds(w.sum), p.Sum, "%s: sum", key)
			assert.True(t, p.HasMM)
			assert.Equal(t, seconds(w.lo), p.Min, "%s: min", key)
			assert.Equal(t, seconds(w.hi), p.Max, "%s: max", key)
			assert.Equal(t, ts(1), p.Start)
			assert.Equal(t, ts(10*k), p.Time)
			if w.bucket >= 0 {
				b := make([]uint64, len(modelCallMS)+1)
				b[w.bucket] = u(1)
				assert.Equal(t, b, p.Buckets, "%s: bucket counts", key)
			}
		}
		// Counts and buckets are the Gym series' own, series for series.
		var gymCount, genCount uint64
		for _, p := range gymDur {
			gymCount += p.Count
		}
		for _, p := range dur {
			genCount += p.Count
			_, hasErr := p.Attrs["error.type"]
			assert.Equal(t, hasErr, p.Attrs[dialect] == "chat" || p.Attrs[dialect] == "messages", "error.type only on failures: %v", p.Attrs)
		}
		assert.Equal(t, gymCount, genCount, "export %d: calls counted", k)
		assert.Equal(t, u(5), genCount)

		ttfc := points(out, opTTFC)
		if assert.Len(t, ttfc, 1) {
			p := ttfc[0]
			assert.Equal(t, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", dialect: "responses", srvName: "policy"}, p.Attrs)
			assert.Equal(t, modelTTFTS, p.Bounds)
			assert.Equal(t, seconds(g(120)), p.Sum)
			assert.Equal(t, 0.12, p.Min)
			assert.Equal(t, u(1), p.Count)
		}

		// Tokens: input and output; reasoning is part of output in the conventions.
		tok := byAttrs(points(out, tokenUsage))
		require.Len(t, tok, 2, "export %d: reasoning tokens are not derived", k)
		inp := tok["gen_ai.operation.name=chat,gen_ai.provider.name=openai,gen_ai.token.type=input,nemo.gym.model_call.dialect=responses,nemo.gym.server.name=policy"]
		outp := tok["gen_ai.operation.name=chat,gen_ai.provider.name=openai,gen_ai.token.type=output,nemo.gym.model_call.dialect=responses,nemo.gym.server.name=policy"]
		assert.Equal(t, g(1000), inp.Sum)
		assert.Equal(t, g(200), outp.Sum)
		assert.Equal(t, modelTokens, inp.Bounds, "token boundaries unchanged")
		assert.Equal(t, u(1), inp.Buckets[3])
		assert.Equal(t, 200.0, outp.Max)
	}
}

func keysOf(m map[string]outPoint) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// The derived metric has the conventions' name, unit and kind, and the source's temporality.
func TestGenAIMetricShape(t *testing.T) {
	for _, temp := range []pmetric.AggregationTemporality{cumulative, delta} {
		tp := newTestProcessor(t, genAIOn)
		out := tp.run(t, modelCallBatch(1, temp))
		seen := map[string]bool{}
		sm := out.ResourceMetrics().At(0).ScopeMetrics()
		require.Equal(t, 1, sm.Len(), "derived into the scope of their source")
		for _, m := range sm.At(0).Metrics().All() {
			switch m.Name() {
			case opDuration, opTTFC:
				assert.Equal(t, "s", m.Unit())
			case tokenUsage:
				assert.Equal(t, "{token}", m.Unit())
			default:
				continue
			}
			seen[m.Name()] = true
			require.Equal(t, pmetric.MetricTypeHistogram, m.Type())
			assert.Equal(t, temp, m.Histogram().AggregationTemporality(), "%s keeps the temporality of its source", m.Name())
			id, ok := schema.Lookup(m.Name())
			require.True(t, ok)
			assert.Equal(t, schema.Get(id).Description, m.Description())
		}
		assert.Len(t, seen, 3)
	}
}

// Delta points of one series merge before they are derived: one derived point, the sum.
func TestGenAIDelta(t *testing.T) {
	tp := newTestProcessor(t, genAIOn)
	md := newBatch().resource(gymResource("model-0")).
		histogram("gym.model_call.duration_ms", "ms", delta,
			hist(attrs{srvName: "policy", dialect: "chat", outcomeKey: "ok", "req": "1"}, 5, 10, modelCallMS, 250, 250, 250, 0, 1),
			hist(attrs{srvName: "policy", dialect: "chat", outcomeKey: "ok", "req": "2"}, 4, 11, modelCallMS, 2500, 2500, 2500, 0, 0, 0, 0, 0, 1),
		).md
	out := tp.run(t, md)
	got := points(out, opDuration)
	require.Len(t, got, 1)
	p := got[0]
	assert.Equal(t, uint64(2), p.Count)
	assert.Equal(t, seconds(2750), p.Sum)
	assert.Equal(t, 0.25, p.Min)
	assert.Equal(t, 2.5, p.Max)
	assert.Equal(t, ts(4), p.Start)
	assert.Equal(t, ts(11), p.Time)
}

// With a cardinality limit the derived series are the Gym series: the same admitted ones, the
// same overflow series; the tokens' overflow mixes the types (reasoning too) and is not
// derived.
func TestGenAIOverflow(t *testing.T) {
	tp := newTestProcessor(t, func(c *Config) { genAIOn(c); c.CardinalityLimit = 3 })
	var durs, toks []pt
	for i := range 5 {
		a := attrs{srvName: fmt.Sprintf("server-%d", i), dialect: "chat", outcomeKey: "ok"}
		durs = append(durs, hist(a, 1, 10, modelCallMS, float64(100*(i+1)), float64(100*(i+1)), float64(100*(i+1)), 1))
		toks = append(toks, hist(attrs{srvName: fmt.Sprintf("server-%d", i), dialect: "chat", gymTokenKey: "output"}, 1, 10, modelTokens, 10, 10, 10, 1))
	}
	md := newBatch().resource(gymResource("model-0")).
		histogram("gym.model_call.duration_ms", "ms", cumulative, durs...).
		histogram("gym.model_call.tokens", "{token}", cumulative, toks...).md
	out := tp.run(t, md)

	gym := byAttrs(points(out, "gym.model_call.duration_ms"))
	gen := byAttrs(points(out, opDuration))
	require.Len(t, gym, 3)
	require.Len(t, gen, 3, "one derived series per Gym series, the overflow included")
	ovf, ok := gen[overflowKey]
	require.True(t, ok, "the overflow series is derived: %v", keysOf(gen))
	assert.Equal(t, gym[overflowKey].Count, ovf.Count)
	assert.Equal(t, uint64(3), ovf.Count, "servers 2, 3 and 4 folded")
	assert.Equal(t, seconds(300+400+500), ovf.Sum)
	assert.Equal(t, gym[overflowKey].Buckets, ovf.Buckets)
	for i := range 2 {
		key := fmt.Sprintf("gen_ai.operation.name=chat,gen_ai.provider.name=openai,nemo.gym.model_call.dialect=chat,nemo.gym.server.name=server-%d", i)
		assert.Equal(t, seconds(float64(100*(i+1))), gen[key].Sum, key)
	}

	tok := byAttrs(points(out, tokenUsage))
	assert.Len(t, tok, 2, "the admitted token series only")
	_, derived := tok[overflowKey]
	assert.False(t, derived, "the tokens' overflow series is not derived")
}

// A point the derivation cannot place is not derived, and its Gym point stays: a duration
// without an outcome, tokens without a type; a metric that is not the schema's (a unit of
// seconds) is passed on unbounded and nothing is derived from it.
func TestGenAINotDerived(t *testing.T) {
	tp := newTestProcessor(t, genAIOn)
	md := newBatch().resource(gymResource("model-0")).
		histogram("gym.model_call.duration_ms", "ms", cumulative,
			hist(attrs{srvName: "policy", dialect: "chat"}, 1, 10, modelCallMS, 300, 300, 300, 0, 1)).
		histogram("gym.model_call.tokens", "{token}", cumulative,
			hist(attrs{srvName: "policy", dialect: "chat"}, 1, 10, modelTokens, 10, 10, 10, 1)).
		histogram("gym.model_call.ttft_ms", "s", cumulative,
			hist(attrs{srvName: "policy", dialect: "chat"}, 1, 10, modelTTFTS, 0.1, 0.1, 0.1, 0, 1)).md
	out := tp.run(t, md)
	assert.Len(t, points(out, "gym.model_call.duration_ms"), 1)
	assert.Len(t, points(out, "gym.model_call.tokens"), 1)
	assert.Len(t, points(out, "gym.model_call.ttft_ms"), 1)
	for _, name := range []string{opDuration, opTTFC, tokenUsage} {
		assert.Empty(t, points(out, name), name)
	}
	assert.Equal(t, int64(1), tp.counter(t, "points_mismatched"), "the ttft in seconds")
}

// A point without a dialect gets the _OTHER provider and no dialect: still its own series.
func TestGenAINoDialect(t *testing.T) {
	tp := newTestProcessor(t, genAIOn)
	md := newBatch().resource(gymResource("model-0")).
		histogram("gym.model_call.ttft_ms", "ms", cumulative,
			hist(attrs{srvName: "policy"}, 1, 10, modelTTFTMS, 60, 60, 60, 0, 1),
			hist(attrs{srvName: "policy", dialect: "unknown"}, 1, 10, modelTTFTMS, 70, 70, 70, 0, 1)).md
	out := tp.run(t, md)
	got := byAttrs(points(out, opTTFC))
	assert.Equal(t, 0.06, got["gen_ai.operation.name=chat,gen_ai.provider.name=_OTHER,nemo.gym.server.name=policy"].Sum)
	assert.Equal(t, 0.07, got["gen_ai.operation.name=chat,gen_ai.provider.name=_OTHER,nemo.gym.model_call.dialect=unknown,nemo.gym.server.name=policy"].Sum)
}

// Exemplars follow their point, their values in seconds; no-recorded-value points stay so.
func TestGenAIExemplarsAndFlags(t *testing.T) {
	tp := newTestProcessor(t, genAIOn)
	md := newBatch().resource(gymResource("model-0")).
		histogram("gym.model_call.duration_ms", "ms", cumulative,
			hist(attrs{srvName: "policy", dialect: "chat", outcomeKey: "ok"}, 1, 10, modelCallMS, 300, 300, 300, 0, 1),
			hist(attrs{srvName: "judge", dialect: "chat", outcomeKey: "ok"}, 1, 10, modelCallMS, 0, 0, 0)).md
	dps := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Histogram().DataPoints()
	ex := dps.At(0).Exemplars().AppendEmpty()
	ex.SetDoubleValue(300)
	ex.SetTraceID([16]byte{1})
	exi := dps.At(0).Exemplars().AppendEmpty()
	exi.SetIntValue(250)
	dps.At(1).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	out := tp.run(t, md)

	var got pmetric.HistogramDataPointSlice
	for _, m := range out.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().All() {
		if m.Name() == opDuration {
			got = m.Histogram().DataPoints()
		}
	}
	require.Equal(t, 2, got.Len())
	e := got.At(0).Exemplars()
	require.Equal(t, 2, e.Len())
	assert.Equal(t, 0.3, e.At(0).DoubleValue())
	assert.Equal(t, [16]byte{1}, [16]byte(e.At(0).TraceID()))
	assert.Equal(t, 0.25, e.At(1).DoubleValue())
	assert.True(t, got.At(1).Flags().NoRecordedValue())
	assert.False(t, got.At(0).Flags().NoRecordedValue())
}

// A GenAI metric that arrives by OTLP is a schema metric like any: bounded (undeclared
// attributes removed, the model kept), never a source of another derived metric.
func TestGenAIFromOTLPBounded(t *testing.T) {
	tp := newTestProcessor(t, genAIOn)
	md := newBatch().resource(gymResource("app-0")).
		histogram(opDuration, "s", cumulative,
			hist(attrs{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4.1",
				"server.address": "api.example", "error.type": "connection reset by 10.0.0.1"}, 1, 10, modelCallS, 0.3, 0.3, 0.3, 0, 1),
			hist(attrs{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4.1",
				"server.address": "api.other", "error.type": "connection reset by 10.0.0.2"}, 1, 10, modelCallS, 0.4, 0.4, 0.4, 0, 1)).
		histogram(tokenUsage, "{token}", cumulative,
			hist(attrs{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.token.type": "input", "gen_ai.response.model": "gpt-4.1-2025"},
				1, 10, modelTokens, 10, 10, 10, 1)).md
	out := tp.run(t, md)
	dur := points(out, opDuration)
	require.Len(t, dur, 1, "merged once server.address is removed")
	assert.Equal(t, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4.1", "error.type": "_OTHER"}, dur[0].Attrs)
	assert.Equal(t, uint64(2), dur[0].Count)
	assert.InDelta(t, 0.7, dur[0].Sum, 1e-12)
	tok := points(out, tokenUsage)
	require.Len(t, tok, 1)
	assert.Equal(t, "gpt-4.1-2025", tok[0].Attrs["gen_ai.response.model"])
	assert.Positive(t, tp.counter(t, "attributes_removed"))
}

// The schema's seconds boundaries are Gym's milliseconds divided by 1000, exactly.
func TestGenAISchemaBounds(t *testing.T) {
	for _, r := range genAIRules {
		from, to := schema.Get(r.from).Bounds, schema.Get(r.to).Bounds
		require.Len(t, to, len(from), schema.Get(r.to).Name)
		for i := range from {
			assert.Equal(t, from[i]/r.scale, to[i], "%s bound %d", schema.Get(r.to).Name, i)
		}
	}
	assert.Equal(t, modelCallS, schema.BucketsModelCallS)
	assert.Equal(t, modelTTFTS, schema.BucketsModelTtftS)
}

// BenchmarkProcessGenAI is the model-call batch of a busy model server (4 servers x 3
// dialects x 3 outcomes of durations, TTFTs, 3 token types: 72 series) with the derivation on,
// and off for comparison.
func BenchmarkProcessGenAI(b *testing.B) {
	batch := func(k int) pmetric.Metrics {
		var durs, ttfts, toks []pt
		for s := range 4 {
			for _, d := range []string{"chat", "responses", "messages"} {
				srv := fmt.Sprintf("server-%d", s)
				for _, o := range []string{"ok", "timeout", "rate_limited"} {
					durs = append(durs, hist(attrs{srvName: srv, dialect: d, outcomeKey: o, "req": "x"}, 1, 10*k, modelCallMS, float64(300*k), 300, 300, 0, 0, uint64(k)))
				}
				ttfts = append(ttfts, hist(attrs{srvName: srv, dialect: d}, 1, 10*k, modelTTFTMS, float64(90*k), 90, 90, 0, uint64(k)))
				for _, typ := range []string{"input", "output", "reasoning"} {
					toks = append(toks, hist(attrs{srvName: srv, dialect: d, gymTokenKey: typ}, 1, 10*k, modelTokens, float64(100*k), 100, 100, 0, 0, uint64(k)))
				}
			}
		}
		return newBatch().resource(gymResource("model-0")).
			histogram("gym.model_call.duration_ms", "ms", cumulative, durs...).
			histogram("gym.model_call.ttft_ms", "ms", cumulative, ttfts...).
			histogram("gym.model_call.tokens", "{token}", cumulative, toks...).md
	}
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("genai_conventions=%t", on), func(b *testing.B) {
			benchProcess(b, newTestProcessor(b, func(c *Config) { c.GenAIConventions = on }), batch, false)
		})
	}
}

// The derived points are already bounded: a second gymattrs (without the switch) changes
// nothing in them, and counts nothing.
func TestGenAIDerivedAreBounded(t *testing.T) {
	out := newTestProcessor(t, genAIOn).run(t, modelCallBatch(1, cumulative))
	again := newTestProcessor(t, nil)
	in := pmetric.NewMetrics()
	out.CopyTo(in)
	got := again.run(t, in)
	for _, name := range []string{opDuration, opTTFC, tokenUsage} {
		require.NotEmpty(t, points(out, name))
		assert.Equal(t, points(out, name), points(got, name), name)
	}
	for _, c := range []string{"attributes_removed", "values_normalised", "points_merged", "points_mismatched"} {
		assert.Zero(t, again.counter(t, c), c)
	}
}
