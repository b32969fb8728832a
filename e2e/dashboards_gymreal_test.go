//go:build linux

package e2e

import (
	"sort"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The instruments NeMo Gym's own code records with the OpenTelemetry SDK only, fed to the
// dashboards test (dashboards_test.go) as OTLP in the same three stages as the newer events,
// shaped as Gym's code sends them: the gpu module's gauges (per GPU index and UUID, % and MiB),
// the cpu and memory samplers' gauges (no attribute), the HTTP client's retry and timeout
// counters, the agent base's turn histograms and the resources-server middleware's tool-call
// histograms, at the SDK's default boundaries. All servers of a run share one instance id, as
// Gym's servers do (rank 0); each is its own job.

const dashRealInstance = "run1-rank0"

// The UUIDs of the model server's two GPUs, as nvidia-smi writes them.
const dashRealGPU0, dashRealGPU1 = "GPU-3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0f", "GPU-7a0e5b1c-2d3f-4a5b-8c9d-0e1f2a3b4c5d"

// dashRealStart is the start of every cumulative stream of the feed: one per process, as the
// SDK keeps it.
var dashRealStart = pcommon.NewTimestampFromTime(time.Now().Add(-time.Minute))

// dashRealOTLP is the export of stage k (1..3): cumulative totals and gauges grow with k.
func dashRealOTLP(k int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	now := pcommon.NewTimestampFromTime(time.Now())
	scope := func(service, server, typ string) pmetric.MetricSlice {
		sm := sdkScope(md, "nemo.lens", map[string]any{
			"service.name": service, "service.instance.id": dashRealInstance, "nemo.run.id": "run1",
			"nemo.gym.server.name": server, "nemo.gym.server.type": typ, "host.name": "node7", "process.pid": 4400,
		})
		return sm.Metrics()
	}
	metric := func(ms pmetric.MetricSlice, name, unit string) pmetric.Metric {
		m := ms.AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		return m
	}
	gauge := func(ms pmetric.MetricSlice, name, unit string, v float64, attrs map[string]any) {
		var dps pmetric.NumberDataPointSlice
		if n := ms.Len(); n > 0 && ms.At(n-1).Name() == name {
			dps = ms.At(n - 1).Gauge().DataPoints() // the next GPU of the same gauge
		} else {
			dps = metric(ms, name, unit).SetEmptyGauge().DataPoints()
		}
		dp := dps.AppendEmpty()
		dp.SetTimestamp(now)
		dp.SetDoubleValue(v)
		_ = dp.Attributes().FromRaw(attrs)
	}
	counter := func(ms pmetric.MetricSlice, name string, points map[any]int64, key string) {
		s := metric(ms, name, "1").SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for v, n := range points {
			dp := s.DataPoints().AppendEmpty()
			dp.SetStartTimestamp(dashRealStart)
			dp.SetTimestamp(now)
			dp.SetIntValue(n)
			_ = dp.Attributes().FromRaw(map[string]any{key: v})
		}
	}
	// histogram adds one cumulative point: the observations, each n times.
	histogram := func(ms pmetric.MetricSlice, name, unit string, attrs map[string]any, n int, obs ...float64) {
		h := metric(ms, name, unit).SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dp := h.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(dashRealStart)
		dp.SetTimestamp(now)
		_ = dp.Attributes().FromRaw(attrs)
		dp.ExplicitBounds().FromRaw(schema.BucketsSdkDefault)
		buckets := make([]uint64, len(schema.BucketsSdkDefault)+1)
		var sum float64
		for _, o := range obs {
			buckets[sort.SearchFloat64s(schema.BucketsSdkDefault, o)] += uint64(n) // (bound[i-1], bound[i]]
			sum += o * float64(n)
		}
		dp.BucketCounts().FromRaw(buckets)
		dp.SetCount(uint64(n * len(obs)))
		dp.SetSum(sum)
	}

	// The policy model server: its GPUs (nvidia-smi), its CPU and its process tree's memory,
	// its HTTP client's retries and timeouts.
	model := scope("nemo-gym/policy_model", "policy_model", "responses_api_models")
	f := float64(k)
	gauge(model, "gym.process.gpu.utilization_percent", "%", 80+f, map[string]any{"nemo.gym.gpu.index": 0, "nemo.gym.gpu.uuid": dashRealGPU0})
	gauge(model, "gym.process.gpu.utilization_percent", "%", 40+f, map[string]any{"nemo.gym.gpu.index": 1, "nemo.gym.gpu.uuid": dashRealGPU1})
	gauge(model, "gym.process.gpu.memory_used_mib", "MiB", 30000+1000*f, map[string]any{"nemo.gym.gpu.index": 0, "nemo.gym.gpu.uuid": dashRealGPU0})
	gauge(model, "gym.process.gpu.memory_used_mib", "MiB", 10000, map[string]any{"nemo.gym.gpu.index": 1, "nemo.gym.gpu.uuid": dashRealGPU1})
	gauge(model, "gym.process.gpu.memory_total_mib", "MiB", 81559, map[string]any{"nemo.gym.gpu.index": 0, "nemo.gym.gpu.uuid": dashRealGPU0})
	gauge(model, "gym.process.gpu.memory_total_mib", "MiB", 81559, map[string]any{"nemo.gym.gpu.index": 1, "nemo.gym.gpu.uuid": dashRealGPU1})
	gauge(model, "gym.process.cpu.percent", "%", 100+10*f, nil)
	gauge(model, "gym.process_tree.cpu.percent", "%", 250+10*f, nil)
	gauge(model, "gym.process_tree.memory_used_mib", "MiB", 2048*f, nil)
	counter(model, "gym.http.retry_total", map[any]int64{"server_disconnected": int64(k), "timeout": int64(2 * k)}, "nemo.gym.http.retry_reason")
	counter(model, "gym.http.timeout_total", map[any]int64{true: int64(k), false: int64(2 * k)}, "nemo.gym.http.internal")

	// The weather resources server's tool routes: get_weather 10 calls a stage, search 5.
	tools := scope("nemo-gym/weather", "weather", "resources_servers")
	for _, tc := range []struct {
		tool string
		n    int
		ms   float64
	}{{"get_weather", 10 * k, 30}, {"search", 5 * k, 700}} {
		histogram(tools, "gym.tool.call_duration_ms", "ms", map[string]any{"nemo.gym.tool.name": tc.tool, "nemo.gym.server.name": "weather"}, tc.n, tc.ms)
		histogram(tools, "gym.tool.call_cpu_percent", "%", map[string]any{"nemo.gym.tool.name": tc.tool}, tc.n, 120)
		histogram(tools, "gym.tool.call_memory_used_mib", "MiB", map[string]any{"nemo.gym.tool.name": tc.tool}, tc.n, 900)
	}

	// The agent: 4 rollouts a stage of 6 turns each, turns of 2 s.
	agent := scope("nemo-gym/simple_agent", "simple_agent", "responses_api_agents")
	histogram(agent, "gym.agent.turn_count", "1", map[string]any{"nemo.gym.agent.name": "simple_agent", "nemo.gym.benchmark.name": "aime"}, 4*k, 6)
	histogram(agent, "gym.agent.turn_duration_ms", "ms", map[string]any{"nemo.gym.agent.name": "simple_agent"}, 6*4*k, 2000)
	return md
}

// What the last stage (k = 3) implies, computed by hand from the literals above.
var (
	dashRealGPUUtil = map[string]float64{
		`{job="nemo-gym/policy_model",nemo_gym_gpu_index="0"}`: 83,
		`{job="nemo-gym/policy_model",nemo_gym_gpu_index="1"}`: 43,
	}
	dashRealRetries  = map[string]float64{`{nemo_gym_http_retry_reason="server_disconnected"}`: 3, `{nemo_gym_http_retry_reason="timeout"}`: 6}
	dashRealToolRuns = map[string]float64{`{nemo_gym_tool_name="get_weather"}`: 30, `{nemo_gym_tool_name="search"}`: 15}
	dashRealTurns    = map[string]float64{`{nemo_gym_agent_name="simple_agent",nemo_gym_benchmark_name="aime"}`: 12 * 6}
)
