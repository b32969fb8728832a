package bound

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// What NeMo Gym's own telemetry code sends, as its SDK sends it: the units it states (""
// for nemo-lens' gauges, "1" for the older concurrency gauges), its older spellings
// (success/failure), its own overflow value (other) and the instruments of its older
// observability modules and of the HTTP instrumentations. Expected values are written by hand
// from docs/metrics.md.

const site = "nemo.gym.concurrency.site"

// unitOf returns the unit of the named metric in md.
func unitOf(t *testing.T, md pmetric.Metrics, name string) string {
	t.Helper()
	return metricNamed(t, md, name).Unit()
}

// The units Gym states are accepted: the points are bounded like any (undeclared attributes
// removed, series limited with an overflow series) and exported with the schema's unit.
func TestGymRealUnits(t *testing.T) {
	tp := newTestProcessor(t, limit(3))
	// nemo-lens' success rate (unit ""): two streams that differ by an undeclared attribute
	// are one series, the newest value wins.
	md := newBatch().resource(gymResource("lens")).
		gauge("gym.verify.success_rate", "", pt{a: attrs{"verifier": "a"}, t: 10, f: 0.5, double: true},
			pt{a: attrs{"verifier": "b"}, t: 11, f: 0.75, double: true}).
		gauge("gym.servers.active", "", pt{t: 10, i: 4}).
		// Gym's older TimedSemaphore gauges (unit "1", one attribute: the site): five sites
		// for a limit of 3 series, the rest in the overflow series.
		gauge("gym.concurrency.limit", "1", sitePoints(5, 10)...).
		sum("gym.concurrency.queue_depth", "1", false, cumulative,
			pt{a: attrs{site: "rollout_driver", "waiter.id": "w1"}, start: 1, t: 10, i: 2},
			pt{a: attrs{site: "rollout_driver", "waiter.id": "w2"}, start: 1, t: 10, i: 5}).
		counter("gym.concurrency.admission_cancelled_total", "1", pt{a: attrs{site: "model/policy"}, start: 1, t: 10, i: 3}).
		md
	out := tp.run(t, md)

	rate := points(out, "gym.verify.success_rate")
	require.Len(t, rate, 1)
	assert.Equal(t, 0.75, rate[0].Double)
	assert.Empty(t, rate[0].Attrs, "an undeclared attribute is removed")
	assert.Equal(t, "1", unitOf(t, out, "gym.verify.success_rate"), "exported with the schema's unit")
	assert.Equal(t, "{server}", unitOf(t, out, "gym.servers.active"))
	assert.EqualValues(t, 4, points(out, "gym.servers.active")[0].Int)

	limits := byAttrs(points(out, "gym.concurrency.limit"))
	require.Len(t, limits, 3, "cardinality limit 3, the overflow series included")
	assert.EqualValues(t, 10, limits[site+"=model.policy-0"].Int)
	assert.EqualValues(t, 11, limits[site+"=model.policy-1"].Int)
	assert.Contains(t, limits, overflowKey)
	assert.Equal(t, "{slot}", unitOf(t, out, "gym.concurrency.limit"))

	depth := points(out, "gym.concurrency.queue_depth")
	require.Len(t, depth, 1)
	assert.EqualValues(t, 7, depth[0].Int, "two streams of one site add up")
	assert.Equal(t, map[string]any{site: "rollout_driver"}, depth[0].Attrs)
	assert.Equal(t, "{waiter}", unitOf(t, out, "gym.concurrency.queue_depth"))

	cancelled := points(out, "gym.concurrency.admission_cancelled_total")
	require.Len(t, cancelled, 1)
	assert.Equal(t, map[string]any{site: "other"}, cancelled[0].Attrs, "a site that breaks its pattern")
	assert.EqualValues(t, 0, tp.counter(t, "points_mismatched"))
	assert.GreaterOrEqual(t, tp.counter(t, "attributes_removed"), int64(4))
	assertBounded(t, out)

	// A unit no Gym code states is still another instrument's: passed on, counted.
	tp2 := newTestProcessor(t, nil)
	out = tp2.run(t, newBatch().resource(gymResource("lens")).gauge("gym.verify.success_rate", "%", pt{a: attrs{"verifier": "a"}, t: 10, f: 75, double: true}).md)
	assert.Equal(t, "%", unitOf(t, out, "gym.verify.success_rate"))
	assert.Equal(t, map[string]any{"verifier": "a"}, points(out, "gym.verify.success_rate")[0].Attrs)
	assert.EqualValues(t, 1, tp2.counter(t, "points_mismatched"))
}

func sitePoints(n, v int) []pt {
	out := make([]pt, n)
	for i := range out {
		out[i] = pt{a: attrs{site: fmt.Sprintf("model.policy-%d", i)}, t: 10, i: int64(v + i)}
	}
	return out
}

// Gym's older rollout counter writes success and failure: read as scored and failed, one
// series with the newer spelling's, and a success loses the failure attributes a scored
// completion never has.
func TestGymRealOutcomeAliases(t *testing.T) {
	tp := newTestProcessor(t, nil)
	res := gymResource("old")
	out := tp.run(t, newBatch().resource(res).
		counter(completed, "1",
			pt{a: attrs{outcome: "success", "run": "a"}, start: 1, t: 10, i: 5},
			pt{a: attrs{outcome: "scored", "run": "b"}, start: 1, t: 10, i: 2},
			pt{a: attrs{outcome: "failure", fKind: "agent_timeout"}, start: 1, t: 10, i: 3},
			pt{a: attrs{outcome: "success", fKind: "agent_timeout"}, start: 1, t: 10, i: 1},
			pt{a: attrs{outcome: "Success"}, start: 1, t: 10, i: 9},
		).md)
	got := byAttrs(points(out, completed))
	require.Len(t, got, 2)
	assert.EqualValues(t, 8, got[outcome+"=scored"].Int, "success and scored are one series; a success keeps no failure kind")
	assert.EqualValues(t, 3, got[fKind+"=agent_timeout,"+outcome+"=failed"].Int)
	assert.EqualValues(t, 1, tp.dropped(t, "rejected_value"), "Success is no alias: rejected, counted")
	assert.GreaterOrEqual(t, tp.counter(t, "values_normalised"), int64(3))
	assertBounded(t, out)
}

// Gym's token capture writes other into every attribute past its own cap of 512 attribute
// sets per instrument: the size class and error enumerations keep it.
func TestGymRealTokenCaptureOverflow(t *testing.T) {
	tp := newTestProcessor(t, nil)
	op, impl := "nemo.gym.token_capture.operation", "nemo.gym.token_capture.implementation"
	size, errAttr := "nemo.gym.token_capture.size_class", "nemo.gym.token_capture.error"
	out := tp.run(t, newBatch().resource(gymResource("capture")).
		histogram("gym.token_capture.operation.duration_ms", "ms", cumulative,
			hist(attrs{op: "other", impl: "other", size: "other", errAttr: "other"}, 1, 10, captureMS, 3, 3, 3, 0, 0, 0, 0, 0, 0, 1),
			hist(attrs{op: "other", impl: "other", size: "other"}, 1, 10, captureMS, 0.2, 0.2, 0.2, 0, 0, 1),
		).
		counter("gym.token_capture.operation.tokens_total", "{token}", pt{a: attrs{op: "other"}, start: 1, t: 10, i: 70}).
		md)
	got := byAttrs(points(out, "gym.token_capture.operation.duration_ms"))
	require.Len(t, got, 2)
	assert.EqualValues(t, 1, got[errAttr+"=other,"+impl+"=other,"+op+"=other,"+size+"=other"].Count)
	assert.EqualValues(t, 1, got[impl+"=other,"+op+"=other,"+size+"=other"].Count)
	assert.EqualValues(t, 70, only(t, out, "gym.token_capture.operation.tokens_total").Int)
	assert.EqualValues(t, 0, tp.dropped(t, "rejected_value"))
	assertBounded(t, out)
}

// The instruments of Gym's older observability modules, its supervisor and the HTTP
// instrumentations, with what their code puts in the attributes.
func TestGymRealInstruments(t *testing.T) {
	tp := newTestProcessor(t, nil)
	idx, uuid := "nemo.gym.gpu.index", "nemo.gym.gpu.uuid"
	gpu0 := "GPU-3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0f"
	tool := "nemo.gym.tool.name"
	md := newBatch().resource(gymResource("gpu")).
		gauge("gym.process.gpu.utilization_percent", "%",
			pt{a: attrs{idx: 0, uuid: gpu0}, t: 10, f: 87.5, double: true},
			pt{a: attrs{idx: 1, uuid: "GPU-not-a-uuid"}, t: 10, f: 12, double: true},
			pt{a: attrs{idx: 4096, uuid: gpu0}, t: 10, f: 1, double: true}).
		gauge("gym.process.gpu.memory_used_mib", "MiB", pt{a: attrs{idx: "0", uuid: gpu0}, t: 10, f: 40960, double: true}).
		gauge("gym.process_tree.cpu.percent", "%", pt{t: 10, f: 230.5, double: true}).
		gauge("gym.host.memory_total_mib", "MiB", pt{a: attrs{"exemplar": "x"}, t: 10, f: 515000, double: true}).
		histogram("gym.tool.call_duration_ms", "ms", cumulative,
			hist(attrs{tool: "get_weather", srvName: "weather"}, 1, 10, sdkDefault, 30, 30, 30, 0, 0, 0, 0, 1),
			hist(attrs{tool: "wp-admin/setup.php", srvName: "weather"}, 1, 10, sdkDefault, 2, 2, 2, 0, 1)).
		histogram("gym.agent.turn_count", "1", cumulative,
			hist(attrs{"nemo.gym.agent.name": "", "nemo.gym.benchmark.name": "aime"}, 1, 10, sdkDefault, 4, 4, 4, 0, 1)).
		counter("gym.http.retry_total", "1", pt{a: attrs{"nemo.gym.http.retry_reason": "dns_error"}, start: 1, t: 10, i: 2}).
		counter("gym.http.timeout_total", "1", pt{a: attrs{"nemo.gym.http.internal": true}, start: 1, t: 10, i: 1}).
		histogram("gym.model.call_duration_ms", "ms", cumulative,
			hist(attrs{"nemo.gym.model.dialect": "chat_completions", srvName: ""}, 1, 10, sdkDefault, 900, 900, 900, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)).
		histogram("gym.server.startup_duration_ms", "ms", cumulative,
			hist(attrs{srvName: "math", "nemo.gym.server.type": "resources_servers"}, 1, 10, []float64{100, 250}, 180, 180, 180, 0, 1)).
		// The HTTP instrumentation's new conventions (seconds) and old ones (milliseconds):
		// hosts, ports and URLs removed, a method outside the set _OTHER.
		histogram("http.server.request.duration", "s", cumulative,
			hist(attrs{"http.request.method": "POST", "http.route": "/verify", "http.response.status_code": 200, "url.scheme": "http",
				"network.protocol.version": "1.1", "server.port": 41234, "url.full": "http://127.0.0.1:41234/verify?x=1"}, 1, 10,
				[]float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}, 0.2, 0.2, 0.2, 0, 0, 0, 0, 0, 0, 1)).
		histogram("http.client.duration", "ms", cumulative,
			hist(attrs{"http.method": "PURGE", "http.status_code": 503, "net.peer.name": "10.0.0.7", "net.peer.port": 8000}, 1, 10, sdkDefault, 12, 12, 12, 0, 0, 1)).
		sum("http.server.active_requests", "requests", false, cumulative,
			pt{a: attrs{"http.method": "GET", "http.host": "127.0.0.1:41234", "http.scheme": "http", "http.flavor": "1.1"}, start: 1, t: 10, i: 3}).
		md
	out := tp.run(t, md)

	util := byAttrs(points(out, "gym.process.gpu.utilization_percent"))
	require.Len(t, util, 2)
	assert.Equal(t, 87.5, util[idx+"=0,"+uuid+"="+gpu0].Double)
	assert.Equal(t, 12.0, util[idx+"=1,"+uuid+"=other"].Double, "a UUID that is not one: other")
	assert.Equal(t, "%", unitOf(t, out, "gym.process.gpu.utilization_percent"))
	mem := only(t, out, "gym.process.gpu.memory_used_mib")
	assert.Equal(t, map[string]any{idx: int64(0), uuid: gpu0}, mem.Attrs, "an index sent as a string is an int")
	assert.Equal(t, 230.5, only(t, out, "gym.process_tree.cpu.percent").Double)
	assert.Empty(t, only(t, out, "gym.host.memory_total_mib").Attrs)

	tools := byAttrs(points(out, "gym.tool.call_duration_ms"))
	assert.Contains(t, tools, srvName+"=weather,"+tool+"=get_weather")
	assert.Contains(t, tools, srvName+"=weather,"+tool+"=other", "a path that is not a tool name")
	assert.Equal(t, map[string]any{"nemo.gym.agent.name": "", "nemo.gym.benchmark.name": "aime"}, only(t, out, "gym.agent.turn_count").Attrs,
		"Gym's empty agent name is kept")
	assert.Equal(t, map[string]any{"nemo.gym.http.retry_reason": "other"}, only(t, out, "gym.http.retry_total").Attrs)
	assert.Equal(t, map[string]any{"nemo.gym.http.internal": true}, only(t, out, "gym.http.timeout_total").Attrs)
	assert.Equal(t, map[string]any{"nemo.gym.model.dialect": "chat_completions", srvName: ""}, only(t, out, "gym.model.call_duration_ms").Attrs)
	assert.Equal(t, map[string]any{srvName: "math", "nemo.gym.server.type": "resources_servers"}, only(t, out, "gym.server.startup_duration_ms").Attrs)

	assert.Equal(t, map[string]any{"http.request.method": "POST", "http.route": "/verify", "http.response.status_code": int64(200),
		"url.scheme": "http", "network.protocol.version": "1.1"}, only(t, out, "http.server.request.duration").Attrs)
	assert.Equal(t, map[string]any{"http.method": "_OTHER", "http.status_code": int64(503)}, only(t, out, "http.client.duration").Attrs)
	active := only(t, out, "http.server.active_requests")
	assert.Equal(t, map[string]any{"http.method": "GET", "http.scheme": "http", "http.flavor": "1.1"}, active.Attrs)
	assert.Equal(t, "{request}", unitOf(t, out, "http.server.active_requests"), "the older instrumentation's unit, exported as the schema's")

	assert.EqualValues(t, 1, tp.dropped(t, "rejected_value"), "GPU index 4096")
	assert.EqualValues(t, 0, tp.counter(t, "points_mismatched"))
	assertBounded(t, out)
}

// Every instrument gym-real lists is a schema instrument whose unit, as Gym states it, is
// accepted.
func TestGymRealUnitsAccepted(t *testing.T) {
	for name, unit := range map[string]string{
		"gym.verify.success_rate": "", "gym.servers.active": "", "gym.concurrency.limit": "1", "gym.concurrency.active": "1",
		"gym.concurrency.available": "1", "gym.concurrency.queue_depth": "1", "gym.concurrency.admission_cancelled_total": "1",
		"gym.concurrency.queue_wait_duration_ms": "ms", "gym.process.cpu.percent": "%", "gym.process_tree.memory_used_mib": "MiB",
		"gym.host.memory_used_mib": "MiB", "gym.tool.call_cpu_percent": "%", "gym.tool.call_memory_used_mib": "MiB",
		"gym.agent.turn_duration_ms": "ms", "gym.model.time_to_first_byte_ms": "ms", "gym.server.request_duration_ms": "ms",
		"http.server.duration": "ms", "http.client.request.duration": "s", "http.server.active_requests": "{request}",
		"gym.process.gpu.memory_total_mib": "MiB", "gym.token_capture.cache.size": "1",
	} {
		id, ok := schema.Lookup(name)
		if assert.True(t, ok, name) {
			assert.True(t, schema.Get(id).AcceptsUnit(unit), "%s in %q", name, unit)
		}
	}
}
