package live

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// hostileBatch is an export of run "r1" whose every point the page reads has value v: a new
// series and one sampleBatch already made, of a gauge, a counter and a histogram's sum, and a
// price.
func hostileBatch(v float64) *batch {
	// gauge writes a whole number as an int point: v must stay a double.
	gauge := func(ms pmetric.MetricSlice, name string, v float64, attrs ...string) {
		m := ms.AppendEmpty()
		m.SetName(name)
		dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.SetDoubleValue(v)
		putAttrs(dp.Attributes(), attrs)
	}
	b := newBatch()
	flight := b.resource(KeyRun, "r1")
	gauge(flight, "gym.rollout.in_flight", v, "nemo.gym.server.name", "agent", "nemo.gym.rollout.stage", "model_call")
	gauge(flight, "gym.rollout.in_flight", v, "nemo.gym.server.name", "agent", "nemo.gym.rollout.stage", "other")
	gauge(flight, "gym.rollout.oldest_in_flight_age", v)
	drv := b.resource(serverRes("r1", "driver")...)
	sum(drv, "gym.rollout.completed_total", v, false, "nemo.gym.rollout.outcome", "scored", "nemo.gym.rollout.dispatch.name", "math")
	hist(drv, "gym.event_loop.lag_ms", []float64{1, 10, 100}, []uint64{50, 40, 10, 0}, v, "nemo.gym.event_loop", "main")
	gauge(drv, "process.memory.usage", v)
	gauge(b.resource(), PriceMetric, v, "gen_ai.response.model", "m1", "gen_ai.token.type", "input")
	return b
}

// A point that is not a finite number within ±2^53 changes nothing and is counted: the API
// answers every run with the last good numbers, and no answer fails to encode.
func TestNonFinitePointsRejected(t *testing.T) {
	for _, c := range []struct {
		name       string
		v          float64
		nonFinite  bool
		outOfRange bool
	}{
		{"NaN", math.NaN(), true, false},
		{"+Inf", math.Inf(1), true, false},
		{"-Inf", math.Inf(-1), true, false},
		{"1e300", 1e300, false, true},
		{"-2^60", -(1 << 60), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, clk := newTestStore(DefaultLimits())
			other := sampleBatch()
			other.ResourceMetrics().At(0).Resource().Attributes().PutStr(KeyRun, "r2")
			s.Consume(sampleBatch())
			s.Consume(other)
			s.Tick()
			got := s.Consume(hostileBatch(c.v).md)
			const points = 7 // every point of hostileBatch
			if c.nonFinite {
				assert.Equal(t, Rejected{NonFinite: points}, got)
			} else {
				assert.Equal(t, Rejected{OutOfRange: points}, got)
			}
			st := s.Status()
			assert.Equal(t, got.NonFinite, st.Dropped.NonFinite)
			assert.Equal(t, got.OutOfRange, st.Dropped.OutOfRange)
			clk.Advance(DefaultLimits().Resolution)
			s.Tick()

			v := s.Run("r1")
			require.NotNil(t, v)
			assert.Equal(t, 7.0, v.InFlight, "the last good in_flight, no new series")
			assert.Equal(t, 10.0, v.CompletedTotal)
			require.NotNil(t, v.OldestAge)
			assert.Equal(t, 42.5, *v.OldestAge)
			assert.InDelta(t, 3.0, *v.ServerRows[0].Lag.Mean, 1e-9)
			assert.Equal(t, float64(1<<20), *v.ServerRows[0].Memory)
			assert.Equal(t, []Price{{"m1", "input", 3}}, v.Cost.Prices)

			h := NewHandler(s, nil, 4)
			for _, path := range []string{"/api/v1/runs", "/api/v1/runs/r1", "/api/v1/runs/r1/history", "/api/v1/runs/r2", "/api/v1/health"} {
				w := serve(h, "GET", path)
				require.Equal(t, http.StatusOK, w.Code, "%s: %s", path, w.Body.String())
				assert.True(t, json.Valid(w.Body.Bytes()), path)
			}
			var runs struct {
				Runs []RunSummary `json:"runs"`
			}
			require.NoError(t, json.Unmarshal(serve(h, "GET", "/api/v1/runs").Body.Bytes(), &runs))
			assert.Len(t, runs.Runs, 2, "no run disappears")
		})
	}
}

// Histograms whose shape cannot be read are rejected whole: bounds that are not finite (not
// finite), or not increasing, bucket counts that do not match the bounds, counts past 2^53
// (out of range).
func TestMalformedHistogramsRejected(t *testing.T) {
	for name, p := range map[string]struct {
		bounds []float64
		counts []uint64
		want   Rejected
	}{
		"NaN bound":        {[]float64{1, math.NaN(), 100}, []uint64{1, 1, 1, 1}, Rejected{NonFinite: 1}},
		"+Inf bound":       {[]float64{1, 10, math.Inf(1)}, []uint64{1, 1, 1, 1}, Rejected{NonFinite: 1}},
		"decreasing":       {[]float64{10, 1, 100}, []uint64{1, 1, 1, 1}, Rejected{OutOfRange: 1}},
		"too few buckets":  {[]float64{1, 10, 100}, []uint64{1, 1}, Rejected{OutOfRange: 1}},
		"count past 2^53":  {[]float64{1}, []uint64{1 << 54, 0}, Rejected{OutOfRange: 1}},
		"too many buckets": {[]float64{1}, []uint64{1, 1, 1}, Rejected{OutOfRange: 1}},
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := newTestStore(DefaultLimits())
			s.Consume(sampleBatch())
			b := newBatch()
			hist(b.resource(serverRes("r1", "driver")...), "gym.event_loop.lag_ms", p.bounds, p.counts, 10, "nemo.gym.event_loop", "main")
			got := s.Consume(b.md)
			assert.Equal(t, p.want, got)
			lag := s.Run("r1").ServerRows[0].Lag
			assert.Equal(t, uint64(100), lag.Count, "the last good histogram")
			assert.InDelta(t, 91.0, *lag.P99, 1e-9)
		})
	}
}

// Deltas that would carry a total past 2^53 are rejected; the total stays.
func TestDeltaOverflowRejected(t *testing.T) {
	s, _ := newTestStore(DefaultLimits())
	add := func(v float64) Rejected {
		b := newBatch()
		sum(b.resource(KeyRun, "r1"), "gym.rollout.completed_total", v, true, "nemo.gym.rollout.outcome", "scored")
		return s.Consume(b.md)
	}
	assert.Equal(t, Rejected{}, add(1<<52))
	assert.Equal(t, Rejected{}, add(1<<52))
	assert.Equal(t, Rejected{OutOfRange: 1}, add(2)) // 2^53+1 rounds to 2^53 in a float64
	assert.Equal(t, float64(1<<53), s.Run("r1").CompletedTotal)
}

// A price that is negative is out of range; the cost stays at the last good price.
func TestNegativePriceRejected(t *testing.T) {
	s, _ := newTestStore(DefaultLimits())
	s.Consume(sampleBatch())
	b := newBatch()
	gauge(b.resource(), PriceMetric, -3, "gen_ai.response.model", "m1", "gen_ai.token.type", "input")
	assert.Equal(t, Rejected{OutOfRange: 1}, s.Consume(b.md))
	assert.Equal(t, []Price{{"m1", "input", 3}}, s.Run("r1").Cost.Prices)
}

// The numbers computed from other code's formulas (the cost) are written null when they are
// not finite, never an error for the whole answer; a computed pointer is nil.
func TestNonFiniteEncodesNull(t *testing.T) {
	b, err := json.Marshal(struct {
		C  []Count      `json:"c"`
		CS *CostSection `json:"cs"`
	}{
		C:  []Count{{"a", math.NaN()}, {"b", 2}},
		CS: &CostSection{USD: math.Inf(1), ByModel: []Count{{"m", math.Inf(-1)}}, PerScoredRollout: ptr(math.NaN()), Unpriced: []TokenRow{}, Prices: []Price{}},
	})
	require.NoError(t, err)
	out := string(b)
	for _, want := range []string{`{"name":"a","value":null}`, `{"name":"b","value":2}`, `"usd":null`, `"per_scored_rollout":null`,
		`"by_model":[{"name":"m","value":null}]`, `"unpriced_tokens":[]`, `"prices":[]`} {
		assert.Contains(t, out, want)
	}
	assert.Nil(t, finitePtr(ptr(math.NaN())))
	assert.Nil(t, finitePtr(nil))
	assert.Equal(t, 2.0, *finitePtr(ptr(2)))
	d := (&histAgg{count: 1, sum: math.Inf(1)}).dist()
	assert.Nil(t, d.Mean, "a mean that is not finite is unknown")
}

func ptr(v float64) *float64 { return &v }

// The collector's own metrics may hold NaN and ±Inf (Prometheus text allows them): such
// samples are left out of the totals and counted.
func TestParseSelfMetricsNonFinite(t *testing.T) {
	text := "otelcol_exporter_queue_size{exporter=\"a\"} NaN\n" +
		"otelcol_exporter_queue_size{exporter=\"b\"} +Inf\n" +
		"otelcol_exporter_queue_size{exporter=\"c\"} 3\n" +
		"otelcol_exporter_queue_capacity{exporter=\"c\"} -Inf\n"
	fams, bad, err := ParseSelfMetrics(strings.NewReader(text))
	require.NoError(t, err)
	assert.Equal(t, 3, bad, "each non-finite sample")
	for _, f := range fams {
		if f.Name == "otelcol_exporter_queue_size" {
			assert.Equal(t, 3.0, f.Total)
			assert.Equal(t, []Count{{"c", 3}}, f.By)
		}
	}
	_, err = json.Marshal(fams)
	require.NoError(t, err)
}

// The health answer names the setting that points the page at the collector's own metrics
// when it cannot read them.
func TestSelfMetricsErrorNamesTheSetting(t *testing.T) {
	self := NewSelfMetrics("http://127.0.0.1:1/metrics", 0)
	self.Setting = "exporters::gymlive/page::self_metrics"
	h := self.Get(t.Context())
	require.NotNil(t, h)
	assert.Equal(t, "exporters::gymlive/page::self_metrics", h.Setting)
	assert.Contains(t, h.Error, "exporters::gymlive/page::self_metrics")
	assert.Contains(t, h.Error, "service::telemetry")
	t.Log(h.Error)
}

// Metrics of another program on the port (no otelcol_ sample) are not taken for the
// collector's: the read fails and names the setting.
func TestSelfMetricsOfAnotherProgram(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "# HELP jupyter_kernels Kernels.\njupyter_kernels 2\n")
	}))
	defer other.Close()
	h := NewSelfMetrics(other.URL+"/metrics", 0).Get(t.Context())
	assert.Contains(t, h.Error, "not the collector's own telemetry")
	assert.Contains(t, h.Error, "exporters::gymlive::self_metrics")
	assert.Empty(t, h.Families)
}
