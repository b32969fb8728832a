package aggregate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
)

// The events of Gym's newer releases, aggregated. The expected values are worked out by hand
// from docs/metrics.md and docs/receiver.md.

func byAttrKey(ps []point, key string) map[any]point {
	out := map[any]point{}
	for _, p := range ps {
		out[p.attrs[key]] = p
	}
	return out
}

func TestConcurrencyLimitsSnapshot(t *testing.T) {
	a, c := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st,
		// Two limits of the same attributes are summed; a component that breaks its pattern is
		// other, and folds into the same series as another bad one.
		`{"event":"concurrency.limits","limits":[`+
			`{"component":"model_server","limit_name":"max_requests","server_name":"policy","limit":64,"active":60,"queue_depth":12,"admission_timeouts":3,"admission_cancelled":1},`+
			`{"component":"model_server","limit_name":"max_requests","server_name":"policy","limit":16,"active":2,"queue_depth":0,"admission_timeouts":1,"admission_cancelled":0},`+
			`{"component":"Agent Pool","limit_name":"sandboxes","limit":8,"active":8,"queue_depth":5,"admission_cancelled":2},`+
			`{"component":"9pool","limit_name":"sandboxes","limit":2,"active":1,"queue_depth":0,"admission_cancelled":1}]}`)
	t0 := c.ts()
	md := a.Collect(Scope{})
	server := "policy"
	check := func(name string, policy, other int64) {
		t.Helper()
		got := byAttrKey(points(md, httpDefault, name), "nemo.gym.concurrency.component")
		require.Len(t, got, 2, name)
		assert.Equal(t, policy, got["model_server"].val, name)
		assert.Equal(t, map[string]any{"nemo.gym.concurrency.component": "model_server", "nemo.gym.concurrency.limit_name": "max_requests", "nemo.gym.server.name": server}, got["model_server"].attrs)
		assert.Equal(t, other, got["other"].val, name)
		assert.Equal(t, map[string]any{"nemo.gym.concurrency.component": "other", "nemo.gym.concurrency.limit_name": "sandboxes"}, got["other"].attrs, "no server: the attribute is left out")
	}
	check("gym.concurrency.limit", 80, 10)
	check("gym.concurrency.active", 62, 9)
	check("gym.concurrency.available", 18, 1)
	check("gym.concurrency.queue_depth", 12, 5)
	check("gym.concurrency.admission_cancelled_total", 1, 3)
	timeouts := points(md, httpDefault, "gym.concurrency.admission_timeouts_total")
	require.Len(t, timeouts, 1, "only the limits that have an admission timeout")
	assert.Equal(t, int64(4), timeouts[0].val)

	// The next snapshot replaces the totals; a counter that went down started again.
	c.advance(time.Minute)
	t1 := c.ts()
	feed(t, st, `{"event":"concurrency.limits","limits":[{"component":"model_server","limit_name":"max_requests","server_name":"policy","limit":64,"active":10,"queue_depth":0,"admission_timeouts":1,"admission_cancelled":4}]}`)
	md = a.Collect(Scope{})
	active := byAttrKey(points(md, httpDefault, "gym.concurrency.active"), "nemo.gym.concurrency.component")
	assert.Equal(t, int64(10), active["model_server"].val)
	assert.Equal(t, int64(9), active["other"].val, "a limit absent from the snapshot keeps its last value")
	timeouts = points(md, httpDefault, "gym.concurrency.admission_timeouts_total")
	assert.Equal(t, int64(1), timeouts[0].val)
	assert.Equal(t, t1, timeouts[0].start, "4 -> 1: the total restarted")
	cancelled := byAttrKey(points(md, httpDefault, "gym.concurrency.admission_cancelled_total"), "nemo.gym.concurrency.component")
	assert.Equal(t, int64(4), cancelled["model_server"].val)
	assert.Equal(t, t0, cancelled["model_server"].start, "1 -> 4 grows: same start")
}

func TestModelCalls(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st,
		`{"event":"model_call","server_name":"policy","dialect":"responses","outcome":"ok","duration_ms":1834.5,"ttft_ms":212.25,"tokens":{"input":1200,"output":350,"reasoning":120},"finish_reason":"completed"}`,
		`{"event":"model_call","server_name":"policy","dialect":"responses","outcome":"ok","duration_ms":165.5,"tokens":{"input":0,"output":40},"finish_reason":"max_output_tokens"}`,
		// A failed call: its duration counts, its tokens and finish reason do not.
		`{"event":"model_call","server_name":"policy","dialect":"responses","outcome":"rate_limited","duration_ms":12,"tokens":{"input":99},"finish_reason":"stop"}`,
		// No server name: unknown; a dialect outside the set: unknown; a finish reason outside: other.
		`{"event":"model_call","dialect":"completions","outcome":"ok","finish_reason":"eos"}`,
		`{"event":"model_call","server_name":"judge","dialect":"chat","outcome":"HTTP 500","duration_ms":3}`,
	)
	md := a.Collect(Scope{})

	dur := points(md, httpDefault, "gym.model_call.duration_ms")
	require.Len(t, dur, 3)
	byOutcome := byAttrKey(dur, "nemo.gym.model_call.outcome")
	assert.Equal(t, uint64(2), byOutcome["ok"].count)
	assert.Equal(t, 2000.0, byOutcome["ok"].sum)
	assert.Equal(t, uint64(1), byOutcome["rate_limited"].count)
	assert.Equal(t, map[string]any{"nemo.gym.server.name": "judge", "nemo.gym.model_call.dialect": "chat", "nemo.gym.model_call.outcome": "other"}, byOutcome["other"].attrs)

	ttft := points(md, httpDefault, "gym.model_call.ttft_ms")
	require.Len(t, ttft, 1, "only the streamed call")
	assert.Equal(t, 212.25, ttft[0].sum)

	tokens := byAttrKey(points(md, httpDefault, "gym.model_call.tokens"), "nemo.gym.model_call.token.type")
	require.Len(t, tokens, 3)
	assert.Equal(t, uint64(2), tokens["input"].count, "a reported 0 is a sample; the failed call's 99 is not")
	assert.Equal(t, 1200.0, tokens["input"].sum)
	assert.Equal(t, 390.0, tokens["output"].sum)
	assert.Equal(t, uint64(1), tokens["reasoning"].count)

	finish := byAttrKey(points(md, httpDefault, "gym.model_call.finish_total"), "nemo.gym.model_call.finish_reason")
	require.Len(t, finish, 3)
	assert.Equal(t, int64(1), finish["completed"].val)
	assert.Equal(t, int64(1), finish["max_output_tokens"].val)
	assert.Equal(t, map[string]any{"nemo.gym.server.name": "unknown", "nemo.gym.model_call.dialect": "unknown", "nemo.gym.model_call.finish_reason": "other"}, finish["other"].attrs)
	assert.NotContains(t, finish, "stop", "a failed call records no finish reason")
}

func TestMemorySample(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st,
		`{"event":"memory.sample","servers":[{"server_name":"math","server_type":"resources_servers","pid":4243,"rss":100,"pss":90,"rss_peak":150,"pss_peak":120,"processes":3},{"server_name":"policy","server_type":"gpu","pid":4250,"rss":500,"rss_peak":500,"processes":1}],"host":{"usage":1000,"available":3000,"total":4096,"peak":1200}}`,
		`{"event":"memory.sample","servers":[{"server_name":"math","server_type":"resources_servers","pid":4243,"rss":80,"pss":70,"rss_peak":150,"pss_peak":120,"processes":2}]}`,
	)
	md := a.Collect(Scope{})
	usage := points(md, httpDefault, "gym.server.memory.usage")
	require.Len(t, usage, 3, "math rss and pss, policy rss (no pss)")
	got := map[string]int64{}
	for _, p := range usage {
		got[p.attrs["nemo.gym.server.name"].(string)+"/"+p.attrs["memory.type"].(string)] = p.val
	}
	assert.Equal(t, map[string]int64{"math/rss": 80, "math/pss": 70, "policy/rss": 500}, got, "the latest sample")
	for _, p := range usage {
		if p.attrs["nemo.gym.server.name"] == "policy" {
			assert.Equal(t, map[string]any{"nemo.gym.server.name": "policy", "nemo.gym.server.type": "other", "process.pid": int64(4250), "memory.type": "rss"}, p.attrs)
		}
	}
	peak := points(md, httpDefault, "gym.server.memory.sampled_peak")
	assert.Len(t, peak, 3)
	procs := byAttrKey(points(md, httpDefault, "gym.server.processes"), "nemo.gym.server.name")
	assert.Equal(t, int64(2), procs["math"].val)
	for name, want := range map[string]int64{"gym.host.memory.usage": 1000, "gym.host.memory.available": 3000, "gym.host.memory.total": 4096, "gym.host.memory.sampled_peak": 1200} {
		p := points(md, httpDefault, name)
		require.Len(t, p, 1, name)
		assert.Equal(t, want, p[0].val, name)
		assert.Empty(t, p[0].attrs, name)
	}
}

func TestLensInstruments(t *testing.T) {
	a, c := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st,
		`{"event":"rollout.duration","duration_ms":41234.5}`,
		`{"event":"rollout.duration","duration_ms":90}`,
		`{"event":"verify","duration_ms":230.5,"completed":true}`,
		`{"event":"verify","completed":false}`,
		`{"event":"verify","duration_ms":10,"completed":true}`,
		`{"event":"verify","duration_ms":10,"completed":true}`,
		`{"event":"servers.active","count":4}`,
		`{"event":"servers.active","count":3}`,
	)
	md := a.Collect(Scope{})
	d := points(md, httpDefault, "gym.rollout.duration_ms")
	require.Len(t, d, 1)
	assert.Equal(t, uint64(2), d[0].count)
	assert.Equal(t, 41324.5, d[0].sum)
	v := points(md, httpDefault, "gym.verify.duration_ms")
	require.Len(t, v, 1)
	assert.Equal(t, uint64(3), v[0].count, "the verification without a duration records none")
	assert.Equal(t, 0.75, successRate(t, md), "3 completed of 4")
	assert.Equal(t, int64(3), points(md, httpDefault, "gym.servers.active")[0].val)

	// The ratio survives a checkpoint: its two counts are the state.
	var state []byte
	a.CollectWithState(Scope{}, &state)
	b := restoredCopy(t, state, c)
	st2 := newLines(b, 1<<16, events.DefaultResource("http", ""))
	feed(t, st2, `{"event":"verify","completed":false}`)
	assert.Equal(t, 0.6, successRate(t, b.Collect(Scope{})), "3 completed of 5")
}

func successRate(t *testing.T, md pmetric.Metrics) float64 {
	t.Helper()
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if m := ms.At(j); m.Name() == "gym.verify.success_rate" {
				require.Equal(t, pmetric.MetricTypeGauge, m.Type())
				dp := m.Gauge().DataPoints().At(0)
				require.Equal(t, pmetric.NumberDataPointValueTypeDouble, dp.ValueType())
				return dp.DoubleValue()
			}
		}
	}
	t.Fatal("no gym.verify.success_rate")
	return 0
}
