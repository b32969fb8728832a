package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/live"
)

// liveRun appends a run's resource with its completed rollouts (outcome -> count), one failure
// kind and the tokens of one model.
func liveRun(md pmetric.Metrics, runID string, completed map[string]float64, failedKind string, tokens float64) {
	rm := md.ResourceMetrics().AppendEmpty()
	res := rm.Resource().Attributes()
	res.PutStr("service.name", "nemo-gym/rollout_collection")
	res.PutStr("service.instance.id", runID+"-rank0")
	res.PutStr("nemo.run.id", runID)
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	m := ms.AppendEmpty()
	m.SetName("gym.rollout.completed_total")
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for outcome, n := range completed {
		dp := s.DataPoints().AppendEmpty()
		dp.SetDoubleValue(n)
		dp.Attributes().PutStr("nemo.gym.rollout.outcome", outcome)
		dp.Attributes().PutStr("nemo.gym.rollout.dispatch.name", "math")
		if outcome == "failed" {
			dp.Attributes().PutStr("nemo.gym.failure_kind", failedKind)
		}
	}
	t := ms.AppendEmpty()
	t.SetName("gym.rollout.tokens")
	h := t.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := h.DataPoints().AppendEmpty()
	dp.ExplicitBounds().FromRaw([]float64{1000})
	dp.BucketCounts().FromRaw([]uint64{0, 2})
	dp.SetCount(2)
	dp.SetSum(tokens)
	dp.Attributes().PutStr("gen_ai.token.type", "output")
	dp.Attributes().PutStr("gen_ai.response.model", "policy")
	dp.Attributes().PutStr("nemo.gym.rollout.dispatch.name", "math")
}

// serveLive serves the live page's API over a store holding two runs.
func serveLive(t *testing.T) string {
	t.Helper()
	store := live.NewStore(live.DefaultLimits(), clock.System())
	md := pmetric.NewMetrics()
	liveRun(md, "run-a", map[string]float64{"scored": 41, "failed": 7}, "transport_timeout", 123456)
	liveRun(md, "run-b", map[string]float64{"scored": 5}, "", 99)
	liveRun(md, "x/../run-c", map[string]float64{"scored": 3}, "", 1)
	// The user's prices of the model (USD per million tokens), on a resource of their own.
	pm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	pm.SetName(live.PriceMetric)
	gauge := pm.SetEmptyGauge()
	for typ, p := range map[string]float64{"input": 2, "output": 8, "cached_input": 0.5, "reasoning": 8} {
		dp := gauge.DataPoints().AppendEmpty()
		dp.SetDoubleValue(p)
		dp.Attributes().PutStr("gen_ai.response.model", "policy")
		dp.Attributes().PutStr("gen_ai.token.type", typ)
	}
	store.Consume(md)
	srv := httptest.NewServer(live.NewHandler(store, nil, 4))
	t.Cleanup(srv.Close)
	return srv.URL
}

func topOnce(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runTop(append(args, "--once"), os.Stdin, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestTopFrame: one frame shows the run's numbers as the API gives them, in 80 columns.
func TestTopFrame(t *testing.T) {
	url := serveLive(t)
	code, out, errOut := topOnce(t, "--url", url, "--run", "run-a")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "run run-a (")
	assert.Regexp(t, `rollouts\s+48 completed`, out)
	assert.Regexp(t, `scored 41\s+failed 7`, out)
	assert.Regexp(t, `transport_timeout\s+7`, out)
	assert.Regexp(t, `gym.rollout.tokens\s+output\s+policy\s+123456`, out)
	// 123456 output tokens at 8 USD per million, over 41 scored rollouts.
	assert.Contains(t, out, "cost      $0.9876  $0.0241 per scored rollout")
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), 80, "%q", line)
	}

	code, out, _ = topOnce(t, "--url", url, "--run", "run-b")
	require.Equal(t, 0, code)
	assert.Regexp(t, `rollouts\s+5 completed`, out)

	// An id with a dot segment is asked for by query (a path is cleaned of it).
	code, out, errOut = topOnce(t, "--url", url, "--run", "x/../run-c")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `rollouts\s+3 completed`, out)
}

// TestTopErrors: an unknown run, a collector that does not answer and bad usage exit 2 with
// what went wrong in the frame or on standard error.
func TestTopErrors(t *testing.T) {
	url := serveLive(t)
	code, out, _ := topOnce(t, "--url", url, "--run", "nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, out, `no run "nope"`)

	dead := httptest.NewServer(nil)
	deadURL := dead.URL
	dead.Close()
	code, out, _ = topOnce(t, "--url", deadURL)
	assert.Equal(t, 2, code)
	assert.Contains(t, out, "cannot read the live page")

	code, _, errOut := topOnce(t, "--interval", "1ms")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "usage: gymrun top")
}

// TestPickRun: a named run, the n'th (wrapping), else the one seen last.
func TestPickRun(t *testing.T) {
	now := time.Now()
	runs := []live.RunSummary{{ID: "a", LastSeen: now.Add(-time.Minute)}, {ID: "b", LastSeen: now}, {ID: "c", LastSeen: now.Add(-time.Hour)}}
	assert.Equal(t, 1, pickRun(runs, "", -1))
	assert.Equal(t, 2, pickRun(runs, "c", -1))
	assert.Equal(t, -1, pickRun(runs, "x", 0))
	assert.Equal(t, 0, pickRun(runs, "", 3))
}

// TestTopHealthFits: the collector's counts take at most three lines of the width.
func TestTopHealthFits(t *testing.T) {
	h := &live.CollectorHealth{}
	for i := range 20 {
		h.Families = append(h.Families, live.Family{Name: "otelcol_x", Title: "metric points of kind " + strings.Repeat("x", i%5), Total: float64(i * 1000)})
	}
	l := &lines{width: 80}
	writeHealthSection(l, h)
	require.Len(t, l.out, 3)
	assert.True(t, strings.HasPrefix(l.out[0], "collector  metric points of kind  0"), l.out[0])
	assert.True(t, strings.HasSuffix(l.out[2], "…"), "the rest is on the page: %q", l.out[2])
	for _, line := range l.out {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), 80, "%q", line)
	}
}
