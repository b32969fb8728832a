package schema_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
	"github.com/gym-telemetry/otelcol-gym/internal/schemagen"
)

// TestGeneratedFilesAreFresh fails when schema_gen.go or docs/metrics.md no longer match
// metadata.yaml: run `make generate`.
func TestGeneratedFilesAreFresh(t *testing.T) {
	data, err := os.ReadFile("../../metadata.yaml")
	require.NoError(t, err)
	s, err := schemagen.Parse(data)
	require.NoError(t, err)
	src, err := s.Go()
	require.NoError(t, err)
	onDisk, err := os.ReadFile("schema_gen.go")
	require.NoError(t, err)
	assert.Equal(t, string(src), string(onDisk), "internal/schema/schema_gen.go is stale: run make generate")
	md, err := os.ReadFile("../../docs/metrics.md")
	require.NoError(t, err)
	assert.Equal(t, string(s.Markdown()), string(md), "docs/metrics.md is stale: run make generate")
}

func TestSchemaShape(t *testing.T) {
	require.Len(t, schema.Instruments, 118, "the schema lists 118 instruments")
	names := map[string]bool{}
	for i := range schema.Instruments {
		in := &schema.Instruments[i]
		assert.False(t, names[in.Name], "duplicate %s", in.Name)
		names[in.Name] = true
		id, ok := schema.Lookup(in.Name)
		assert.True(t, ok)
		assert.Equal(t, schema.InstrumentID(i), id)
		if in.Kind == schema.KindHistogram {
			assert.NotEmpty(t, in.Bounds, in.Name)
			assert.Equal(t, schema.ValueDouble, in.ValueType, in.Name)
		} else {
			assert.Empty(t, in.Bounds, in.Name)
		}
		// Sums and gauges of counts are int64; only process.cpu.time, the verify success
		// rate, Gym's samples in % and MiB, the age of the oldest rollout in flight and the
		// token prices are doubles.
		if in.Kind != schema.KindHistogram {
			want := schema.ValueInt
			if in.Name == "process.cpu.time" || in.Name == "gym.verify.success_rate" || in.Name == "gym.rollout.oldest_in_flight_age" || in.Name == "gym.token.price_per_million" || in.Unit == "%" || in.Unit == "MiB" {
				want = schema.ValueDouble
			}
			assert.Equal(t, want, in.ValueType, in.Name)
		}
	}
	// Spot checks against docs/metrics.md, typed here on purpose: the test is the second hand.
	lag, _ := schema.Lookup("gym.event_loop.lag_ms")
	assert.Equal(t, []float64{0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000}, schema.Get(lag).Bounds)
	pool, _ := schema.Lookup("gym.http.connection_pool.connect_duration_ms")
	assert.Equal(t, []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 5000, 30000}, schema.Get(pool).Bounds)
	startup, _ := schema.Lookup("gym.server.startup_stage_duration_ms")
	assert.Equal(t, 3600000.0, schema.Get(startup).Bounds[len(schema.Get(startup).Bounds)-1])
	active, _ := schema.Lookup("gym.sandbox.active")
	assert.Equal(t, schema.KindUpDown, schema.Get(active).Kind)
	assert.Equal(t, "{sandbox}", schema.Get(active).Unit)
	tokens, _ := schema.Lookup("gym.rollout.tokens")
	assert.Equal(t, 67108864.0, schema.Get(tokens).Bounds[len(schema.Get(tokens).Bounds)-1])
	assert.Equal(t, "run_files", schema.Get(tokens).Source)
	queue, _ := schema.Lookup("gym.concurrency.queue_depth")
	assert.True(t, schema.Get(queue).Accepts(schema.KindUpDown))
	assert.True(t, schema.Get(queue).Accepts(schema.KindGauge))
	assert.False(t, schema.Get(queue).Accepts(schema.KindCounter))
	assert.False(t, schema.Get(active).Accepts(schema.KindGauge), "gym.sandbox.active is an updown only")
	capture, _ := schema.Lookup("gym.token_capture.operation.duration_ms")
	assert.Equal(t, 300000.0, schema.Get(capture).Bounds[len(schema.Get(capture).Bounds)-1])
	// Units Gym's own code states, accepted besides the schema's.
	rate, _ := schema.Lookup("gym.verify.success_rate")
	assert.True(t, schema.Get(rate).AcceptsUnit("1"))
	assert.True(t, schema.Get(rate).AcceptsUnit(""))
	assert.False(t, schema.Get(rate).AcceptsUnit("%"))
	assert.True(t, schema.Get(queue).AcceptsUnit("1"))
	assert.True(t, schema.Get(queue).AcceptsUnit("{waiter}"))
	assert.False(t, schema.Get(queue).AcceptsUnit(""))
	assert.False(t, schema.Get(active).AcceptsUnit(""), "no other unit unless listed")
	outcome := schema.Attr(schema.AttrNemoGymRolloutOutcome)
	assert.Equal(t, []schema.Alias{{From: "failure", To: "failed"}, {From: "success", To: "scored"}}, outcome.Aliases)
	gpu, _ := schema.Lookup("gym.process.gpu.utilization_percent")
	assert.Equal(t, "%", schema.Get(gpu).Unit)
	assert.Equal(t, schema.ValueDouble, schema.Get(gpu).ValueType)
	assert.Equal(t, "otlp", schema.Get(gpu).Source)
	for _, name := range []string{"gym.tool.call_duration_ms", "gym.concurrency.queue_wait_duration_ms", "http.server.duration"} {
		id, ok := schema.Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, []float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000}, schema.Get(id).Bounds, name)
	}
	httpS, _ := schema.Lookup("http.server.request.duration")
	assert.Equal(t, "s", schema.Get(httpS).Unit)
	assert.Equal(t, []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}, schema.Get(httpS).Bounds)
	assert.Equal(t, "gym.model.call_duration_ms", schema.Get(schema.GymModelRouteCallDurationMs).Name)
	assert.Len(t, schema.FailureKinds, 24)
	assert.Len(t, schema.HealthChecks, 12)
}

// The least limit keeps one series besides the overflow series; the message names the key.
func TestCheckCardinalityLimit(t *testing.T) {
	require.NoError(t, schema.CheckCardinalityLimit(schema.MinCardinalityLimit))
	assert.EqualError(t, schema.CheckCardinalityLimit(schema.MinCardinalityLimit-1),
		"cardinality_limit: must be at least 2 (one series and the overflow series), got 1")
}
