package bound

import (
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/pdatatest"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// go test ./internal/bound -run Golden -update rewrites the expected files; check them by
// hand against docs/metrics.md before committing them.
var update = flag.Bool("update", false, "rewrite the golden files of the golden tests")

// The batches are what Gym processes exporting OTLP with the OpenTelemetry Python SDK send:
// resources with service.name and the Gym process attributes, cumulative sums and
// histograms (delta from one process), and attributes the schema does not bound: free text,
// raw values, unregistered ids, another library's metrics. Batch 2 is the next export.

var (
	driverRes = attrs{
		"service.name": "nemo-gym/driver", "service.instance.id": "r1-driver", "nemo.run.id": "r1",
		"process.pid": 4242, "host.name": "node7",
		"telemetry.sdk.name": "opentelemetry", "telemetry.sdk.language": "python", "telemetry.sdk.version": "1.39.0",
	}
	serverRes = attrs{
		"service.name": "nemo-gym/math", "service.instance.id": "r1-rank0", "nemo.run.id": "r1",
		"nemo.gym.server.name": "math", "nemo.gym.server.type": "resources_servers",
		"process.pid": 4243, "host.name": "node7",
		"telemetry.sdk.name": "opentelemetry", "telemetry.sdk.language": "python", "telemetry.sdk.version": "1.39.0",
	}
	deltaRes = attrs{
		"service.name": "nemo-gym/agent", "service.instance.id": "r1-agent0", "nemo.run.id": "r1",
		"process.pid": 4250, "host.name": "node8",
		"telemetry.sdk.name": "opentelemetry", "telemetry.sdk.language": "python", "telemetry.sdk.version": "1.39.0",
	}
)

func goldenConfig(cfg *Config) {
	cfg.IgnoredHealthChecks = []string{"agent_turn_hollow"}
	cfg.HealthChecks = []string{"lab_check"}
}

var (
	rolloutCount = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096}
	sdkDefault   = []float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000}
)

func hist(a attrs, start, t int, bounds []float64, sum, lo, hi float64, buckets ...uint64) pt {
	b := make([]uint64, len(bounds)+1)
	copy(b, buckets)
	var n uint64
	for _, c := range b {
		n += c
	}
	return pt{a: a, start: start, t: t, bounds: bounds, buckets: b, count: n, sum: sum, min: lo, max: hi}
}

// sdkBatch is export k (1 or 2) of the three processes, 60 s apart.
func sdkBatch(k int) pmetric.Metrics {
	t := 60 * k
	grow := func(v int64) int64 { return v * int64(k) }
	b := newBatch()

	// The rollout driver.
	b.resource(driverRes).
		counter(completed, "1",
			pt{a: attrs{outcome: "scored", dispatch: "math", "nemo.gym.rollout.id": "rollout-17"}, start: 1, t: t, i: grow(40)},
			pt{a: attrs{outcome: "scored", dispatch: "math", "nemo.gym.rollout.id": "rollout-18"}, start: 1, t: t, i: grow(2)},
			pt{a: attrs{outcome: "failed", dispatch: "math", fClass: "agent_request_failed", fKind: "transport_timeout",
				fType: "httpx.ReadTimeout", "failure_reason": "read timed out after 300s"}, start: 1, t: t, i: grow(3)},
			pt{a: attrs{outcome: "failed", dispatch: "math", fClass: "agent_request_failed", fKind: "transport_timeout",
				fType: "httpx.ReadTimeout", "failure_reason": "read timed out after 301s"}, start: 1, t: t, i: grow(1)},
			pt{a: attrs{outcome: "failed", dispatch: "math", fClass: "Agent Failure", fKind: "my lab's kind",
				fType: "<class 'RuntimeError'>"}, start: 1, t: t, i: grow(5)},
			pt{a: attrs{outcome: "failed", dispatch: "math", fClass: "judge", fKind: "lab:judge_quirk", fType: "ValueError"}, start: 1, t: t, i: grow(1)},
			pt{a: attrs{outcome: "omitted", dispatch: "code", fKind: "shutdown", fClass: ""}, start: 1, t: t, i: grow(2)},
			pt{a: attrs{outcome: "scored", dispatch: "math", fKind: "transport_timeout"}, start: 1, t: t, i: grow(1)},
			pt{a: attrs{outcome: "timed_out", dispatch: "math"}, start: 1, t: t, i: grow(9)},
			pt{a: attrs{outcome: "scored", dispatch: strings.Repeat("long-dispatch-", 20)}, start: 1, t: t, i: grow(1)},
		).
		counter(rewarded, "1",
			pt{a: attrs{rng: 0.5, dispatch: "math", masked: false}, start: 1, t: t, i: grow(10)},
			pt{a: attrs{rng: 0.25, dispatch: "math", masked: false}, start: 1, t: t, i: grow(5)},
			pt{a: attrs{rng: "partial", dispatch: "math", masked: false}, start: 1, t: t, i: grow(1)},
			pt{a: attrs{rng: 1.0, dispatch: "math", masked: "true"}, start: 1, t: t, i: grow(4)},
			pt{a: attrs{rng: math.NaN(), dispatch: "math", masked: false}, start: 1, t: t, i: grow(2)},
			pt{a: attrs{rng: -1, dispatch: "math", masked: false}, start: 1, t: t, i: grow(1)},
		).
		histogram("gym.driver.rollout.turns", "{turn}", cumulative,
			hist(attrs{"batch.id": "b-1"}, 1, t, rolloutCount, float64(grow(30)), 1, 9, uint64(grow(2)), 0, 3, 1),
			hist(attrs{"batch.id": "b-2"}, 3, t, rolloutCount, float64(grow(12)), 2, 7, 0, uint64(grow(1)), 1, 1),
		).
		counter("gym.driver.rollouts.offered_total", "{rollout}", pt{start: 1, t: t, i: grow(80)})
	if k == 2 {
		// b-2 is not re-sent: the merged histogram keeps its last one.
		turns := b.sm.Metrics().At(2).Histogram().DataPoints()
		turns.RemoveIf(func(dp pmetric.HistogramDataPoint) bool {
			v, _ := dp.Attributes().Get("batch.id")
			return v.Str() == "b-2"
		})
	}

	// A resources server.
	b.resource(serverRes).
		counter(flagged, "1",
			pt{a: attrs{check: "model_call_failed", outcome: "failed"}, start: 1, t: t, i: grow(3)},
			pt{a: attrs{check: "my_new_check", outcome: "failed"}, start: 1, t: t, i: grow(1)},
			pt{a: attrs{check: "another_check", outcome: "failed"}, start: 1, t: t, i: grow(2)},
			pt{a: attrs{check: "agent_turn_hollow", outcome: "failed"}, start: 1, t: t, i: grow(7)},
			pt{a: attrs{check: "lab_check", outcome: "scored"}, start: 1, t: t, i: grow(1)},
		).
		counter(responses, "{response}",
			pt{a: attrs{status: 200}, start: 1, t: t, i: grow(100)},
			pt{a: attrs{status: "200", "http.request.method": "POST"}, start: 1, t: t, i: grow(20)},
			pt{a: attrs{status: 404, "url.full": "http://math:8000/v1/items/9?debug=1"}, start: 1, t: t, i: grow(1)},
			pt{a: attrs{status: 700}, start: 1, t: t, i: grow(1)},
		).
		counter(cancelReqs, "{request}",
			pt{a: attrs{route: "/v1/responses", phase: "before_response"}, start: 1, t: t, i: grow(2)},
			pt{a: attrs{route: "/items/1?x=1", phase: "during_response"}, start: 1, t: t, i: grow(1)},
			pt{a: attrs{route: "items/2", phase: true}, start: 1, t: t, i: grow(1)},
		).
		sum("gym.sandbox.active", "{sandbox}", false, cumulative,
			pt{a: attrs{"nemo.gym.sandbox.provider": "docker", "sandbox.id": "sb-1"}, start: 1, t: t, i: 1},
			pt{a: attrs{"nemo.gym.sandbox.provider": "docker", "sandbox.id": "sb-2"}, start: 1, t: t, i: int64(2 - k)},
		).
		histogram("gym.sandbox.startup_duration_ms", "ms", cumulative,
			hist(attrs{"nemo.gym.sandbox.provider": "docker", "sandbox.id": "sb-1"}, 1, t, sandboxBounds, float64(600+300*k), 300, 600, uint64(k), 1),
			hist(attrs{"nemo.gym.sandbox.provider": "docker", "sandbox.id": "sb-2"}, 1, t, sandboxBounds, float64(1500*k), 1500, 1500, 0, 0, 0, uint64(k)),
			// The SDK's default bounds (no view configured): never merged with the schema's.
			hist(attrs{"nemo.gym.sandbox.provider": "docker", "sandbox.id": "sb-3"}, 1, t, sdkDefault, 40, 40, 40, 0, 0, 0, 0, 1),
			hist(attrs{"nemo.gym.sandbox.provider": "modal"}, 1, t, sdkDefault, 40, 40, 40, 0, 0, 0, 0, 1),
		).
		gauge("gym.event_loop.tasks", "{task}",
			pt{a: attrs{"nemo.gym.event_loop": "main", "thread.name": "MainThread"}, t: t, i: 12},
			pt{a: attrs{"nemo.gym.event_loop": "main", "thread.name": "asyncio_0"}, t: t + 1, i: 15},
		).
		counter("gym.gc.collections_total", "{collection}",
			pt{a: attrs{"nemo.gym.gc.generation": 0}, start: 1, t: t, i: grow(300)},
			pt{a: attrs{"nemo.gym.gc.generation": "1"}, start: 1, t: t, i: grow(20)},
			pt{a: attrs{"nemo.gym.gc.generation": 3}, start: 1, t: t, i: grow(1)},
		).
		histogram("gym.server.startup_stage_duration_ms", "ms", cumulative,
			hist(attrs{"nemo.gym.startup.stage": "load", "nemo.gym.server.name": "math", "nemo.gym.server.type": "gpu_servers",
				"nemo.gym.server.worker": false}, 1, t, []float64{100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000},
				700, 700, 700, 0, 0, 0, 1),
		).
		histogram("gym.driver.output_write_bytes", "bytes", cumulative, // a unit other than the schema's By
										hist(attrs{"file": "/tmp/out-1.jsonl"}, 1, t, []float64{1000, 10000}, 5000, 5000, 5000, 0, 1)).
		histogram("http.server.request.duration", "s", cumulative, // the HTTP instrumentation's: both attributes declared
			hist(attrs{"http.route": "/v1/responses", "http.request.method": "POST"}, 1, t, []float64{0.1, 1}, 0.5, 0.5, 0.5, 0, 1))

	// An agent whose SDK exports delta temporality.
	b.resource(deltaRes).
		sum(completed, "1", true, delta,
			pt{a: attrs{outcome: "failed", dispatch: "swe", fKind: "agent_timeout", "failure_reason": "step 41 timed out"}, start: t - 60, t: t, i: 2},
			pt{a: attrs{outcome: "failed", dispatch: "swe", fKind: "agent_timeout", "failure_reason": "step 7 timed out"}, start: t - 60, t: t, i: 1},
		).
		histogram("gym.sandbox.exec_duration_ms", "ms", delta,
			hist(attrs{"nemo.gym.sandbox.provider": "e2b", "command": "pytest -x tests/"}, t-60, t, sandboxBounds, 300, 300, 300, 0, 1),
			hist(attrs{"nemo.gym.sandbox.provider": "e2b", "command": "pip install -e ."}, t-60, t, sandboxBounds, 40000, 40000, 40000, 0, 0, 0, 0, 0, 0, 0, 1),
		)
	return b.md
}

// dispatchBatch is export k of a driver that ran 3,000 dispatches (plus one more in export 2):
// more than the default cardinality limit. Every stream carries a free-text note (constant per
// stream: in a cumulative SDK another value would be another stream, counting from zero).
func dispatchBatch(k int, n int) pmetric.Metrics {
	pts := make([]pt, 0, n)
	for d := range n {
		pts = append(pts, pt{
			a:     attrs{outcome: "scored", dispatch: fmt.Sprintf("dispatch-%04d", d), "nemo.gym.note": fmt.Sprintf("dispatch %d: first rollout ok", d)},
			start: 1, t: 60 * k, i: int64(k * (d%5 + 1)),
		})
	}
	return newBatch().resource(driverRes).counter(completed, "1", pts...).md
}

// runGolden runs the batches, in order, through one Bounder and returns what it passed on.
func runGolden(t *testing.T, edit func(*Config), batches []pmetric.Metrics) []pmetric.Metrics {
	t.Helper()
	tp := newTestProcessor(t, edit)
	var out []pmetric.Metrics
	for _, md := range batches {
		out = append(out, tp.run(t, md))
	}
	return out
}

func compareGolden(t *testing.T, file string, got pmetric.Metrics) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if *update {
		c := pmetric.NewMetrics()
		got.CopyTo(c)
		require.NoError(t, golden.WriteMetricsToFile(path, c, golden.SkipMetricTimestampNormalization()))
		t.Logf("wrote %s", path)
	}
	want, err := golden.ReadMetrics(path)
	require.NoError(t, err)
	require.NoError(t, pmetrictest.CompareMetrics(want, got,
		pmetrictest.IgnoreResourceMetricsOrder(),
		pmetrictest.IgnoreScopeMetricsOrder(),
		pmetrictest.IgnoreMetricsOrder(),
		pmetrictest.IgnoreMetricDataPointsOrder(),
	))
}

func TestGoldenSDKBatches(t *testing.T) {
	in := []pmetric.Metrics{sdkBatch(1), sdkBatch(2)}
	inPoints := []int{in[0].DataPointCount(), in[1].DataPointCount()}
	out := runGolden(t, goldenConfig, in)
	require.Len(t, out, 2)
	compareGolden(t, "sdk_batch1.expected.yaml", out[0])
	compareGolden(t, "sdk_batch2.expected.yaml", out[1])
	for i, md := range out {
		assert.Less(t, md.DataPointCount(), inPoints[i])
		assertBounded(t, md)
	}
}

func TestGoldenDispatch3000(t *testing.T) {
	in := []pmetric.Metrics{dispatchBatch(1, 3000), dispatchBatch(2, 3001)}
	var want []int64
	for _, md := range in {
		var sum int64
		for _, p := range points(md, completed) {
			sum += p.Int
		}
		want = append(want, sum)
	}
	out := runGolden(t, nil, in)
	require.Len(t, out, 2)
	compareGolden(t, "dispatch3000_batch1.expected.yaml", out[0])

	for i, md := range out {
		assertBounded(t, md)
		pts := points(md, completed)
		require.Len(t, pts, schema.DefaultCardinalityLimit, "limit-1 series and the overflow series")
		var sum int64
		for _, p := range pts {
			sum += p.Int
		}
		assert.Equal(t, want[i], sum, "no count lost in export %d", i+1)
		got := byAttrs(pts)
		assert.EqualValues(t, (i+1)*(1998%5+1), got[scKey("dispatch-1998")].Int, "the last admitted series keeps its stream")
		assert.NotContains(t, got, scKey("dispatch-1999"), "the first folded series")
	}
	// Export 2: the overflow series is the sum of the latest values of the 1,001 series
	// folded in export 1 (all re-sent, doubled) and of the new one.
	var folded int64
	for d := 1999; d < 3000; d++ {
		folded += int64(2 * (d%5 + 1))
	}
	folded += int64(2 * (3000%5 + 1))
	assert.Equal(t, folded, byAttrs(points(out[1], completed))[overflowKey].Int)
}

// assertBounded checks every point of every schema metric with the schema's kind and unit:
// only declared attributes (or the overflow marker alone).
func assertBounded(t *testing.T, md pmetric.Metrics) {
	t.Helper()
	for m := range pdatatest.Metrics(md) {
		id, ok := processed(m)
		if !ok {
			continue
		}
		in := schema.Get(id)
		for _, p := range metricPoints(m) {
			if _, ovf := p.Attrs[schema.OverflowAttribute]; ovf {
				assert.Len(t, p.Attrs, 1)
				continue
			}
			for key := range p.Attrs {
				aid, ok := schema.LookupAttr(key)
				assert.True(t, ok && in.AttrValues(aid) != nil || ok && attrPos[id][aid] >= 0, "%s: %s is not declared", m.Name(), key)
			}
		}
	}
}
