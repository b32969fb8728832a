package bound

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// ruleCase is one data point of one instrument: the attributes it arrives with, and either
// the attributes it leaves with or the reason it is dropped.
type ruleCase struct {
	name string
	inst string
	in   attrs
	want attrs  // nil with drop set
	drop string // points_dropped reason
}

// onePoint builds a batch holding one point of inst, of the instrument's schema kind and unit.
func onePoint(inst string, a attrs) pmetric.Metrics {
	id, ok := schema.Lookup(inst)
	if !ok {
		panic("not a schema instrument: " + inst)
	}
	in := schema.Get(id)
	b := newBatch().resource(gymResource("rules"))
	p := pt{a: a, start: 1, t: 2, i: 1}
	if in.ValueType == schema.ValueDouble {
		p.double, p.f = true, 1.5
	}
	switch in.Kind {
	case schema.KindCounter:
		b.sum(inst, in.Unit, true, cumulative, p)
	case schema.KindUpDown:
		b.sum(inst, in.Unit, false, cumulative, p)
	case schema.KindGauge:
		b.gauge(inst, in.Unit, p)
	case schema.KindHistogram:
		p.bounds = in.Bounds
		p.buckets = make([]uint64, len(in.Bounds)+1)
		p.buckets[0], p.count, p.sum, p.min, p.max = 1, 1, 0.5, 0.5, 0.5
		b.histogram(inst, in.Unit, cumulative, p)
	}
	return b.md
}

// ruleRegistry is the configuration every rule case runs with.
func ruleConfig(cfg *Config) {
	cfg.FailureKinds = []string{"lab_quirk"}
	cfg.HealthChecks = []string{"lab_check"}
	cfg.IgnoredHealthChecks = []string{"agent_turn_hollow"}
}

func runRuleCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTestProcessor(t, ruleConfig)
			out := tp.run(t, onePoint(tc.inst, tc.in))
			pts := points(out, tc.inst)
			if tc.drop != "" {
				assert.Empty(t, pts, "the point is dropped")
				assert.EqualValues(t, 1, tp.dropped(t, tc.drop), "counted as dropped for %s", tc.drop)
				assert.Zero(t, out.ResourceMetrics().Len(), "a resource left empty goes")
				return
			}
			require.Len(t, pts, 1)
			want := map[string]any{}
			for k, v := range tc.want {
				switch x := v.(type) {
				case int:
					want[k] = int64(x)
				default:
					want[k] = v
				}
			}
			assert.Equal(t, want, pts[0].Attrs)
			assert.Zero(t, tp.counter(t, "points_dropped"))
		})
	}
}

const (
	completed  = "gym.rollout.completed_total"
	rewarded   = "gym.rollout.rewarded_total"
	verdicts   = "gym.rollout.health_verdict_total"
	flagged    = "gym.rollout.health_flagged_total"
	outcome    = "nemo.gym.rollout.outcome"
	dispatch   = "nemo.gym.rollout.dispatch.name"
	fKind      = "nemo.gym.failure_kind"
	fClass     = "nemo.gym.failure_class"
	fType      = "nemo.gym.failure_type"
	rng        = "nemo.gym.rollout.reward.range"
	masked     = "nemo.gym.rollout.masked"
	check      = "nemo.gym.health.check"
	verdict    = "nemo.gym.health.verdict"
	responses  = "gym.server.responses_total"
	status     = "http.response.status_code"
	cancelReqs = "gym.server.requests.cancelled_total"
	route      = "http.route"
	phase      = "nemo.gym.request.phase"
)

// failed is a failed completion with the given extra attributes.
func failed(extra attrs) attrs {
	a := attrs{outcome: "failed", dispatch: "math"}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

func TestRuleUndeclaredAttributesRemoved(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "free text on a completion", inst: completed,
			in:   failed(attrs{"failure_reason": "read timed out after 300s", "failure_message": "Traceback ...", "rollout.id": "r-123"}),
			want: failed(nil)},
		{name: "another instrument's attribute", inst: "gym.sandbox.active",
			in:   attrs{"nemo.gym.sandbox.provider": "docker", dispatch: "math"},
			want: attrs{"nemo.gym.sandbox.provider": "docker"}},
		{name: "instrument without attributes", inst: "gym.server.requests.in_flight",
			in: attrs{route: "/v1/responses", "user.id": "u1"}, want: attrs{}},
		{name: "an SDK's overflow series folds into the overflow series", inst: "gym.sandbox.active",
			in:   attrs{schema.OverflowAttribute: true},
			want: attrs{schema.OverflowAttribute: true}},
		{name: "an overflow marker set false is removed", inst: "gym.sandbox.active",
			in:   attrs{"nemo.gym.sandbox.provider": "docker", schema.OverflowAttribute: false},
			want: attrs{"nemo.gym.sandbox.provider": "docker"}},
		{name: "structured values", inst: "gym.sandbox.active",
			in:   attrs{"nemo.gym.sandbox.provider": "docker", "labels": map[string]any{"a": "b"}, "blob": []byte("xyz")},
			want: attrs{"nemo.gym.sandbox.provider": "docker"}},
	})
}

func TestRuleFailureKind(t *testing.T) {
	long := "lab:" + strings.Repeat("q", 125) // 129 bytes
	runRuleCases(t, []ruleCase{
		{name: "registered", inst: completed, in: failed(attrs{fKind: "transport_timeout"}), want: failed(attrs{fKind: "transport_timeout"})},
		{name: "configured", inst: completed, in: failed(attrs{fKind: "lab_quirk"}), want: failed(attrs{fKind: "lab_quirk"})},
		{name: "namespaced", inst: completed, in: failed(attrs{fKind: "lab:quirk_2"}), want: failed(attrs{fKind: "lab:quirk_2"})},
		{name: "namespaced at 128 bytes", inst: completed, in: failed(attrs{fKind: long[:128]}), want: failed(attrs{fKind: long[:128]})},
		{name: "namespaced over 128 bytes", inst: completed, in: failed(attrs{fKind: long}), want: failed(attrs{fKind: "unregistered"})},
		{name: "bad namespace", inst: completed, in: failed(attrs{fKind: "Lab:quirk"}), want: failed(attrs{fKind: "unregistered"})},
		{name: "two colons", inst: completed, in: failed(attrs{fKind: "a:b:c"}), want: failed(attrs{fKind: "unregistered"})},
		{name: "unregistered", inst: completed, in: failed(attrs{fKind: "no_such_kind"}), want: failed(attrs{fKind: "unregistered"})},
		{name: "free text", inst: completed, in: failed(attrs{fKind: "connection reset by peer"}), want: failed(attrs{fKind: "unregistered"})},
		{name: "empty: left out", inst: completed, in: failed(attrs{fKind: ""}), want: failed(nil)},
		{name: "int: converted, unregistered", inst: completed, in: failed(attrs{fKind: 5}), want: failed(attrs{fKind: "unregistered"})},
		{name: "map: wrong type", inst: completed, in: failed(attrs{fKind: map[string]any{"k": "v"}}), drop: "wrong_type"},
	})
}

func TestRuleFailureClassAndType(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "class ok", inst: completed, in: failed(attrs{fClass: "agent_request_failed"}), want: failed(attrs{fClass: "agent_request_failed"})},
		{name: "class upper case", inst: completed, in: failed(attrs{fClass: "AgentFailed"}), want: failed(attrs{fClass: "other"})},
		{name: "class at 64 bytes", inst: completed, in: failed(attrs{fClass: strings.Repeat("c", 64)}), want: failed(attrs{fClass: strings.Repeat("c", 64)})},
		{name: "class over 64 bytes", inst: completed, in: failed(attrs{fClass: strings.Repeat("c", 65)}), want: failed(attrs{fClass: "other"})},
		{name: "class empty", inst: completed, in: failed(attrs{fClass: ""}), want: failed(nil)},
		{name: "type ok", inst: completed, in: failed(attrs{fType: "TimeoutError"}), want: failed(attrs{fType: "TimeoutError"})},
		{name: "type dotted", inst: completed, in: failed(attrs{fType: "httpx.ReadTimeout"}), want: failed(attrs{fType: "httpx.ReadTimeout"})},
		{name: "type free text", inst: completed, in: failed(attrs{fType: "read timed out after 300s"}), want: failed(attrs{fType: "other"})},
		{name: "type empty segment", inst: completed, in: failed(attrs{fType: "a..b"}), want: failed(attrs{fType: "other"})},
		{name: "type over 128 bytes", inst: completed, in: failed(attrs{fType: strings.Repeat("T", 129)}), want: failed(attrs{fType: "other"})},
		{name: "all three", inst: completed,
			in:   failed(attrs{fClass: "judge", fKind: "judge_failed", fType: "ValueError"}),
			want: failed(attrs{fClass: "judge", fKind: "judge_failed", fType: "ValueError"})},
		{name: "omitted keeps them", inst: completed,
			in:   attrs{outcome: "omitted", dispatch: "math", fKind: "shutdown"},
			want: attrs{outcome: "omitted", dispatch: "math", fKind: "shutdown"}},
		{name: "scored drops them", inst: completed,
			in:   attrs{outcome: "scored", dispatch: "math", fClass: "judge", fKind: "judge_failed", fType: "ValueError"},
			want: attrs{outcome: "scored", dispatch: "math"}},
	})
}

func TestRuleOutcomeAndVerdict(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "outcome not in the set", inst: completed, in: attrs{outcome: "crashed", dispatch: "math"}, drop: "rejected_value"},
		{name: "outcome case matters", inst: completed, in: attrs{outcome: "Scored", dispatch: "math"}, drop: "rejected_value"},
		{name: "outcome of another type", inst: completed, in: attrs{outcome: 1, dispatch: "math"}, drop: "rejected_value"},
		{name: "health counter narrows outcome", inst: verdicts, in: attrs{verdict: "healthy", outcome: "omitted"}, drop: "rejected_value"},
		{name: "health counter outcome ok", inst: verdicts, in: attrs{verdict: "unobserved", outcome: "failed"}, want: attrs{verdict: "unobserved", outcome: "failed"}},
		{name: "verdict not in the set", inst: verdicts, in: attrs{verdict: "sick", outcome: "scored"}, drop: "rejected_value"},
		{name: "missing attribute stays missing", inst: verdicts, in: attrs{verdict: "healthy"}, want: attrs{verdict: "healthy"}},
		{name: "pool enum", inst: "gym.http.connection_pool.queue_duration_ms",
			in:   attrs{"nemo.gym.http.connection_pool.queue_constraint": "per_host", "nemo.gym.http.connection_pool.queue_outcome": "abandoned", "nemo.gym.http.destination.server.name": "policy"},
			want: attrs{"nemo.gym.http.connection_pool.queue_constraint": "per_host", "nemo.gym.http.connection_pool.queue_outcome": "abandoned", "nemo.gym.http.destination.server.name": "policy"}},
		{name: "pool enum bad", inst: "gym.http.connection_pool.connect_duration_ms",
			in: attrs{"nemo.gym.http.connection_pool.connect_outcome": "timeout", "nemo.gym.http.destination.server.name": "policy"}, drop: "rejected_value"},
		{name: "cpu mode", inst: "process.cpu.time", in: attrs{"cpu.mode": "wait"}, want: attrs{"cpu.mode": "wait"}},
		{name: "cpu mode bad", inst: "process.cpu.time", in: attrs{"cpu.mode": "idle"}, drop: "rejected_value"},
	})
}

func TestRuleRewardRange(t *testing.T) {
	rw := func(r any) attrs { return attrs{rng: r, dispatch: "math", masked: false} }
	runRuleCases(t, []ruleCase{
		{name: "range value", inst: rewarded, in: rw("partial"), want: rw("partial")},
		{name: "every range value", inst: rewarded, in: rw("above_one"), want: rw("above_one")},
		{name: "raw reward 0.5", inst: rewarded, in: rw(0.5), want: rw("partial")},
		{name: "raw reward 1", inst: rewarded, in: rw(1), want: rw("full")},
		{name: "raw reward 1.0", inst: rewarded, in: rw(1.0), want: rw("full")},
		{name: "raw reward 0", inst: rewarded, in: rw(0), want: rw("zero")},
		{name: "raw reward -0.0", inst: rewarded, in: rw(math.Copysign(0, -1)), want: rw("zero")},
		{name: "raw reward negative", inst: rewarded, in: rw(-2.5), want: rw("negative")},
		{name: "raw reward 7", inst: rewarded, in: rw(7.0), want: rw("above_one")},
		{name: "raw reward +Inf", inst: rewarded, in: rw(math.Inf(1)), want: rw("above_one")},
		{name: "raw reward -Inf", inst: rewarded, in: rw(math.Inf(-1)), want: rw("negative")},
		{name: "raw reward NaN: unscored", inst: rewarded, in: rw(math.NaN()), drop: "unscored_reward"},
		{name: "reward as a string", inst: rewarded, in: rw("0.25"), want: rw("partial")},
		{name: "reward string NaN", inst: rewarded, in: rw("NaN"), drop: "unscored_reward"},
		{name: "not a range", inst: rewarded, in: rw("high"), drop: "rejected_value"},
		{name: "masked as a string", inst: rewarded, in: attrs{rng: "full", dispatch: "m", masked: "true"}, want: attrs{rng: "full", dispatch: "m", masked: true}},
		{name: "masked as an int", inst: rewarded, in: attrs{rng: "full", dispatch: "m", masked: 1}, drop: "wrong_type"},
	})
}

func TestRuleHealthCheck(t *testing.T) {
	fl := func(c string) attrs { return attrs{check: c, outcome: "scored"} }
	runRuleCases(t, []ruleCase{
		{name: "registered", inst: flagged, in: fl("model_call_failed"), want: fl("model_call_failed")},
		{name: "configured", inst: flagged, in: fl("lab_check"), want: fl("lab_check")},
		{name: "unknown", inst: flagged, in: fl("my_new_check"), want: fl("unregistered")},
		{name: "empty", inst: flagged, in: fl(""), want: fl("unregistered")},
		{name: "ignored: dropped, never counted as flagged", inst: flagged, in: fl("agent_turn_hollow"), drop: "ignored_health_check"},
		{name: "sentinel", inst: flagged, in: fl("unregistered"), want: fl("unregistered")},
	})
}

func TestRuleRouteAndPhase(t *testing.T) {
	c := func(r, ph any) attrs { return attrs{route: r, phase: ph} }
	runRuleCases(t, []ruleCase{
		{name: "template", inst: cancelReqs, in: c("/v1/responses/{id}", "before_response"), want: c("/v1/responses/{id}", "before_response")},
		{name: "query string", inst: cancelReqs, in: c("/items/123?x=1", "during_response"), want: c("unmatched", "during_response")},
		{name: "no leading slash", inst: cancelReqs, in: c("items", "before_response"), want: c("unmatched", "before_response")},
		{name: "empty", inst: cancelReqs, in: c("", "before_response"), want: c("unmatched", "before_response")},
		{name: "at 256 bytes", inst: cancelReqs, in: c("/"+strings.Repeat("r", 255), "before_response"), want: c("/"+strings.Repeat("r", 255), "before_response")},
		{name: "over 256 bytes", inst: cancelReqs, in: c("/"+strings.Repeat("r", 256), "before_response"), want: c("unmatched", "before_response")},
		{name: "sentinel", inst: cancelReqs, in: c("unmatched", "before_response"), want: c("unmatched", "before_response")},
		{name: "phase from response_started true", inst: cancelReqs, in: c("/a", true), want: c("/a", "during_response")},
		{name: "phase from response_started false", inst: cancelReqs, in: c("/a", false), want: c("/a", "before_response")},
		{name: "phase not in the set", inst: cancelReqs, in: c("/a", "after_response"), drop: "rejected_value"},
	})
}

func TestRuleIntAttributes(t *testing.T) {
	sc := func(v any) attrs { return attrs{status: v} }
	gen := func(v any) attrs { return attrs{"nemo.gym.gc.generation": v} }
	runRuleCases(t, []ruleCase{
		{name: "status 200", inst: responses, in: sc(200), want: sc(200)},
		{name: "status 100", inst: responses, in: sc(100), want: sc(100)},
		{name: "status 599", inst: responses, in: sc(599), want: sc(599)},
		{name: "status 99", inst: responses, in: sc(99), drop: "rejected_value"},
		{name: "status 600", inst: responses, in: sc(600), drop: "rejected_value"},
		{name: "status as a string", inst: responses, in: sc("200"), want: sc(200)},
		{name: "status with leading zeros", inst: responses, in: sc("0404"), want: sc(404)},
		{name: "status string out of range", inst: responses, in: sc("700"), drop: "rejected_value"},
		{name: "status string not digits", inst: responses, in: sc("2xx"), drop: "wrong_type"},
		{name: "status string signed", inst: responses, in: sc("+200"), drop: "wrong_type"},
		{name: "status as an integral double", inst: responses, in: sc(503.0), want: sc(503)},
		{name: "status as a fraction", inst: responses, in: sc(200.5), drop: "wrong_type"},
		{name: "status as a bool", inst: responses, in: sc(true), drop: "wrong_type"},
		{name: "generation 0", inst: "gym.gc.collections_total", in: gen(0), want: gen(0)},
		{name: "generation 2", inst: "gym.gc.pause_duration_ms", in: gen(2), want: gen(2)},
		{name: "generation 3", inst: "gym.gc.count", in: gen(3), drop: "rejected_value"},
		{name: "generation as a string", inst: "gym.gc.count", in: gen("1"), want: gen(1)},
	})
}

func TestRuleServerTypeAndStrings(t *testing.T) {
	st := func(typ any) attrs {
		a := attrs{"nemo.gym.startup.stage": "load_model", "nemo.gym.server.name": "policy", "nemo.gym.server.worker": false}
		if typ != nil {
			a["nemo.gym.server.type"] = typ
		}
		return a
	}
	stage := "gym.server.startup_stage_duration_ms"
	long := strings.Repeat("d", 300)
	runes := strings.Repeat("d", 255) + "é" // 257 bytes: the cut may not split é
	runRuleCases(t, []ruleCase{
		{name: "server type", inst: stage, in: st("orchestrator"), want: st("orchestrator")},
		{name: "server type other", inst: stage, in: st("gpu_servers"), want: st("other")},
		{name: "server type empty: left out", inst: stage, in: st(""), want: st(nil)},
		{name: "worker as a string", inst: stage,
			in:   attrs{"nemo.gym.startup.stage": "s", "nemo.gym.server.name": "n", "nemo.gym.server.worker": "false"},
			want: attrs{"nemo.gym.startup.stage": "s", "nemo.gym.server.name": "n", "nemo.gym.server.worker": false}},
		{name: "worker not a bool", inst: stage,
			in: attrs{"nemo.gym.startup.stage": "s", "nemo.gym.server.name": "n", "nemo.gym.server.worker": "yes"}, drop: "wrong_type"},
		{name: "string capped at 256 bytes", inst: completed, in: attrs{outcome: "scored", dispatch: long}, want: attrs{outcome: "scored", dispatch: long[:256]}},
		{name: "string cut at a rune boundary", inst: completed, in: attrs{outcome: "scored", dispatch: runes}, want: attrs{outcome: "scored", dispatch: runes[:255]}},
		{name: "string cut before invalid UTF-8", inst: completed, in: attrs{outcome: "scored", dispatch: "ma\xffth"}, want: attrs{outcome: "scored", dispatch: "ma"}},
		{name: "string empty stays", inst: completed, in: attrs{outcome: "scored", dispatch: ""}, want: attrs{outcome: "scored", dispatch: ""}},
		{name: "int as a string attribute", inst: completed, in: attrs{outcome: "scored", dispatch: 42}, want: attrs{outcome: "scored", dispatch: "42"}},
		{name: "bool as a string attribute", inst: "gym.sandbox.active", in: attrs{"nemo.gym.sandbox.provider": true}, want: attrs{"nemo.gym.sandbox.provider": "true"}},
		{name: "bytes as a string attribute", inst: "gym.sandbox.active", in: attrs{"nemo.gym.sandbox.provider": []byte("docker")}, drop: "wrong_type"},
	})
}

// The counters of attributes removed and values normalised count every point's changes.
func TestRuleTelemetry(t *testing.T) {
	tp := newTestProcessor(t, ruleConfig)
	tp.run(t, newBatch().resource(gymResource("a")).
		counter(completed, "1",
			pt{a: failed(attrs{"failure_reason": "x", fKind: "nope", "rollout.id": "1"}), t: 1, i: 1},  // 2 removed, 1 normalised
			pt{a: failed(attrs{"failure_reason": "y", fKind: "nope2", "rollout.id": "2"}), t: 1, i: 1}, // 2 removed, 1 normalised, merged
			pt{a: attrs{outcome: "scored", dispatch: "math", fKind: "shutdown"}, t: 1, i: 1},           // 1 removed
			pt{a: attrs{outcome: "bogus", dispatch: "math"}, t: 1, i: 1},                               // dropped
		).md)
	assert.EqualValues(t, 5, tp.counter(t, "attributes_removed"))
	assert.EqualValues(t, 2, tp.counter(t, "values_normalised"))
	assert.EqualValues(t, 1, tp.counter(t, "points_merged"))
	assert.EqualValues(t, 1, tp.dropped(t, "rejected_value"))
}
