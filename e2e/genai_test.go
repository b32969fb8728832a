//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// genai_conventions through the real binary: Gym's model calls, as OTLP from Gym's SDK and as
// model_call event lines through the gym receiver, also come out as the OpenTelemetry GenAI
// client metrics (semantic conventions v1.41.0), next to the gym.* ones, and the Prometheus
// exporter of the default configuration shows them under the names docs/gym.md gives.

const genaiOn = "yaml:processors::gymattrs::genai_conventions: true"

var (
	genaiCallMS   = []float64{100, 250, 500, 1000, 2000, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000}
	genaiCallS    = []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800}
	genaiTTFTMS   = []float64{50, 100, 250, 500, 1000, 2000, 5000, 10000, 30000, 60000, 120000, 300000}
	genaiTTFTS    = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	genaiTokensBs = []float64{16, 64, 256, 1024, 4096, 16384, 32768, 65536, 131072, 262144, 524288, 1048576}
)

// modelCallSDKBatch is export `round` of a model server's SDK (cumulative since start: every
// count is round times one call of the given value), and with app, of an application that
// sends its own gen_ai.client.operation.duration. Descriptions are the schema's, as the
// Prometheus exporter wants one help text per name.
func modelCallSDKBatch(round int, start, now pcommon.Timestamp, app bool) pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := sdkScope(md, "nemo_gym.telemetry", map[string]any{"service.name": "nemo-gym/policy-model", "service.instance.id": "e2e-genai-0"})
	r := uint64(round)
	histogram := func(sm pmetric.ScopeMetrics, name, unit string) pmetric.HistogramDataPointSlice {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		id, ok := schema.Lookup(name)
		if !ok {
			panic(name)
		}
		m.SetDescription(schema.Get(id).Description)
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		return h.DataPoints()
	}
	// calls of value v, r of them
	calls := func(dps pmetric.HistogramDataPointSlice, bounds []float64, v float64, attrs map[string]any) {
		dp := dps.AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(now)
		_ = dp.Attributes().FromRaw(attrs)
		dp.ExplicitBounds().FromRaw(bounds)
		counts := make([]uint64, len(bounds)+1)
		i := 0
		for i < len(bounds) && v > bounds[i] {
			i++
		}
		counts[i] = r
		dp.BucketCounts().FromRaw(counts)
		dp.SetCount(r)
		dp.SetSum(v * float64(r))
		dp.SetMin(v)
		dp.SetMax(v)
	}

	dur := histogram(sm, "gym.model_call.duration_ms", "ms")
	call := func(server, dialect, outcome string, v float64, extra ...string) {
		a := map[string]any{"nemo.gym.server.name": server, "nemo.gym.model_call.dialect": dialect, "nemo.gym.model_call.outcome": outcome}
		for i := 0; i+1 < len(extra); i += 2 {
			a[extra[i]] = extra[i+1]
		}
		calls(dur, genaiCallMS, v, a)
	}
	call("policy", "responses", "ok", 300, "gen_ai.request.id", "req-a")  // two streams of one
	call("policy", "responses", "ok", 1500, "gen_ai.request.id", "req-b") // series
	call("policy", "chat", "timeout", 60000)
	call("judge", "messages", "Rate Limited!", 50) // outcome `other`
	for i, v := range []float64{700, 800, 900} {   // past cardinality_limit 4: the overflow
		call(fmt.Sprintf("extra-%d", i), "chat", "ok", v)
	}
	calls(histogram(sm, "gym.model_call.ttft_ms", "ms"), genaiTTFTMS, 200,
		map[string]any{"nemo.gym.server.name": "policy", "nemo.gym.model_call.dialect": "responses"})
	tok := histogram(sm, "gym.model_call.tokens", "{token}")
	for typ, v := range map[string]float64{"input": 1000, "output": 200, "reasoning": 50} {
		calls(tok, genaiTokensBs, v, map[string]any{"nemo.gym.server.name": "policy", "nemo.gym.model_call.dialect": "responses", "nemo.gym.model_call.token.type": typ})
	}

	if !app {
		return md
	}
	asm := sdkScope(md, "opentelemetry.instrumentation.openai", map[string]any{"service.name": "chat-app"})
	calls(histogram(asm, "gen_ai.client.operation.duration", "s"), genaiCallS, 0.4, map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4.1",
		"server.address": "api.example", "error.type": "connection reset by 10.0.0.7",
	})
	return md
}

// histPoints are the histogram points of one metric of one service, by attributes.
func histPoints(t *testing.T, md pmetric.Metrics, service, name string) map[string]pmetric.HistogramDataPoint {
	t.Helper()
	out := map[string]pmetric.HistogramDataPoint{}
	for resource, m := range metricsNamed(md, nil, name) {
		if v, _ := resource.Get("service.name"); v.Str() != service {
			continue
		}
		require.Equal(t, pmetric.MetricTypeHistogram, m.Type(), name)
		for _, dp := range m.Histogram().DataPoints().All() {
			key := formatAttrs(dp.Attributes())
			_, dup := out[key]
			require.False(t, dup, "%s: two points of %s", name, key)
			out[key] = dp
		}
	}
	return out
}

// TestGenAIConventionsOTLP: OTLP in on the otlp receiver -> gymattrs with genai_conventions
// and cardinality_limit 4 -> otlp_http. Every derived point is its bounded Gym point in the
// conventions' names and units, series for series, the overflow series included.
func TestGenAIConventionsOTLP(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	col, _, otlpURL := startOTLP(t, "gymattrs.yaml", sink, nil, genaiOn, "yaml:processors::gymattrs::cardinality_limit: 4")

	const (
		svc        = "nemo-gym/policy-model"
		okResp     = `{gen_ai.operation.name="chat" gen_ai.provider.name="openai" nemo.gym.model_call.dialect="responses" nemo.gym.server.name="policy"}`
		overflow   = `{otel.metric.overflow=true}`
		gymOKResp  = `{nemo.gym.model_call.dialect="responses" nemo.gym.model_call.outcome="ok" nemo.gym.server.name="policy"}`
		gymTimeout = `{nemo.gym.model_call.dialect="chat" nemo.gym.model_call.outcome="timeout" nemo.gym.server.name="policy"}`
		gymOther   = `{nemo.gym.model_call.dialect="messages" nemo.gym.model_call.outcome="other" nemo.gym.server.name="judge"}`
	)
	start := pcommon.NewTimestampFromTime(time.Now().Add(-time.Minute))
	for round := 1; round <= 2; round++ {
		now := pcommon.NewTimestampFromTime(time.Now())
		postOTLP(t, otlpURL, modelCallSDKBatch(round, start, now, true))
		require.Equal(t, round, sink.Count(), "one export per request")
		out := sink.Exports()[round-1]
		r := uint64(round)

		// Duration: each derived series is its Gym series, in seconds.
		gym := histPoints(t, out, svc, "gym.model_call.duration_ms")
		gen := histPoints(t, out, svc, "gen_ai.client.operation.duration")
		pairs := map[string]string{
			gymOKResp:  okResp,
			gymTimeout: `{error.type="timeout" gen_ai.operation.name="chat" gen_ai.provider.name="openai" nemo.gym.model_call.dialect="chat" nemo.gym.server.name="policy"}`,
			gymOther:   `{error.type="other" gen_ai.operation.name="chat" gen_ai.provider.name="anthropic" nemo.gym.model_call.dialect="messages" nemo.gym.server.name="judge"}`,
			overflow:   overflow,
		}
		require.Len(t, gym, len(pairs), "round %d: Gym series (cardinality_limit 4)", round)
		require.Len(t, gen, len(pairs), "round %d: derived series: %v", round, keys(gen))
		for gk, dk := range pairs {
			g, ok := gym[gk]
			require.True(t, ok, "round %d: no Gym series %s; have %v", round, gk, keys(gym))
			d, ok := gen[dk]
			require.True(t, ok, "round %d: no derived series %s for %s; have %v", round, dk, gk, keys(gen))
			assert.Equal(t, g.Count(), d.Count(), "%s: count", dk)
			assert.Equal(t, g.BucketCounts().AsRaw(), d.BucketCounts().AsRaw(), "%s: bucket counts", dk)
			assert.Equal(t, genaiCallS, d.ExplicitBounds().AsRaw(), "%s: boundaries in seconds", dk)
			assert.Equal(t, g.Sum()/1000, d.Sum(), "%s: sum", dk)
			assert.Equal(t, g.Min()/1000, d.Min(), "%s: min", dk)
			assert.Equal(t, g.Max()/1000, d.Max(), "%s: max", dk)
			assert.Equal(t, g.StartTimestamp(), d.StartTimestamp())
			assert.Equal(t, g.Timestamp(), d.Timestamp())
		}
		// Written out for two of them: the merged streams, and the folded servers.
		assert.Equal(t, 2*r, gen[okResp].Count())
		assert.Equal(t, float64(1800*round)/1000, gen[okResp].Sum())
		assert.Equal(t, 0.3, gen[okResp].Min())
		assert.Equal(t, 1.5, gen[okResp].Max())
		assert.Equal(t, 3*r, gen[overflow].Count())
		assert.Equal(t, float64(2400*round)/1000, gen[overflow].Sum())

		ttfc := histPoints(t, out, svc, "gen_ai.client.operation.time_to_first_chunk")
		if assert.Contains(t, ttfc, okResp) {
			d := ttfc[okResp]
			assert.Equal(t, genaiTTFTS, d.ExplicitBounds().AsRaw())
			assert.Equal(t, 0.2*float64(round), d.Sum())
			assert.Equal(t, r, d.Count())
		}
		assert.Len(t, ttfc, 1)

		// Tokens: input and output, never reasoning (part of output in the conventions).
		tok := histPoints(t, out, svc, "gen_ai.client.token.usage")
		want := map[string]float64{"input": 1000, "output": 200}
		require.Len(t, tok, len(want), "round %d: token series %v", round, keys(tok))
		for typ, v := range want {
			key := fmt.Sprintf(`{gen_ai.operation.name="chat" gen_ai.provider.name="openai" gen_ai.token.type=%q nemo.gym.model_call.dialect="responses" nemo.gym.server.name="policy"}`, typ)
			if assert.Contains(t, tok, key) {
				assert.Equal(t, v*float64(round), tok[key].Sum())
				assert.Equal(t, genaiTokensBs, tok[key].ExplicitBounds().AsRaw())
			}
		}
		assert.Len(t, histPoints(t, out, svc, "gym.model_call.tokens"), 3, "the Gym tokens keep reasoning")

		// The application's own GenAI metric: bounded, not derived from, not doubled.
		app := histPoints(t, out, "chat-app", "gen_ai.client.operation.duration")
		assert.Equal(t, []string{`{error.type="_OTHER" gen_ai.operation.name="chat" gen_ai.provider.name="openai" gen_ai.request.model="gpt-4.1"}`}, keys(app))
		assert.Len(t, histPoints(t, out, "chat-app", "gen_ai.client.token.usage"), 0)
	}
	require.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestGenAIConventionsPrometheus: the shipped default configuration with the switch on the
// command line. Gym's model_call event lines go through gym -> gymattrs, and OTLP from Gym's
// SDK through otlp -> gymattrs; the prometheus exporter shows the GenAI metrics as
// gen_ai_client_operation_duration_bucket... (no unit suffix), and a real Prometheus scraping it
// answers in seconds.
func TestGenAIConventionsPrometheus(t *testing.T) {
	t.Parallel()
	harness.PrometheusBinary(t) // fail or skip before starting anything
	col, ports := harness.StartDefaultCollector(t, genaiOn)
	prom := harness.StartPrometheus(t, fmt.Sprintf("127.0.0.1:%d", ports.Prometheus))

	body := strings.Join([]string{
		`{"event":"resource","attributes":{"service.name":"nemo-gym/genai","service.instance.id":"e2e-genai-events","nemo.run.id":"e2e-genai"}}`,
		`{"event":"model_call","server_name":"policy","dialect":"responses","outcome":"ok","duration_ms":1500,"ttft_ms":200,"tokens":{"input":1000,"output":200,"reasoning":50},"finish_reason":"stop"}`,
		`{"event":"model_call","server_name":"judge","dialect":"chat","outcome":"ok","duration_ms":800,"tokens":{"input":300,"output":20},"finish_reason":"length"}`,
		`{"event":"model_call","server_name":"policy","dialect":"responses","outcome":"timeout","duration_ms":60000,"tokens":{"input":999}}`,
	}, "\n") + "\n"
	status, ans := col.PostEvents(t, body)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 4, ans.Accepted, "%+v", ans)

	sdk := modelCallSDKBatch(1, pcommon.NewTimestampFromTime(time.Now().Add(-time.Minute)), pcommon.NewTimestampFromTime(time.Now()), false)
	sdk.ResourceMetrics().At(0).Resource().Attributes().PutStr("nemo.run.id", "e2e-genai-otlp")
	postOTLP(t, fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP), sdk)

	// The exporter's own text: the names and labels as Prometheus will scrape them.
	exporter := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Prometheus)
	var text string
	require.NoError(t, harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		var err error
		if text, err = harness.HTTPGet(exporter); err != nil {
			return err
		}
		if harness.TextValue(text, "gen_ai_client_operation_duration_count", "nemo_run_id", "e2e-genai") < 3 ||
			harness.TextValue(text, "gen_ai_client_operation_duration_count", "nemo_run_id", "e2e-genai-otlp") == 0 {
			return harness.ErrNotYet
		}
		return nil
	}), "no GenAI metrics on the exporter:\n%s", text)
	run := []string{"nemo_run_id", "e2e-genai"}
	assert.Equal(t, 1.0, harness.TextValue(text, "gen_ai_client_operation_duration_count", append(run, "error_type", "timeout", "gen_ai_provider_name", "openai", "gen_ai_operation_name", "chat")...))
	assert.Equal(t, 61.5, harness.TextValue(text, "gen_ai_client_operation_duration_sum", append(run, "nemo_gym_server_name", "policy")...), "1.5 s + 60 s")
	assert.Equal(t, 1.0, harness.TextValue(text, "gen_ai_client_operation_duration_bucket", append(run, "nemo_gym_server_name", "judge", "le", "1")...)+
		harness.TextValue(text, "gen_ai_client_operation_duration_bucket", append(run, "nemo_gym_server_name", "judge", "le", "1.0")...), "0.8 s within le=1")
	assert.Equal(t, 0.0, harness.TextValue(text, "gen_ai_client_operation_duration_bucket", append(run, "nemo_gym_server_name", "judge", "le", "0.5")...), "0.8 s above le=0.5")
	assert.Equal(t, 0.2, harness.TextValue(text, "gen_ai_client_operation_time_to_first_chunk_sum", run...))
	assert.Equal(t, 1300.0, harness.TextValue(text, "gen_ai_client_token_usage_sum", append(run, "gen_ai_token_type", "input")...), "a failed call records no tokens")
	assert.Equal(t, 220.0, harness.TextValue(text, "gen_ai_client_token_usage_sum", append(run, "gen_ai_token_type", "output")...))
	assert.Equal(t, 0.0, harness.TextValue(text, "gen_ai_client_token_usage_sum", append(run, "gen_ai_token_type", "reasoning")...))
	assert.Equal(t, 50.0, harness.TextValue(text, "gym_model_call_tokens_sum", append(run, "nemo_gym_model_call_token_type", "reasoning")...), "the Gym metrics stay")
	for _, unsuffixed := range []string{"gen_ai_client_operation_duration_seconds", "gen_ai_client_token_usage_total"} {
		assert.NotContains(t, text, unsuffixed, "no unit or _total suffix")
	}

	// A real Prometheus.
	for _, c := range []struct {
		query string
		want  map[string]float64
	}{
		{
			`sum by (gen_ai_provider_name, error_type) (gen_ai_client_operation_duration_count{nemo_run_id="e2e-genai"})`,
			map[string]float64{`{gen_ai_provider_name="openai"}`: 2, `{error_type="timeout",gen_ai_provider_name="openai"}`: 1},
		},
		{
			// 0.8 s in (0.5, 1], 1.5 s in (1, 2], 60 s in (30, 60]: the median is halfway
			// through (1, 2]
			`histogram_quantile(0.5, sum by (le) (gen_ai_client_operation_duration_bucket{nemo_run_id="e2e-genai"}))`,
			map[string]float64{`{}`: 1.5},
		},
		{
			`sum by (gen_ai_token_type) (gen_ai_client_token_usage_count{nemo_run_id="e2e-genai"})`,
			map[string]float64{`{gen_ai_token_type="input"}`: 2, `{gen_ai_token_type="output"}`: 2},
		},
		{
			// OTLP from Gym's SDK: 7 calls, the three folded servers included
			`sum by (gen_ai_provider_name) (gen_ai_client_operation_duration_count{nemo_run_id="e2e-genai-otlp"})`,
			map[string]float64{`{gen_ai_provider_name="openai"}`: 6, `{gen_ai_provider_name="anthropic"}`: 1},
		},
	} {
		waitVector(t, prom, c.query, c.want)
	}
	require.NoError(t, col.Stop(30*time.Second))
}
