//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The gymattrs processor through the real binary: OTLP shaped like a Gym
// process's own SDK output comes in on the otlp receiver, goes through gymattrs and out of an
// otlp_http exporter bounded, merged and complete.

// startOTLP starts otelcol-gym on the configuration template config (testdata/configs), whose otlp receiver listens on {{.P.OTLPHTTP}} and
// whose exporter is sink (x fills its template's X), then the configurations more; it returns
// the collector, its ports and the otlp receiver's URL.
func startOTLP(t *testing.T, config string, sink *harness.OTLPSink, x map[string]any, more ...string) (*harness.Collector, harness.Ports, string) {
	t.Helper()
	col, ports := harness.StartCollector(t, func(p harness.Ports) []string {
		return append([]string{harness.Config(t, config, harness.Data{P: p, Sink: sink.URL(), X: x})}, more...)
	})
	return col, ports, fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP)
}

const (
	dispatchNames = 3000
	gymattrsLimit = 2000 // the default cardinality_limit
)

var lagBounds = []float64{0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000}

// sdkBatch is one export of a Gym process's OpenTelemetry SDK, cumulative since start, after
// round (1, 2, ...) export intervals: every value grows with round.
//
//   - gym.rollout.completed_total: five failed rollouts whose free-text failure_reason and
//     unregistered failure_kind differ (one bounded series), one registered kind, and one
//     scored series for each of 3,000 dispatch names;
//   - gym.server.requests.cancelled_total: raw URL paths as routes (one with a query, one a
//     full URL: both `unmatched`) and a template;
//   - gym.event_loop.lag_ms: two histograms that differ only by an undeclared thread id;
//   - gym.sandbox.create_retry_total as delta: two points that differ only by free text.
func sdkBatch(round int, start, now pcommon.Timestamp) pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := sdkScope(md, "nemo_gym.telemetry", map[string]any{
		"service.name": "nemo-gym/sdk-math", "service.instance.id": "e2e-sdk-0", "nemo.run.id": "e2e-gymattrs",
	})

	sum := func(name, unit string, temporality pmetric.AggregationTemporality) pmetric.NumberDataPointSlice {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(temporality)
		return s.DataPoints()
	}
	point := func(dps pmetric.NumberDataPointSlice, v int64, attrs map[string]any) {
		dp := dps.AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(now)
		dp.SetIntValue(v)
		_ = dp.Attributes().FromRaw(attrs)
	}
	r := int64(round)

	completed := sum("gym.rollout.completed_total", "1", pmetric.AggregationTemporalityCumulative)
	for i := range 5 {
		point(completed, int64(i+1)*r, map[string]any{
			"nemo.gym.rollout.outcome":       "failed",
			"nemo.gym.rollout.dispatch.name": "math",
			"nemo.gym.failure_kind":          fmt.Sprintf("Connection reset by peer %d", i),
			"failure_reason":                 fmt.Sprintf("read timed out after %d s on 10.0.0.%d", 30+i, i),
		})
	}
	point(completed, 7*r, map[string]any{
		"nemo.gym.rollout.outcome":       "failed",
		"nemo.gym.rollout.dispatch.name": "math",
		"nemo.gym.failure_kind":          "transport_timeout",
		"nemo.gym.failure_class":         "agent_request_failed",
		"nemo.gym.failure_type":          "TimeoutError",
	})
	for i := range dispatchNames {
		point(completed, dispatchValue(i, round), map[string]any{
			"nemo.gym.rollout.outcome":       "scored",
			"nemo.gym.rollout.dispatch.name": fmt.Sprintf("dispatch-%04d", i),
			"user.id":                        fmt.Sprintf("u%d", i),
		})
	}

	cancelled := sum("gym.server.requests.cancelled_total", "{request}", pmetric.AggregationTemporalityCumulative)
	point(cancelled, 2*r, map[string]any{"http.route": "/run/12345?verbose=1", "nemo.gym.request.phase": "before_response"})
	point(cancelled, 3*r, map[string]any{"http.route": "https://gym.example/run/777", "nemo.gym.request.phase": "before_response"})
	point(cancelled, 4*r, map[string]any{"http.route": "/run", "nemo.gym.request.phase": "before_response"})

	lag := sm.Metrics().AppendEmpty()
	lag.SetName("gym.event_loop.lag_ms")
	lag.SetUnit("ms")
	h := lag.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for i, tid := range []string{"140230", "140231"} {
		dp := h.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(now)
		dp.Attributes().PutStr("nemo.gym.event_loop", "main")
		dp.Attributes().PutStr("thread.id", tid)
		dp.ExplicitBounds().FromRaw(lagBounds)
		counts := make([]uint64, len(lagBounds)+1)
		counts[i] = uint64(r)     // (-inf, 0.5] or (0.5, 1]
		counts[3] = uint64(2 * r) // (2.5, 5]
		dp.BucketCounts().FromRaw(counts)
		dp.SetCount(uint64(3 * r))
		dp.SetSum(float64(r) * (0.25 + float64(i)*0.5 + 8))
		dp.SetMin(0.25 + float64(i)*0.5)
		dp.SetMax(4)
	}

	retries := sum("gym.sandbox.create_retry_total", "1", pmetric.AggregationTemporalityDelta)
	for i := range 2 {
		dp := retries.AppendEmpty()
		dp.SetStartTimestamp(now - pcommon.Timestamp(time.Second))
		dp.SetTimestamp(now)
		dp.SetIntValue(int64(i + 1))
		dp.Attributes().PutStr("nemo.gym.sandbox.provider", "docker")
		dp.Attributes().PutStr("error.message", fmt.Sprintf("container %d exited with 137", i))
	}
	return md
}

func dispatchValue(i, round int) int64 { return int64(1+i%4) * int64(round) }

// declared is the schema's attribute set of each instrument the batch uses, plus the
// overflow marker.
var declared = map[string][]string{
	"gym.rollout.completed_total":         {"nemo.gym.rollout.outcome", "nemo.gym.rollout.dispatch.name", "nemo.gym.failure_class", "nemo.gym.failure_kind", "nemo.gym.failure_type"},
	"gym.server.requests.cancelled_total": {"http.route", "nemo.gym.request.phase"},
	"gym.event_loop.lag_ms":               {"nemo.gym.event_loop"},
	"gym.sandbox.create_retry_total":      {"nemo.gym.sandbox.provider"},
}

// postOTLP sends an OTLP/HTTP protobuf metrics request, which must be accepted.
func postOTLP(t *testing.T, url string, md pmetric.Metrics) {
	t.Helper()
	code, answer := postMetrics(t, url, md, "")
	require.Equal(t, http.StatusOK, code, "otlp receiver: %s", answer)
}

// postMetrics posts md to an OTLP/HTTP receiver (protobuf) with the bearer token unless it
// is "", and returns the status and the answer.
func postMetrics(t *testing.T, url string, md pmetric.Metrics, token string) (int, string) {
	t.Helper()
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	require.NoError(t, err)
	header := map[string]string{"Content-Type": "application/x-protobuf"}
	if token != "" {
		header["Authorization"] = "Bearer " + token
	}
	return harness.Post(t, http.DefaultClient, url+"/v1/metrics", string(body), header)
}

// TestGymattrsOTLP: two cumulative exports of a Gym SDK through otlp -> gymattrs -> otlp_http.
// Each output must have only declared attributes, normalised values, the points that became
// equal merged, at most cardinality_limit series per instrument with the rest in one
// otel.metric.overflow=true series, and every total of the input.
func TestGymattrsOTLP(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	col, ports, otlpURL := startOTLP(t, "gymattrs.yaml", sink, nil)

	start := pcommon.NewTimestampFromTime(time.Now().Add(-time.Minute))
	for round := 1; round <= 2; round++ {
		now := pcommon.NewTimestampFromTime(time.Now())
		in := sdkBatch(round, start, now)
		postOTLP(t, otlpURL, in)
		require.Equal(t, round, sink.Count(), "one export per request (the exporter sends synchronously)")
		out := sink.Exports()[round-1]
		checkBounded(t, round, in, out)
	}

	// Self-telemetry counted the work.
	for _, m := range []string{
		"otelcol_processor_gymattrs_attributes_removed",
		"otelcol_processor_gymattrs_values_normalised",
		"otelcol_processor_gymattrs_points_merged",
		"otelcol_processor_gymattrs_points_overflowed",
	} {
		var v float64
		require.NoError(t, harness.Eventually(10*time.Second, 200*time.Millisecond, func() error {
			if v = harness.TelemetryValue(t, ports, m); v <= 0 {
				return harness.ErrNotYet
			}
			return nil
		}), "%s is %v", m, v)
	}
	require.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))
}

// outPoint is one output point: its attributes (dump notation) and value.
type outPoint struct {
	attrs string
	value float64
	hist  pmetric.HistogramDataPoint
}

func pointsOf(t *testing.T, md pmetric.Metrics) map[string][]outPoint {
	t.Helper()
	out := map[string][]outPoint{}
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				allowed := map[string]bool{"otel.metric.overflow": true}
				for _, k := range declared[m.Name()] {
					allowed[k] = true
				}
				check := func(attrs pcommon.Map) string {
					for k := range attrs.All() {
						assert.True(t, allowed[k], "%s: undeclared attribute %s survived", m.Name(), k)
					}
					return formatAttrs(attrs)
				}
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for _, dp := range m.Sum().DataPoints().All() {
						out[m.Name()] = append(out[m.Name()], outPoint{attrs: check(dp.Attributes()), value: numberOf(dp)})
					}
				case pmetric.MetricTypeHistogram:
					for _, dp := range m.Histogram().DataPoints().All() {
						out[m.Name()] = append(out[m.Name()], outPoint{attrs: check(dp.Attributes()), value: float64(dp.Count()), hist: dp})
					}
				default:
					t.Errorf("%s: unexpected type %s", m.Name(), m.Type())
				}
			}
		}
	}
	return out
}

func checkBounded(t *testing.T, round int, in, out pmetric.Metrics) {
	t.Helper()
	r := float64(round)
	require.Equal(t, 1, out.ResourceMetrics().Len(), "round %d: one resource", round)
	assert.Equal(t, in.ResourceMetrics().At(0).Resource().Attributes().AsRaw(), out.ResourceMetrics().At(0).Resource().Attributes().AsRaw(),
		"resource attributes are never changed")
	got := pointsOf(t, out)

	// Totals: nothing lost, per metric.
	for _, name := range []string{"gym.rollout.completed_total", "gym.server.requests.cancelled_total", "gym.event_loop.lag_ms", "gym.sandbox.create_retry_total"} {
		want, _ := sumOf(in, name, nil)
		have, _ := sumOf(out, name, nil)
		assert.Equal(t, want, have, "round %d: %s total", round, name)
	}

	// gym.rollout.completed_total: the five free-text failures are one series (merged: the sum
	// of their latest values); 2,000 series at most, the overflow one included.
	byAttrs := map[string]float64{}
	for _, p := range got["gym.rollout.completed_total"] {
		_, dup := byAttrs[p.attrs]
		assert.False(t, dup, "round %d: two points of one series %s", round, p.attrs)
		byAttrs[p.attrs] = p.value
	}
	assert.Len(t, byAttrs, gymattrsLimit, "round %d: series of gym.rollout.completed_total", round)
	assert.Equal(t, (1+2+3+4+5)*r, byAttrs[`{nemo.gym.failure_kind="unregistered" nemo.gym.rollout.dispatch.name="math" nemo.gym.rollout.outcome="failed"}`],
		"round %d: unregistered failure kinds, free text removed, merged", round)
	assert.Equal(t, 7*r, byAttrs[`{nemo.gym.failure_class="agent_request_failed" nemo.gym.failure_kind="transport_timeout" nemo.gym.failure_type="TimeoutError" nemo.gym.rollout.dispatch.name="math" nemo.gym.rollout.outcome="failed"}`],
		"round %d: a registered kind passes", round)
	// Admitted in order of arrival: the two failure series, then dispatch-0000..1996.
	admitted := gymattrsLimit - 1 - 2
	var folded float64
	for i := range dispatchNames {
		key := fmt.Sprintf(`{nemo.gym.rollout.dispatch.name="dispatch-%04d" nemo.gym.rollout.outcome="scored"}`, i)
		v, ok := byAttrs[key]
		if i < admitted {
			if assert.True(t, ok, "round %d: %s admitted", round, key) {
				assert.Equal(t, float64(dispatchValue(i, round)), v, "round %d: %s", round, key)
			}
			continue
		}
		assert.False(t, ok, "round %d: %s beyond the limit has a series", round, key)
		folded += float64(dispatchValue(i, round))
	}
	assert.Equal(t, folded, byAttrs[`{otel.metric.overflow=true}`], "round %d: the overflow series holds the folded dispatches", round)

	// Routes: a raw path with a query and a full URL become `unmatched` and merge.
	routes := map[string]float64{}
	for _, p := range got["gym.server.requests.cancelled_total"] {
		routes[p.attrs] = p.value
	}
	assert.Equal(t, map[string]float64{
		`{http.route="unmatched" nemo.gym.request.phase="before_response"}`: 5 * r,
		`{http.route="/run" nemo.gym.request.phase="before_response"}`:      4 * r,
	}, routes, "round %d: routes", round)

	// Histograms that differ by an undeclared thread id merge bucket-wise.
	if lags := got["gym.event_loop.lag_ms"]; assert.Len(t, lags, 1, "round %d: lag histograms", round) {
		dp := lags[0].hist
		assert.Equal(t, `{nemo.gym.event_loop="main"}`, lags[0].attrs)
		assert.Equal(t, uint64(6*round), dp.Count())
		assert.InDelta(t, r*(0.25+8+0.75+8), dp.Sum(), 1e-9)
		assert.Equal(t, 0.25, dp.Min())
		assert.Equal(t, 4.0, dp.Max())
		assert.Equal(t, lagBounds, dp.ExplicitBounds().AsRaw())
		want := make([]uint64, len(lagBounds)+1)
		want[0], want[1], want[3] = uint64(round), uint64(round), uint64(4*round)
		assert.Equal(t, want, dp.BucketCounts().AsRaw())
	}

	// Delta points that differ by free text add.
	if retries := got["gym.sandbox.create_retry_total"]; assert.Len(t, retries, 1, "round %d: delta retries", round) {
		assert.Equal(t, `{nemo.gym.sandbox.provider="docker"}`, retries[0].attrs)
		assert.Equal(t, 3.0, retries[0].value)
	}
	if t.Failed() {
		var keys []string
		for k := range byAttrs {
			if !strings.Contains(k, "dispatch-") {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		t.Logf("round %d: completed_total series other than dispatches: %v", round, keys)
	}
}
