package gymconsolereceiver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/gym-telemetry/otelcol-gym/internal/sharedcomponent"
	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymconsolereceiver/internal/metadatatest"
)

// The sample through the receiver: metrics bounded by the gymattrs rules (golden), spans and
// log records as decoded, and the receiver's own counts.
func TestSampleThroughReceiver(t *testing.T) {
	dir := t.TempDir()
	copySample(t, dir)
	tt := newTelemetry(t)
	s, stop := start(t, filesConfig(filepath.Join(dir, "*.log")), metadatatest.NewSettings(tt))
	require.Eventually(t, func() bool { return s.logs.LogRecordCount() == 2 && len(s.metrics.AllMetrics()) == 2 }, 10*time.Second, 10*time.Millisecond)
	stateEntries := func() int64 {
		state, err := tt.GetMetric("otelcol_processor_gymattrs_state_entries")
		require.NoError(t, err)
		return state.Data.(metricdata.Gauge[int64]).DataPoints[0].Value
	}
	running := stateEntries()
	stop()

	assert.Equal(t, 2, s.traces.SpanCount())
	got := s.metrics.AllMetrics()
	for i, name := range []string{"gymattrs-batch1.yaml", "gymattrs-batch2.yaml"} {
		path := filepath.Join("testdata", name)
		if *update {
			require.NoError(t, golden.WriteMetricsToFile(path, got[i], golden.SkipMetricTimestampNormalization()))
		}
		want, err := golden.ReadMetrics(path)
		require.NoError(t, err)
		require.NoError(t, pmetrictest.CompareMetrics(want, got[i], pmetrictest.IgnoreMetricsOrder(),
			pmetrictest.IgnoreMetricDataPointsOrder(), pmetrictest.IgnoreMetricValues("process.cpu.utilization")), name)
	}

	// The gymattrs rules, on a Gym metric: the free-text attribute is removed, the
	// unregistered failure kind becomes "unregistered"; and the re-sent cumulative total is
	// the latest one, never added to the earlier one.
	failed := point(t, got[1], "gym.rollout.completed_total", "nemo.gym.rollout.outcome", "failed")
	_, ok := failed.Attributes().Get("failure_reason")
	assert.False(t, ok, "an attribute the instrument does not declare is removed")
	v, _ := failed.Attributes().Get("nemo.gym.failure_kind")
	assert.Equal(t, "unregistered", v.Str())
	assert.Equal(t, int64(3), failed.IntValue(), "the second batch re-sends the total: 3, not 1+3")
	assert.Equal(t, int64(1), point(t, got[0], "gym.rollout.completed_total", "nemo.gym.rollout.outcome", "failed").IntValue())
	assert.Equal(t, uint64(1764615600000000000), uint64(failed.StartTimestamp()), "the stream's start time is kept")
	// A non-Gym metric is bounded by the generic rules (unknown_metrics: bound), which leave a
	// few series as sent, the exponential histogram too.
	assert.Equal(t, pmetric.MetricTypeExponentialHistogram, find(t, got[1], "http.server.request.duration").Type())

	metadatatest.AssertEqualReceiverGymConsoleRecordsAccepted(t, tt, []metricdata.DataPoint[int64]{{Value: 6}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualReceiverGymConsoleLinesSkipped(t, tt, []metricdata.DataPoint[int64]{{Value: 14}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualReceiverGymConsoleRecordsRejected(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "invalid_json"))},
	}, metricdatatest.IgnoreTimestamp())

	// The gymattrs rules report through the receiver's telemetry settings, under the
	// processor's metric names (declared once, in internal/bound). Per batch: failure_reason and the scored completion's exemplar attribute
	// rollout.id removed, the failure kind normalised. The state after batch 2: eight series
	// (two completions, in-flight requests, tasks, two event-loop lags, and the two non-Gym
	// metrics) and five cumulative streams (the completions, in-flight, the lags; the gauges
	// and the exponential histogram keep none).
	assert.Equal(t, int64(2*2), counter(tt, "otelcol_processor_gymattrs_attributes_removed"))
	assert.Equal(t, int64(2*1), counter(tt, "otelcol_processor_gymattrs_values_normalised"))
	assert.Equal(t, int64(8+5), running)
	assert.Zero(t, stateEntries(), "the receiver's state goes with it")
}

// A log file that grows while it is followed: each new batch is exported once, with the
// totals it carries.
func TestGrowingFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "gym.log")
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	s, stop := start(t, filesConfig(p), receiver.Settings{ID: component.MustNewID("gym_console"), TelemetrySettings: componenttest.NewNopTelemetrySettings()})
	defer stop()
	lines := sampleLines(t)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	batches := 0
	for _, l := range lines {
		if len(l) > 20 && string(l[:20]) == `{"resource_metrics":` && len(l) > 1000 {
			batches++
		}
		// Write each line in two pieces: a reader that sees half a line waits for the rest.
		half := len(l) / 2
		_, err := f.Write(l[:half])
		require.NoError(t, err)
		time.Sleep(5 * time.Millisecond)
		_, err = f.Write(append(l[half:], '\n'))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return len(s.metrics.AllMetrics()) == batches && s.logs.LogRecordCount() == 2 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	assert.Len(t, s.metrics.AllMetrics(), 2, "each batch once")
	assert.Equal(t, 2, s.traces.SpanCount())
}

// stdout piped into the stream source.
func TestStream(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Stream = configoptional.Some(StreamConfig{Transport: "tcp", Endpoint: "127.0.0.1:0"})
	s, stop := start(t, cfg, receiver.Settings{ID: component.MustNewID("gym_console"), TelemetrySettings: componenttest.NewNopTelemetrySettings()})
	r := registered(t, cfg)
	require.NotNil(t, r)
	c, err := net.Dial("tcp", r.stream.Addr().String())
	require.NoError(t, err)
	b, err := os.ReadFile(sample)
	require.NoError(t, err)
	_, err = c.Write(b)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool {
		return s.logs.LogRecordCount() == 2 && len(s.metrics.AllMetrics()) == 2 && s.traces.SpanCount() == 2
	}, 10*time.Second, 10*time.Millisecond)
	stop()
	assert.Nil(t, registered(t, cfg), "a shut-down receiver leaves the shared map")
}

// With storage, a restarted collector resumes each file after the last line it read: no
// record is passed on twice, none is lost.
func TestStorageResumes(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "gym.log")
	lines := sampleLines(t)
	cut := 0
	for i, l := range lines {
		if strings.HasPrefix(string(l), "Traceback") {
			cut = i
		}
	}
	write := func(ls [][]byte) {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		require.NoError(t, err)
		for _, l := range ls {
			_, err = f.Write(append(append([]byte{}, l...), '\n'))
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
	}
	write(lines[:cut])
	storeID := component.MustNewID("file_storage")
	host := storagetest.Host{storeID: storagetest.NewMem(nil)}
	cfg := filesConfig(p)
	cfg.Files.Get().Storage = &storeID
	set := receiver.Settings{ID: component.MustNewID("gym_console"), TelemetrySettings: componenttest.NewNopTelemetrySettings()}

	s, stop := startOn(t, cfg, set, host)
	require.Eventually(t, func() bool { return s.traces.SpanCount() == 2 && len(s.metrics.AllMetrics()) == 1 }, 10*time.Second, 10*time.Millisecond)
	stop()

	write(lines[cut:])
	cfg2 := filesConfig(p)
	cfg2.Files.Get().Storage = &storeID
	s, stop = startOn(t, cfg2, set, host)
	require.Eventually(t, func() bool { return s.logs.LogRecordCount() == 2 && len(s.metrics.AllMetrics()) == 1 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	stop()
	assert.Zero(t, s.traces.SpanCount(), "the spans read before the restart are not read again")
	assert.Len(t, s.metrics.AllMetrics(), 1, "only the batch written after")
	assert.Equal(t, int64(3), point(t, s.metrics.AllMetrics()[0], "gym.rollout.completed_total", "nemo.gym.rollout.outcome", "failed").IntValue())
}

// The real SDK's stdout (testdata/console/real_sdk.py) through the receiver: five exports of one
// process's cumulative state; the last holds the counter's total once, bounded.
func TestRealSDKThroughReceiver(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../testdata/console/real-sdk-stdout.log")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gym.log"), b, 0o600))
	s, stop := start(t, filesConfig(filepath.Join(dir, "*.log")), receiver.Settings{ID: component.MustNewID("gym_console"), TelemetrySettings: componenttest.NewNopTelemetrySettings()})
	require.Eventually(t, func() bool { return len(s.metrics.AllMetrics()) == 5 && s.logs.LogRecordCount() == 1 }, 10*time.Second, 10*time.Millisecond)
	stop()
	assert.Equal(t, 2, s.traces.SpanCount())
	all := s.metrics.AllMetrics()
	first := point(t, all[0], "gym.rollout.completed_total", "nemo.gym.rollout.outcome", "failed")
	last := point(t, all[4], "gym.rollout.completed_total", "nemo.gym.rollout.outcome", "failed")
	assert.Equal(t, int64(1), first.IntValue())
	assert.Equal(t, int64(3), last.IntValue(), "1 then 2 more: the total, never the sum of the exports")
	assert.Equal(t, first.StartTimestamp(), last.StartTimestamp())
	_, ok := last.Attributes().Get("failure_reason")
	assert.False(t, ok)
}

// A metrics line of many series: the gymattrs cardinality limit keeps cardinality_limit-1
// series of an instrument and folds the rest into its overflow series, with the totals kept.
func TestCardinalityLimit(t *testing.T) {
	var pts []string
	for i := range 6 {
		pts = append(pts, fmt.Sprintf(`{"attributes": {"nemo.gym.rollout.outcome": "scored", "nemo.gym.rollout.dispatch.name": "d%d"}, "start_time_unix_nano": 1764615600000000000, "time_unix_nano": 1764615610000000000, "value": %d, "exemplars": []}`, i, i+1))
	}
	line := `{"resource_metrics": [{"resource": {"attributes": {"service.name": "nemo-gym/x", "service.instance.id": "x-0"}, "schema_url": ""}, "scope_metrics": [{"scope": {"name": "nemo.lens", "version": "0.3.0", "schema_url": "", "attributes": null}, "metrics": [{"name": "gym.rollout.completed_total", "description": "", "unit": "1", "data": {"data_points": [` +
		strings.Join(pts, ", ") + `], "aggregation_temporality": 2, "is_monotonic": true}}], "schema_url": ""}], "schema_url": ""}]}` + "\n"
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gym.log"), []byte(line), 0o600))
	cfg := filesConfig(filepath.Join(dir, "*.log"))
	cfg.Gymattrs.CardinalityLimit = 3
	s, stop := start(t, cfg, receiver.Settings{ID: component.MustNewID("gym_console"), TelemetrySettings: componenttest.NewNopTelemetrySettings()})
	require.Eventually(t, func() bool { return len(s.metrics.AllMetrics()) == 1 }, 10*time.Second, 10*time.Millisecond)
	stop()
	dps := find(t, s.metrics.AllMetrics()[0], "gym.rollout.completed_total").Sum().DataPoints()
	require.Equal(t, 3, dps.Len(), "two admitted series and the overflow series")
	var total, overflow int64
	for i := 0; i < dps.Len(); i++ {
		total += dps.At(i).IntValue()
		if v, ok := dps.At(i).Attributes().Get("otel.metric.overflow"); ok && v.Bool() {
			overflow = dps.At(i).IntValue()
		}
	}
	assert.Equal(t, int64(1+2+3+4+5+6), total, "no count lost")
	assert.Equal(t, int64(3+4+5+6), overflow)
}

// A line longer than max_line_bytes is rejected (too_long) without being buffered; the lines
// after it are read.
func TestTooLongLine(t *testing.T) {
	dir := t.TempDir()
	long := `{"body": "` + strings.Repeat("x", 5000) + `", "observed_timestamp": "2025-12-01T19:00:21.000050Z"}`
	ok := `{"body": "after", "observed_timestamp": "2025-12-01T19:00:21.000050Z"}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gym.log"), []byte(long+"\n"+ok+"\n"), 0o600))
	cfg := filesConfig(filepath.Join(dir, "*.log"))
	cfg.MaxLineBytes = 4096
	tt := newTelemetry(t)
	s, stop := start(t, cfg, metadatatest.NewSettings(tt))
	require.Eventually(t, func() bool { return s.logs.LogRecordCount() == 1 }, 10*time.Second, 10*time.Millisecond)
	stop()
	assert.Equal(t, "after", s.logs.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Str())
	metadatatest.AssertEqualReceiverGymConsoleRecordsRejected(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "too_long"))},
	}, metricdatatest.IgnoreTimestamp())
}

// Rotation by rename: the old file is read to its end, the new one from its start; no span
// twice, none lost.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "gym.log")
	span := func(name, id string) string {
		return `{"name": "` + name + `", "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x` + id + `", "trace_state": "[]"}, "kind": "SpanKind.INTERNAL", "parent_id": null, "start_time": "2025-12-01T19:00:12.000000Z", "end_time": "2025-12-01T19:00:13.000000Z", "status": {"status_code": "OK"}, "attributes": {}, "events": [], "links": [], "resource": {"attributes": {"service.name": "nemo-gym/x"}, "schema_url": ""}}` + "\n"
	}
	require.NoError(t, os.WriteFile(p, []byte(span("a", "00000000000000a1")), 0o600))
	s, stop := start(t, filesConfig(filepath.Join(dir, "gym.log*")), receiver.Settings{ID: component.MustNewID("gym_console"), TelemetrySettings: componenttest.NewNopTelemetrySettings()})
	defer stop()
	require.Eventually(t, func() bool { return s.traces.SpanCount() == 1 }, 10*time.Second, 10*time.Millisecond)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	require.NoError(t, os.Rename(p, p+".1"))
	_, err = f.WriteString(span("b", "00000000000000b2")) // the writer still has the old file open
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.WriteFile(p, []byte(span("c", "00000000000000c3")), 0o600))
	require.Eventually(t, func() bool { return s.traces.SpanCount() == 3 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	names := map[string]int{}
	for _, td := range s.traces.AllTraces() {
		sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for i := 0; i < sp.Len(); i++ {
			names[sp.At(i).Name()]++
		}
	}
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, names)
}

// A pipeline that refuses data: the spans are counted as refused by the receiver's standard
// telemetry, and the other signals go on.
func TestRefusedCounted(t *testing.T) {
	dir := t.TempDir()
	copySample(t, dir)
	tt := newTelemetry(t)
	set := metadatatest.NewSettings(tt)
	cfg := filesConfig(filepath.Join(dir, "*.log"))
	f := NewFactory()
	ctx := context.Background()
	logs := new(consumertest.LogsSink)
	tr, err := f.CreateTraces(ctx, set, cfg, consumertest.NewErr(errors.New("queue is full")))
	require.NoError(t, err)
	l, err := f.CreateLogs(ctx, set, cfg, logs)
	require.NoError(t, err)
	require.NoError(t, tr.Start(ctx, componenttest.NewNopHost()))
	require.NoError(t, l.Start(ctx, componenttest.NewNopHost()))
	require.Eventually(t, func() bool { return logs.LogRecordCount() == 2 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, tr.Shutdown(ctx))
	require.NoError(t, l.Shutdown(ctx))
	m, err := tt.GetMetric("otelcol_receiver_refused_spans")
	require.NoError(t, err)
	sum := m.Data.(metricdata.Sum[int64])
	var refused int64
	for _, dp := range sum.DataPoints {
		refused += dp.Value
	}
	assert.Equal(t, int64(2), refused)
}

// A pretty-printed log record with one attribute line longer than max_line_bytes, through the
// file transport's line reader: the record is rejected once as partial_record, never passed on
// without that attribute, and the rest of it is skipped.
func TestTooLongLineInPrettyRecord(t *testing.T) {
	lines := []string{
		"{",
		`    "body": "step done",`,
		`    "severity_number": 9,`,
		`    "severity_text": "INFO",`,
		`    "attributes": {`,
		`        "nemo.gym.step": 3,`,
		`        "payload": "` + strings.Repeat("x", 5000) + `",`,
		`        "code.lineno": 12`,
		`    },`,
		`    "dropped_attributes": 0,`,
		`    "timestamp": "2025-12-01T19:00:21.000050Z",`,
		`    "observed_timestamp": "2025-12-01T19:00:21.000050Z",`,
		`    "trace_id": "",`,
		`    "span_id": "",`,
		`    "trace_flags": 0,`,
		`    "resource": {`,
		`        "attributes": {`,
		`            "service.name": "nemo-gym/x"`,
		`        },`,
		`        "schema_url": ""`,
		`    },`,
		`    "event_name": ""`,
		"}",
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gym.log"), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	cfg := filesConfig(filepath.Join(dir, "*.log"))
	cfg.MaxLineBytes = 4096
	tt := newTelemetry(t)
	s, stop := start(t, cfg, metadatatest.NewSettings(tt))
	after := int64(len(lines) - 7) // the lines after the long one
	require.Eventually(t, func() bool {
		read := counter(tt, "otelcol_receiver_gym_console_lines_skipped") >= after || s.logs.LogRecordCount() > 0
		return read && counter(tt, "otelcol_receiver_gym_console_records_rejected") > 0
	}, 10*time.Second, 10*time.Millisecond)
	stop()
	assert.Zero(t, s.logs.LogRecordCount(), "no record without its attribute")
	assert.Equal(t, after, counter(tt, "otelcol_receiver_gym_console_lines_skipped"))
	metadatatest.AssertEqualReceiverGymConsoleRecordsRejected(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "partial_record"))},
	}, metricdatatest.IgnoreTimestamp())
	_, err := tt.GetMetric("otelcol_receiver_gym_console_records_accepted")
	assert.ErrorContains(t, err, "not found", "records_accepted=0")
}

// A receiver that only a traces pipeline uses: the metrics batches and log records (the
// malformed metrics line too) are dropped before they are decoded and counted nowhere; only
// the spans are accepted.
func TestOnlyTracesPipeline(t *testing.T) {
	dir := t.TempDir()
	copySample(t, dir)
	tt := newTelemetry(t)
	ctx := context.Background()
	traces := new(consumertest.TracesSink)
	tr, err := NewFactory().CreateTraces(ctx, metadatatest.NewSettings(tt), filesConfig(filepath.Join(dir, "*.log")), traces)
	require.NoError(t, err)
	require.NoError(t, tr.Start(ctx, componenttest.NewNopHost()))
	require.Eventually(t, func() bool {
		return traces.SpanCount() == 2 && counter(tt, "otelcol_receiver_gym_console_lines_skipped") == 14
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, tr.Shutdown(ctx))
	metadatatest.AssertEqualReceiverGymConsoleRecordsAccepted(t, tt, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	_, err = tt.GetMetric("otelcol_receiver_gym_console_records_rejected")
	assert.ErrorContains(t, err, "not found", "the malformed metrics line is not a rejection: metrics are not taken")
	assert.Equal(t, int64(2), counter(tt, "otelcol_receiver_accepted_spans"))
}

// A metrics pipeline whose gymattrs rules cannot be built: the receiver made for it is not
// left registered, so a later signal of the configuration gets a fresh receiver, and a
// receiver that already served another signal is kept for it, without a metrics pipeline.
func TestFailedCreateNotRegistered(t *testing.T) {
	ctx := context.Background()
	set := receiver.Settings{ID: component.MustNewID("gym_console"), TelemetrySettings: componenttest.NewNopTelemetrySettings()}
	f := NewFactory()
	isRegistered := func(cfg *Config) bool { return registered(t, cfg) != nil }

	cfg := filesConfig(filepath.Join(t.TempDir(), "*.log"))
	cfg.Gymattrs.FailureKinds = []string{""}
	m, err := f.CreateMetrics(ctx, set, cfg, new(consumertest.MetricsSink))
	require.ErrorContains(t, err, "gymattrs")
	assert.Nil(t, m)
	assert.False(t, isRegistered(cfg), "a receiver whose creation failed is not registered")
	tr, err := f.CreateTraces(ctx, set, cfg, new(consumertest.TracesSink))
	require.NoError(t, err)
	fresh := tr.(*sharedcomponent.Component[*consoleReceiver]).Unwrap()
	assert.Nil(t, fresh.metrics, "a fresh receiver, not the failed one")
	assert.Nil(t, fresh.bounder)
	assert.True(t, isRegistered(cfg))

	_, err = f.CreateMetrics(ctx, set, cfg, new(consumertest.MetricsSink))
	require.Error(t, err)
	assert.True(t, isRegistered(cfg), "the receiver of the traces pipeline stays")
	require.NoError(t, tr.Start(ctx, componenttest.NewNopHost()))
	require.NoError(t, tr.Shutdown(ctx))
	assert.False(t, isRegistered(cfg), "released at shutdown")
}

// stream.max_connections: 1. A second connection is refused and counted; the first, once it
// has sent nothing for stream.idle_timeout, is closed and counted.
func TestStreamConnectionsCounted(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Stream = configoptional.Some(StreamConfig{Transport: "tcp", Endpoint: "127.0.0.1:0", MaxConnections: 1, IdleTimeout: 2 * time.Second})
	tt := newTelemetry(t)
	_, stop := start(t, cfg, metadatatest.NewSettings(tt))
	defer stop()
	r := registered(t, cfg)
	require.NotNil(t, r)

	first, err := net.Dial("tcp", r.stream.Addr().String())
	require.NoError(t, err)
	defer first.Close()
	require.Eventually(t, func() bool { return r.stream.Open() == 1 }, 10*time.Second, 5*time.Millisecond)
	second, err := net.Dial("tcp", r.stream.Addr().String())
	require.NoError(t, err)
	defer second.Close()
	require.NoError(t, second.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = second.Read(make([]byte, 1))
	require.Error(t, err, "closed as soon as accepted")
	require.Eventually(t, func() bool { return counter(tt, "otelcol_receiver_gym_console_stream_connections_refused") == 1 }, 10*time.Second, 5*time.Millisecond)
	metadatatest.AssertEqualReceiverGymConsoleStreamConnectionsRefused(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())

	require.NoError(t, first.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = first.Read(make([]byte, 1))
	require.Error(t, err, "closed once idle")
	require.Eventually(t, func() bool { return counter(tt, "otelcol_receiver_gym_console_stream_connections_idle_closed") == 1 }, 10*time.Second, 5*time.Millisecond)
	metadatatest.AssertEqualReceiverGymConsoleStreamConnectionsIdleClosed(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
}
