package console

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/plogtest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/pdatatest"
	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

// The sample: 11 lines of ordinary output, 1 line of other JSON, 6 traceback lines; two
// metrics batches, two spans, a pretty-printed log record (29 lines) and a compact one; a
// metrics line cut short in the middle.
func TestSampleCounts(t *testing.T) {
	c, tot, logs := feed(t, readSample(t), 1<<20)
	assert.Equal(t, int64(6), tot.accepted, "2 metrics batches + 2 spans + 2 log records")
	assert.Equal(t, int64(4+1+1+6+2), tot.skipped, "uvicorn lines, other JSON, traceback")
	assert.Equal(t, map[string]int64{ReasonInvalidJSON: 1}, tot.rejected)
	require.Len(t, c.metrics, 2)
	require.Len(t, c.traces, 1, "the spans of one read go on together")
	assert.Equal(t, 2, c.traces[0].SpanCount())
	require.Len(t, c.logs, 1)
	assert.Equal(t, 2, c.logs[0].LogRecordCount())

	// The cut line is logged with its source and line number.
	require.Equal(t, 1, logs.Len())
	e := logs.All()[0]
	assert.Equal(t, "gym.log", e.ContextMap()["source"])
	assert.Equal(t, int64(51), e.ContextMap()["line"], "the line in the file")
	assert.Equal(t, "metrics", e.ContextMap()["record"])
}

func goldenPath(name string) string { return filepath.Join("testdata", name) }

// The metrics as decoded (before the gymattrs rules, which the receiver applies): every
// data kind, values, temporality and times exactly as the SDK wrote them.
func TestGoldenMetrics(t *testing.T) {
	c, _, _ := feed(t, readSample(t), 1<<20)
	for i, name := range []string{"metrics-batch1.yaml", "metrics-batch2.yaml"} {
		if *update {
			require.NoError(t, golden.WriteMetricsToFile(goldenPath(name), c.metrics[i], golden.SkipMetricTimestampNormalization()))
		}
		want, err := golden.ReadMetrics(goldenPath(name))
		require.NoError(t, err)
		// NaN never equals itself: both sides must hold it, then it is left out of the comparison.
		require.Equal(t, 1, zeroNaNs(want), name)
		require.Equal(t, 1, zeroNaNs(c.metrics[i]), name)
		require.NoError(t, pmetrictest.CompareMetrics(want, c.metrics[i], pmetrictest.IgnoreMetricsOrder(), pmetrictest.IgnoreMetricDataPointsOrder()), name, "the golden file is written sorted")
	}
}

func TestGoldenTraces(t *testing.T) {
	c, _, _ := feed(t, readSample(t), 1<<20)
	checkGolden(t, "traces.yaml", c.traces[0], golden.WriteTracesToFile, golden.ReadTraces, func(want, got ptrace.Traces) error {
		return ptracetest.CompareTraces(want, got)
	})
}

func TestGoldenLogs(t *testing.T) {
	c, _, _ := feed(t, readSample(t), 1<<20)
	checkGolden(t, "logs.yaml", c.logs[0], golden.WriteLogsToFile, golden.ReadLogs, func(want, got plog.Logs) error {
		return plogtest.CompareLogs(want, got)
	})
}

// checkGolden compares got with the golden file name (rewritten first with -update).
func checkGolden[T any](t *testing.T, name string, got T, write func(string, T) error, read func(string) (T, error), compare func(want, got T) error) {
	t.Helper()
	if *update {
		require.NoError(t, write(goldenPath(name), got))
	}
	want, err := read(goldenPath(name))
	require.NoError(t, err)
	require.NoError(t, compare(want, got))
}

// The shapes, pinned field by field (the golden files hold the same, in bulk).
func TestSpanShape(t *testing.T) {
	c, _, _ := feed(t, readSample(t), 1<<20)
	rs := c.traces[0].ResourceSpans()
	require.Equal(t, 1, rs.Len(), "two spans of one resource share it")
	res := rs.At(0).Resource().Attributes()
	v, _ := res.Get("service.name")
	assert.Equal(t, "nemo-gym/math_with_judge", v.Str())
	v, _ = res.Get("process.pid")
	assert.Equal(t, int64(4242), v.Int())

	spans := rs.At(0).ScopeSpans().At(0).Spans()
	client, server := spans.At(0), spans.At(1)
	assert.Equal(t, "POST /verify", client.Name())
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", client.TraceID().String())
	assert.Equal(t, "00f067aa0ba902b7", client.SpanID().String())
	assert.Equal(t, "5fb397be34d26b51", client.ParentSpanID().String())
	assert.Equal(t, server.SpanID(), client.ParentSpanID(), "the parent link")
	assert.Equal(t, "Client", client.Kind().String())
	assert.Equal(t, "Error", client.Status().Code().String())
	assert.Equal(t, "TimeoutError: judge did not answer", client.Status().Message())
	// "2025-12-01T19:00:12.250000Z" .. "2025-12-01T19:00:12.750125Z"
	assert.Equal(t, uint64(1764615612250000000), uint64(client.StartTimestamp()))
	assert.Equal(t, uint64(1764615612750125000), uint64(client.EndTimestamp()))
	require.Equal(t, 1, client.Events().Len())
	ev := client.Events().At(0)
	assert.Equal(t, "exception", ev.Name())
	v, _ = ev.Attributes().Get("exception.type")
	assert.Equal(t, "TimeoutError", v.Str())
	v, _ = client.Attributes().Get("nemo.gym.retry")
	assert.Equal(t, []any{int64(1), int64(2)}, v.Slice().AsRaw())
	v, _ = client.Attributes().Get("http.response.status_code")
	assert.Equal(t, int64(504), v.Int())

	assert.True(t, server.ParentSpanID().IsEmpty(), "parent_id null: a root span")
	assert.Equal(t, "Server", server.Kind().String())
	assert.Equal(t, "Unset", server.Status().Code().String())
	assert.Equal(t, "nemo=r19,gym=1", server.TraceState().AsRaw())
	require.Equal(t, 1, server.Links().Len())
	l := server.Links().At(0)
	assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", l.TraceID().String())
	assert.Equal(t, "b7ad6b7169203331", l.SpanID().String())
	assert.Equal(t, "nemo=batch-3", l.TraceState().AsRaw())
	v, _ = server.Attributes().Get("nemo.gym.rollout.reward")
	assert.Equal(t, 0.0, v.Double(), "0.0 stays a double")
	v, _ = server.Attributes().Get("nemo.gym.rollout.masked")
	assert.False(t, v.Bool())
}

func TestLogShape(t *testing.T) {
	c, _, _ := feed(t, readSample(t), 1<<20)
	recs := c.logs[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	require.Equal(t, 2, recs.Len(), "the pretty-printed and the compact record share their resource")
	r := recs.At(0)
	assert.Equal(t, "judge did not answer; rollout r-19 failed", r.Body().Str())
	assert.Equal(t, "Error", r.SeverityNumber().String())
	assert.Equal(t, "ERROR", r.SeverityText())
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", r.TraceID().String())
	assert.Equal(t, "5fb397be34d26b51", r.SpanID().String())
	assert.Equal(t, uint32(1), uint32(r.Flags()))
	assert.Equal(t, uint64(1764615612800000000), uint64(r.Timestamp()))
	assert.Equal(t, uint64(1764615612800100000), uint64(r.ObservedTimestamp()))
	v, _ := r.Attributes().Get("code.line.number")
	assert.Equal(t, int64(90), v.Int())

	r = recs.At(1)
	assert.Equal(t, "server shutting down", r.Body().Str())
	assert.True(t, r.TraceID().IsEmpty(), `trace_id "" is no trace`)
	assert.Equal(t, 0, r.Attributes().Len())
}

func TestMetricShapes(t *testing.T) {
	c, _, _ := feed(t, readSample(t), 1<<20)
	md := c.metrics[1]
	rm := md.ResourceMetrics().At(0)
	sm := rm.ScopeMetrics().At(0)
	assert.Equal(t, "nemo.lens", sm.Scope().Name())
	assert.Equal(t, "0.3.0", sm.Scope().Version())
	byName := map[string]pmetric.Metric{}
	for i := 0; i < sm.Metrics().Len(); i++ {
		m := sm.Metrics().At(i)
		byName[m.Name()] = m
	}
	sum := byName["gym.rollout.completed_total"].Sum()
	assert.Equal(t, pmetric.AggregationTemporalityCumulative, sum.AggregationTemporality())
	assert.True(t, sum.IsMonotonic())
	dp := sum.DataPoints().At(0)
	assert.Equal(t, int64(3), dp.IntValue())
	assert.Equal(t, uint64(1764615600000000000), uint64(dp.StartTimestamp()))
	assert.Equal(t, uint64(1764615620000000000), uint64(dp.Timestamp()))
	ex := sum.DataPoints().At(1).Exemplars().At(0)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", ex.TraceID().String(), "a Python int, in decimal")
	assert.Equal(t, "5fb397be34d26b51", ex.SpanID().String())

	assert.False(t, byName["gym.server.requests.in_flight"].Sum().IsMonotonic())
	assert.Equal(t, pmetric.MetricTypeGauge, byName["gym.event_loop.tasks"].Type())

	h := byName["gym.event_loop.lag_ms"].Histogram()
	hp := h.DataPoints().At(0)
	assert.Equal(t, uint64(7), hp.Count())
	assert.Equal(t, 40.0, hp.Sum())
	assert.Equal(t, 1.5, hp.Min())
	assert.Equal(t, 19.0, hp.Max())
	assert.Equal(t, 16, hp.BucketCounts().Len())
	assert.Equal(t, 15, hp.ExplicitBounds().Len())
	empty := h.DataPoints().At(1)
	assert.False(t, empty.HasMin(), "the SDK's Infinity of an empty histogram is no min")
	assert.False(t, empty.HasMax())

	e := byName["http.server.request.duration"].ExponentialHistogram()
	ep := e.DataPoints().At(0)
	assert.Equal(t, int32(3), ep.Scale())
	assert.Equal(t, int32(-9), ep.Positive().Offset())
	assert.Equal(t, []uint64{1, 0, 2, 1}, ep.Positive().BucketCounts().AsRaw())
	assert.Equal(t, 0.125, ep.Min())

	g := byName["process.cpu.utilization"].Gauge().DataPoints().At(0)
	assert.True(t, g.DoubleValue() != g.DoubleValue(), "Python's NaN token is NaN")
}

// Lines that are one of the shapes but malformed are rejected with a reason; the good
// lines around them are kept.
func TestMalformed(t *testing.T) {
	good := `{"body": "ok", "severity_number": 9, "severity_text": "INFO", "attributes": null, "dropped_attributes": 0, "timestamp": null, "observed_timestamp": "2025-12-01T19:00:21.000050Z", "trace_id": "", "span_id": "", "trace_flags": null, "resource": {"attributes": {"service.name": "x"}, "schema_url": ""}, "event_name": ""}`
	bad := []struct{ line, reason string }{
		{`{"resource_metrics": [{"resource": {"attributes": {}, "schema_url": ""}, "scope_metrics": [{"scope": null, "metrics": [{"name": "m", "description": "", "unit": "", "data": {"data_points": [{"attributes": {}, "start_time_unix_nano": -1, "time_unix_nano": 1, "value": 1, "exemplars": []}]}}], "schema_url": ""}], "schema_url": ""}]}`, ReasonInvalidRecord},
		{`{"resource_metrics": [{"resource": {"attributes": {}, "schema_url": ""}, "scope_metrics": [{"scope": null, "metrics": [{"name": "m", "description": "", "unit": "", "data": {"data_points": [], "aggregation_temporality": 7, "is_monotonic": true}}], "schema_url": ""}], "schema_url": ""}]}`, ReasonInvalidRecord},
		{`{"resource_metrics": 12}`, ReasonInvalidRecord},
		// an exponential histogram's flags: not a count, out of range, missing
		{`{"resource_metrics": [{"resource": {"attributes": {}, "schema_url": ""}, "scope_metrics": [{"scope": null, "metrics": [{"name": "d", "description": "", "unit": "s", "data": {"data_points": [{"attributes": {}, "start_time_unix_nano": 1764615600000000000, "time_unix_nano": 1764615620000000000, "count": 4, "sum": 1.25, "scale": 3, "zero_count": 0, "positive": {"offset": -9, "bucket_counts": [1, 0, 2, 1]}, "negative": {"offset": 0, "bucket_counts": []}, "flags": -1, "min": 0.125, "max": 0.5, "exemplars": []}], "aggregation_temporality": 2}}], "schema_url": ""}], "schema_url": ""}]}`, ReasonInvalidRecord},
		{`{"resource_metrics": [{"resource": {"attributes": {}, "schema_url": ""}, "scope_metrics": [{"scope": null, "metrics": [{"name": "d", "description": "", "unit": "s", "data": {"data_points": [{"attributes": {}, "start_time_unix_nano": 1764615600000000000, "time_unix_nano": 1764615620000000000, "count": 4, "sum": 1.25, "scale": 3, "zero_count": 0, "positive": {"offset": -9, "bucket_counts": [1, 0, 2, 1]}, "negative": {"offset": 0, "bucket_counts": []}, "flags": 1.5, "min": 0.125, "max": 0.5, "exemplars": []}], "aggregation_temporality": 2}}], "schema_url": ""}], "schema_url": ""}]}`, ReasonInvalidRecord},
		{`{"resource_metrics": [{"resource": {"attributes": {}, "schema_url": ""}, "scope_metrics": [{"scope": null, "metrics": [{"name": "d", "description": "", "unit": "s", "data": {"data_points": [{"attributes": {}, "start_time_unix_nano": 1764615600000000000, "time_unix_nano": 1764615620000000000, "count": 4, "sum": 1.25, "scale": 3, "zero_count": 0, "positive": {"offset": -9, "bucket_counts": [1, 0, 2, 1]}, "negative": {"offset": 0, "bucket_counts": []}, "flags": 4294967296, "min": 0.125, "max": 0.5, "exemplars": []}], "aggregation_temporality": 2}}], "schema_url": ""}], "schema_url": ""}]}`, ReasonInvalidRecord},
		{`{"resource_metrics": [{"resource": {"attributes": {}, "schema_url": ""}, "scope_metrics": [{"scope": null, "metrics": [{"name": "d", "description": "", "unit": "s", "data": {"data_points": [{"attributes": {}, "start_time_unix_nano": 1764615600000000000, "time_unix_nano": 1764615620000000000, "count": 4, "sum": 1.25, "scale": 3, "zero_count": 0, "positive": {"offset": -9, "bucket_counts": [1, 0, 2, 1]}, "negative": {"offset": 0, "bucket_counts": []}, "min": 0.125, "max": 0.5, "exemplars": []}], "aggregation_temporality": 2}}], "schema_url": ""}], "schema_url": ""}]}`, ReasonInvalidRecord},
		{`{"name": "s", "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x00f067aa0ba902b7", "trace_state": "[]"}, "kind": "SpanKind.SIDEWAYS", "parent_id": null, "start_time": null, "end_time": null, "status": {"status_code": "UNSET"}, "attributes": {}, "events": [], "links": [], "resource": {"attributes": {}, "schema_url": ""}}`, ReasonInvalidRecord},
		{`{"name": "s", "context": {"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x00f067aa0ba902b7", "trace_state": "[]"}, "kind": "SpanKind.INTERNAL", "parent_id": null, "start_time": null, "end_time": null, "status": {"status_code": "UNSET"}, "attributes": {}, "events": [], "links": [], "resource": {"attributes": {}, "schema_url": ""}}`, ReasonInvalidRecord},
		{`{"name": "s", "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x00f067aa0ba902b7", "trace_state": "[]"}, "kind": "SpanKind.INTERNAL", "parent_id": null, "start_time": "yesterday", "end_time": null, "status": {"status_code": "UNSET"}, "attributes": {}, "events": [], "links": [], "resource": {"attributes": {}, "schema_url": ""}}`, ReasonInvalidRecord},
		{`{"name": "s", "context": {"trace_id": "0x4bf9`, ReasonInvalidJSON},
		{`{"body": "x", "severity_number": 99, "observed_timestamp": "2025-12-01T19:00:21.000050Z"}`, ReasonInvalidRecord},
		{`{"body": "x", "observed_timestamp": "2025-12-01T19:00:21.000050Z"} trailing`, ReasonInvalidJSON},
	}
	var in strings.Builder
	for _, b := range bad {
		in.WriteString(good + "\n" + b.line + "\n")
	}
	in.WriteString(good + "\n")
	c, tot, logs := feed(t, []byte(in.String()), 1<<20)
	want := map[string]int64{}
	for _, b := range bad {
		want[b.reason]++
	}
	assert.Equal(t, want, tot.rejected)
	assert.Equal(t, int64(len(bad)+1), tot.accepted, "every good line around the bad ones")
	assert.Equal(t, len(bad)+1, c.logs[0].LogRecordCount())
	assert.Equal(t, len(bad), logs.Len(), "each rejection logged (under the rate limit)")
	for i, e := range logs.All() {
		assert.Equal(t, int64(2*i+2), e.ContextMap()["line"], "line numbers")
	}
}

// Warnings are rate-limited: past the burst they are counted, and the next one says how many
// were left out.
func TestWarningsRateLimited(t *testing.T) {
	var in strings.Builder
	for range 50 {
		in.WriteString(`{"body": 1` + "\n")
	}
	core, logs := newObserver()
	s := NewLineDecoder("f", 1<<20, &capture{}, ratelog.NewLogger(core, 10, 1<<62))
	for _, l := range strings.Split(strings.TrimSpace(in.String()), "\n") {
		_, _ = s.Line([]byte(l))
	}
	assert.Equal(t, int64(50), s.Flush().Rejected[ReasonInvalidJSON], "every one counted")
	assert.Equal(t, 10, logs.Len(), "only the burst logged")
}

// A pretty-printed block cut by other output is a partial record; a block that is not a
// record is text; a block longer than the limit is rejected.
func TestBlocks(t *testing.T) {
	in := "{\n    \"body\": \"a\",\nINFO: interleaved\n{\n    \"level\": \"info\"\n}\n{\n}\n"
	_, tot, _ := feed(t, []byte(in), 1<<20)
	assert.Equal(t, map[string]int64{ReasonPartialRecord: 1}, tot.rejected)
	assert.Equal(t, int64(1+3+2), tot.skipped, "the interleaved line, the other block, the empty block")

	long := "{\n    \"body\": \"" + strings.Repeat("x", 5000) + "\",\n    \"observed_timestamp\": \"2025-12-01T19:00:21.000050Z\"\n}\n"
	_, tot, _ = feed(t, []byte(long), 4096)
	assert.Equal(t, int64(1), tot.rejected[ReasonPartialRecord])
	_, tot, _ = feed(t, []byte(long), 1<<20)
	assert.Equal(t, int64(1), tot.accepted)
}

// zeroNaNs sets the NaN values of gauges and sums to 0 and returns how many it found.
func zeroNaNs(md pmetric.Metrics) int {
	n := 0
	for m := range pdatatest.Metrics(md) {
		var dps pmetric.NumberDataPointSlice
		switch m.Type() {
		case pmetric.MetricTypeGauge:
			dps = m.Gauge().DataPoints()
		case pmetric.MetricTypeSum:
			dps = m.Sum().DataPoints()
		default:
			continue
		}
		for _, dp := range dps.All() {
			if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble && math.IsNaN(dp.DoubleValue()) {
				dp.SetDoubleValue(0)
				n++
			}
		}
	}
	return n
}

// The stdout of the real OpenTelemetry Python SDK (testdata/console/real_sdk.py, run against the
// SDK's source at opentelemetry-python 0a5d76b), set up as nemo-lens sets it up for the
// console exporter: compact metrics and spans, pretty-printed log records, every data kind.
// Every record decodes; nothing is rejected.
func TestRealSDKOutput(t *testing.T) {
	b, err := os.ReadFile("../../testdata/console/real-sdk-stdout.log")
	require.NoError(t, err)
	c, tot, _ := feed(t, b, 1<<20)
	assert.Empty(t, tot.rejected)
	assert.Equal(t, int64(5+2+1), tot.accepted, "5 metrics batches, 2 spans, 1 log record")
	assert.Equal(t, int64(2), tot.skipped, "the two uvicorn lines")
	require.Len(t, c.metrics, 5)

	spans := c.traces[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	client, root := spans.At(0), spans.At(1)
	assert.Equal(t, root.SpanID(), client.ParentSpanID())
	assert.Equal(t, root.TraceID(), client.TraceID())
	assert.Equal(t, ptrace.StatusCodeError, client.Status().Code())
	assert.Equal(t, "exception", client.Events().At(0).Name(), "record_exception's event")
	assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", root.Links().At(0).TraceID().String())

	rec := c.logs[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	assert.Equal(t, "judge did not answer; rollout r-19 failed", rec.Body().Str())
	assert.Equal(t, client.SpanID(), rec.SpanID(), "logged inside the client span")
	assert.Equal(t, uint32(3), uint32(rec.Flags()), "sampled and random trace id")

	// Every kind, over the batches (a synchronous gauge is only in the batch after it was set).
	kinds := map[string]pmetric.MetricType{}
	for _, md := range c.metrics {
		sm := md.ResourceMetrics().At(0).ScopeMetrics().At(0)
		assert.Equal(t, "nemo.lens", sm.Scope().Name())
		for i := 0; i < sm.Metrics().Len(); i++ {
			kinds[sm.Metrics().At(i).Name()] = sm.Metrics().At(i).Type()
		}
	}
	assert.Equal(t, map[string]pmetric.MetricType{
		"gym.rollout.completed_total":   pmetric.MetricTypeSum,
		"gym.server.requests.in_flight": pmetric.MetricTypeSum,
		"gym.event_loop.tasks":          pmetric.MetricTypeGauge,
		"gym.event_loop.lag_ms":         pmetric.MetricTypeHistogram,
		"http.server.request.duration":  pmetric.MetricTypeExponentialHistogram,
	}, kinds)
}

// The SDK's default formatter (indent=4, what nemo-lens keeps for logs and a plain SDK set-up
// uses for every signal) gives the same data as the compact one.
func TestPrettyPrintedEqualsCompact(t *testing.T) {
	var compact, pretty bytes.Buffer
	small := `{"resource_metrics": [{"resource": {"attributes": {"service.name": "nemo-gym/x"}, "schema_url": ""}, "scope_metrics": [{"scope": {"name": "nemo.lens", "version": "0.3.0", "schema_url": "", "attributes": null}, "metrics": [{"name": "gym.server.requests.in_flight", "description": "", "unit": "{request}", "data": {"data_points": [{"attributes": {}, "start_time_unix_nano": 1, "time_unix_nano": 2, "value": 3, "exemplars": []}], "aggregation_temporality": 2, "is_monotonic": false}}], "schema_url": ""}], "schema_url": ""}]}`
	lines := append(bytes.Split(readSample(t), []byte("\n")), []byte(small))
	n := 0
	for _, l := range lines {
		if k := Classify(l); k == Text || k == BlockStart {
			continue
		}
		var ind bytes.Buffer
		if json.Indent(&ind, l, "", "    ") != nil {
			continue // NaN tokens (not JSON to Go), or the cut line
		}
		compact.Write(append(l, '\n'))
		pretty.Write(append(ind.Bytes(), '\n'))
		n++
	}
	require.Equal(t, 4, n, "2 spans, the compact log record, the small metrics line")
	c1, t1, _ := feed(t, compact.Bytes(), 1<<20)
	c2, t2, _ := feed(t, pretty.Bytes(), 1<<20)
	assert.Equal(t, t1.accepted, t2.accepted)
	assert.Equal(t, int64(4), t2.accepted)
	assert.Empty(t, t2.rejected)
	assert.Zero(t, t2.skipped)
	require.NoError(t, ptracetest.CompareTraces(c1.traces[0], c2.traces[0]))
	require.NoError(t, plogtest.CompareLogs(c1.logs[0], c2.logs[0]))
	require.NoError(t, pmetrictest.CompareMetrics(c1.metrics[0], c2.metrics[0]))
}

// A line the transport refuses (too long, cut short) inside a pretty-printed record: the
// record is abandoned as one partial_record (the refused line is not counted again), the
// rest of it is skipped, and the refused line still counts for the line numbers. In a block
// of only "{", the "{" is text and the refused line counts with its own reason.
func TestRejectedLineInBlock(t *testing.T) {
	core, logs := newObserver()
	c := &capture{}
	s := NewLineDecoder("f", 1<<20, c, ratelog.NewLogger(core, 1000, 1<<62))
	for _, l := range []string{"{", `    "body": "a",`, "    \"attributes\": {"} {
		_, _ = s.Line([]byte(l))
	}
	s.Reject(events.ReasonTooLong) // line 4
	for _, l := range []string{`        "b": 2`, "    },", `    "observed_timestamp": "2025-12-01T19:00:21.000050Z"`, "}", `{"body": 1`} {
		_, _ = s.Line([]byte(l))
	}
	st := s.Flush()
	assert.Equal(t, map[string]int64{ReasonPartialRecord: 1, ReasonInvalidJSON: 1}, st.Rejected, "one record, one rejection")
	assert.Zero(t, st.Accepted, "the lines after the refused one are not glued on")
	assert.Empty(t, c.logs)
	assert.Equal(t, int64(4), st.Unknown, "the rest of the abandoned record")
	require.Equal(t, 2, logs.Len())
	assert.Equal(t, ReasonPartialRecord, logs.All()[0].ContextMap()["reason"])
	assert.Equal(t, int64(1), logs.All()[0].ContextMap()["line"], "where the record began")
	assert.Equal(t, int64(9), logs.All()[1].ContextMap()["line"], "the refused line counts")

	core, logs = newObserver()
	s = NewLineDecoder("f", 1<<20, c, ratelog.NewLogger(core, 1000, 1<<62))
	_, _ = s.Line([]byte("{"))
	s.Reject(events.ReasonTooLong)
	_, _ = s.Line([]byte(`{"body": "ok", "observed_timestamp": "2025-12-01T19:00:21.000050Z"}`))
	_, _ = s.Line([]byte(`{"body": 1`))
	st = s.Flush()
	assert.Equal(t, map[string]int64{events.ReasonTooLong: 1, ReasonInvalidJSON: 1}, st.Rejected)
	assert.Equal(t, int64(1), st.Unknown, `the "{" alone`)
	assert.Equal(t, int64(1), st.Accepted)
	require.Equal(t, 2, logs.Len())
	assert.Equal(t, int64(2), logs.All()[0].ContextMap()["line"])
	assert.Equal(t, int64(4), logs.All()[1].ContextMap()["line"])
}

// A sink that takes only spans: the other records, whole, malformed or pretty-printed, are
// dropped before decoding and counted nowhere; the text around them is still counted.
func TestSinkTakesOnlySpans(t *testing.T) {
	c := &capture{only: map[Kind]bool{Span: true}}
	s := NewLineDecoder("gym.log", 1<<20, c, ratelog.NewLogger(zap.NewNop(), 1000, 1<<62))
	in := string(readSample(t)) + "{\n    \"body\": \"cut\",\nINFO: interleaved\n"
	for _, l := range strings.Split(strings.TrimSuffix(in, "\n"), "\n") {
		_, _ = s.Line([]byte(l))
	}
	st := s.Flush()
	assert.Equal(t, int64(2), st.Accepted)
	assert.Empty(t, st.Rejected, "neither the malformed metrics line nor the cut log record")
	assert.Equal(t, int64(14+1), st.Unknown)
	assert.Empty(t, c.metrics)
	assert.Empty(t, c.logs)
	require.Len(t, c.traces, 1)
	assert.Equal(t, 2, c.traces[0].SpanCount())
}

// Resources that differ only in a value's type are two resources: each span keeps its own,
// never the first one's (a series' identity). The same goes for log records, and for a
// nested value; the same resource twice still shares one ResourceSpans.
func TestResourceValueTypes(t *testing.T) {
	span := func(name, pid string) string {
		return `{"name": "` + name + `", "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x00f067aa0ba902b7", "trace_state": "[]"}, "kind": "SpanKind.INTERNAL", "parent_id": null, "start_time": "2025-12-01T19:00:12.000000Z", "end_time": "2025-12-01T19:00:13.000000Z", "status": {"status_code": "OK"}, "attributes": {}, "events": [], "links": [], "resource": {"attributes": {"service.name": "nemo-gym/x", "process.pid": ` + pid + `}, "schema_url": ""}}`
	}
	log := func(pid string) string {
		return `{"body": "b", "observed_timestamp": "2025-12-01T19:00:21.000050Z", "resource": {"attributes": {"process.pid": ` + pid + `}, "schema_url": ""}}`
	}
	in := strings.Join([]string{
		span("int", "42"), span("str", `"42"`), span("str2", `"42"`), span("list", `[42]`), span("liststr", `["42"]`),
		log("42"), log(`"42"`),
	}, "\n") + "\n"
	c, tot, _ := feed(t, []byte(in), 1<<20)
	require.Equal(t, int64(7), tot.accepted)

	rs := c.traces[0].ResourceSpans()
	require.Equal(t, 4, rs.Len(), "42, then \"42\" twice, [42], [\"42\"]")
	pid := func(r ptrace.ResourceSpans) any {
		v, _ := r.Resource().Attributes().Get("process.pid")
		return v.AsRaw()
	}
	assert.Equal(t, int64(42), pid(rs.At(0)))
	assert.Equal(t, "42", pid(rs.At(1)))
	assert.Equal(t, 2, rs.At(1).ScopeSpans().At(0).Spans().Len(), "the same resource twice shares one")
	assert.Equal(t, []any{int64(42)}, pid(rs.At(2)))
	assert.Equal(t, []any{"42"}, pid(rs.At(3)))

	rl := c.logs[0].ResourceLogs()
	require.Equal(t, 2, rl.Len())
	v, _ := rl.At(0).Resource().Attributes().Get("process.pid")
	assert.Equal(t, int64(42), v.Int())
	v, _ = rl.At(1).Resource().Attributes().Get("process.pid")
	assert.Equal(t, "42", v.Str())
}
