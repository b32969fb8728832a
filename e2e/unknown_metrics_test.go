//go:build linux

package e2e

import (
	"fmt"
	"os"
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

// Instruments the schema does not know, through the real binary with gymattrs' defaults
// (unknown_metrics: bound): an instrument Gym's code creates with 2,600 attribute sets leaves
// as at most cardinality_limit series, the overflow one included, with every count; it is
// counted by name in the collector's own metrics. A schema histogram with an SDK's default
// buckets is kept as sent, counted and logged once.

const (
	unknownInstrument = "gym.agent.tool_calls_total" // not in the schema
	unknownWorkers    = 2600
)

// unknownBatch is export round of a process whose SDK has an unknown counter over
// unknownWorkers attribute sets (each with a long free-text note) and nemo-lens'
// gym.rollout.duration_ms without a View: one rollout of 30 s per round, in +Inf.
func unknownBatch(round int, start, now pcommon.Timestamp) pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := sdkScope(md, "nemo_gym.agent", map[string]any{"service.name": "nemo-gym/sdk-agent", "service.instance.id": "e2e-unknown-0"})

	m := sm.Metrics().AppendEmpty()
	m.SetName(unknownInstrument)
	m.SetUnit("{call}")
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for w := range unknownWorkers {
		dp := s.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(now)
		dp.SetIntValue(unknownValue(w, round))
		dp.Attributes().PutStr("worker.id", fmt.Sprintf("w%05d", w))
		dp.Attributes().PutStr("note", strings.Repeat("tool output was long; ", 40)) // 880 bytes
	}

	h := sm.Metrics().AppendEmpty()
	h.SetName("gym.rollout.duration_ms")
	h.SetUnit("ms")
	hist := h.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := hist.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(now)
	dp.ExplicitBounds().FromRaw(schema.BucketsSdkDefault)
	counts := make([]uint64, len(schema.BucketsSdkDefault)+1)
	counts[len(schema.BucketsSdkDefault)] = uint64(round) // past 10 s: +Inf
	dp.BucketCounts().FromRaw(counts)
	dp.SetCount(uint64(round))
	dp.SetSum(30000 * float64(round))
	return md
}

func unknownValue(w, round int) int64 { return int64(w%5+1) * int64(round) }

func TestGymattrsUnknownInstrumentBounded(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	col, ports, otlpURL := startOTLP(t, "gymattrs.yaml", sink, nil)

	start := pcommon.NewTimestampFromTime(time.Now().Add(-time.Minute))
	for round := 1; round <= 2; round++ {
		in := unknownBatch(round, start, pcommon.NewTimestampFromTime(time.Now()))
		want, _ := sumOf(in, unknownInstrument, nil)
		postOTLP(t, otlpURL, in)
		require.Equal(t, round, sink.Count(), "one export per request")
		out := sink.Exports()[round-1]

		have, _ := sumOf(out, unknownInstrument, nil)
		assert.Equal(t, want, have, "round %d: no count lost", round)
		series := map[string]bool{}
		for _, m := range metricsNamed(out, nil, unknownInstrument) {
			for _, dp := range m.Sum().DataPoints().All() {
				key := formatAttrs(dp.Attributes())
				assert.False(t, series[key], "round %d: two points of %s", round, key)
				series[key] = true
				if note, ok := dp.Attributes().Get("note"); ok {
					assert.LessOrEqual(t, len(note.Str()), 256, "string values capped")
				}
			}
		}
		assert.Len(t, series, gymattrsLimit, "round %d: cardinality_limit series, the overflow one included", round)
		assert.True(t, series[`{otel.metric.overflow=true}`], "round %d: the overflow series", round)

		var durations []pmetric.HistogramDataPoint
		for _, rm := range out.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Name() == "gym.rollout.duration_ms" {
						for _, dp := range m.Histogram().DataPoints().All() {
							durations = append(durations, dp)
						}
					}
				}
			}
		}
		if assert.Len(t, durations, 1, "round %d", round) {
			assert.Equal(t, schema.BucketsSdkDefault, durations[0].ExplicitBounds().AsRaw(), "kept as sent: a collector cannot re-bucket")
			assert.Equal(t, uint64(round), durations[0].Count())
		}
	}

	assert.Equal(t, float64(2*unknownWorkers), harness.TelemetryValue(t, ports, "otelcol_processor_gymattrs_unknown_points", "instrument", unknownInstrument),
		"the unknown instrument's points, by name")
	assert.Equal(t, 2.0, harness.TelemetryValue(t, ports, "otelcol_processor_gymattrs_histogram_bounds_differ", "instrument", "gym.rollout.duration_ms"))
	assert.Equal(t, 0.0, harness.TelemetryValue(t, ports, "otelcol_processor_gymattrs_histogram_bounds_differ", "instrument", "gym.verify.duration_ms"))
	assert.Equal(t, float64(2*(unknownWorkers-gymattrsLimit+1)), harness.TelemetryValue(t, ports, "otelcol_processor_gymattrs_points_overflowed"))
	require.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))

	log, err := os.ReadFile(col.LogPath)
	require.NoError(t, err)
	var bounds, unknown int
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "other bucket bounds") && strings.Contains(line, "gym.rollout.duration_ms") {
			bounds++
			assert.Contains(t, line, "docs/gym.md#histogram-buckets", "the line says where the fix is")
		}
		if strings.Contains(line, "an instrument outside the schema") && strings.Contains(line, unknownInstrument) {
			unknown++
		}
	}
	assert.Equal(t, 1, bounds, "one line for the histogram, over two exports")
	assert.Equal(t, 1, unknown, "one line for the unknown instrument, over two exports")
}
