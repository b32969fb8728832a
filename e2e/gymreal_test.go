//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// NeMo Gym's own telemetry code through the real binary: testdata/gym-real/otlp holds the OTLP
// requests Gym's modules sent with the real OpenTelemetry Python SDK (testdata/gym-real/README.md
// says what ran), replayed in order of capture to the default configuration's otlp receiver.

// gymRealBody is one captured OTLP/HTTP request: its body as sent (the SDK's gzip) and decoded.
type gymRealBody struct {
	name    string // NNN-<process>-<signal>.pb.gz
	signal  string // metrics or traces
	raw     []byte
	metrics pmetric.Metrics
	traces  ptrace.Traces
}

func loadGymReal(t *testing.T) []gymRealBody {
	t.Helper()
	dir := filepath.Join(harness.Root, "testdata", "gym-real", "otlp")
	names, err := filepath.Glob(filepath.Join(dir, "*.pb.gz"))
	require.NoError(t, err)
	require.NotEmpty(t, names, "no capture in %s", dir)
	sort.Strings(names)
	var out []gymRealBody
	for _, path := range names {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		require.NoError(t, err, path)
		data, err := io.ReadAll(zr)
		require.NoError(t, err, path)
		b := gymRealBody{name: filepath.Base(path), raw: raw}
		switch {
		case strings.HasSuffix(b.name, "-metrics.pb.gz"):
			b.signal = "metrics"
			req := pmetricotlp.NewExportRequest()
			require.NoError(t, req.UnmarshalProto(data), path)
			b.metrics = req.Metrics()
		case strings.HasSuffix(b.name, "-traces.pb.gz"):
			b.signal = "traces"
			req := ptraceotlp.NewExportRequest()
			require.NoError(t, req.UnmarshalProto(data), path)
			b.traces = req.Traces()
		default:
			t.Fatalf("%s: neither metrics nor traces", path)
		}
		out = append(out, b)
	}
	return out
}

// postGymReal sends a captured request as the SDK sent it: protobuf, gzip.
func postGymReal(t *testing.T, base string, b gymRealBody) {
	t.Helper()
	code, msg := harness.Post(t, http.DefaultClient, base+"/v1/"+b.signal, string(b.raw),
		map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
	require.Equal(t, http.StatusOK, code, "%s: %s", b.name, msg)
}

// captured is what the bodies of one signal hold (of reads it from a body).
func captured[T any](bodies []gymRealBody, signal string, of func(gymRealBody) T) []T {
	var out []T
	for _, b := range bodies {
		if b.signal == signal {
			out = append(out, of(b))
		}
	}
	return out
}

func capturedMetrics(bodies []gymRealBody) []pmetric.Metrics {
	return captured(bodies, "metrics", func(b gymRealBody) pmetric.Metrics { return b.metrics })
}

// seriesValue is the newest point of one series: a number, or a histogram's count and sum.
type seriesValue struct {
	v          float64
	count      uint64
	sum        float64
	histogram  bool
	attributes pcommon.Map
	resource   pcommon.Map
}

// latestSeries is, per metric name, the newest point of every series (resource, scope,
// attributes) over the exports in order: cumulative points replace the older ones, so the
// values are the series' totals (a gauge's last value).
func latestSeries(mds []pmetric.Metrics) map[string]map[string]seriesValue {
	out := map[string]map[string]seriesValue{}
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			res := formatAttrs(rm.Resource().Attributes())
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if out[m.Name()] == nil {
						out[m.Name()] = map[string]seriesValue{}
					}
					put := func(attrs pcommon.Map, v seriesValue) {
						v.attributes, v.resource = attrs, rm.Resource().Attributes()
						out[m.Name()][res+" "+sm.Scope().Name()+" "+formatAttrs(attrs)] = v
					}
					for _, dp := range numberPoints(m).All() {
						put(dp.Attributes(), seriesValue{v: numberOf(dp)})
					}
					for _, dp := range histogramPoints(m).All() {
						put(dp.Attributes(), seriesValue{count: dp.Count(), sum: dp.Sum(), histogram: true})
					}
				}
			}
		}
	}
	return out
}

// metricTotal sums a metric's series: values, or histogram counts and sums.
func metricTotal(series map[string]seriesValue) (v float64, count uint64, sum float64) {
	for _, s := range series {
		v += s.v
		count += s.count
		sum += s.sum
	}
	return v, count, sum
}

// sameTotals: equal counts, and values and sums equal but for the rounding of adding floats in
// another order.
func sameTotals(a, b map[string]seriesValue) bool {
	av, ac, as := metricTotal(a)
	bv, bc, bs := metricTotal(b)
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y)) }
	return ac == bc && near(av, bv) && near(as, bs)
}

// gymRealOutput adds an otlp_http exporter (the sink) to the default configuration's metrics
// pipeline and puts the traces file where the test reads it.
const gymRealOutput = `
exporters:
  otlp_http/sink:
    endpoint: %s
    encoding: proto
    retry_on_failure:
      enabled: false
    sending_queue:
      enabled: false
  file/traces:
    path: %s
service:
  pipelines:
    metrics:
      exporters: [prometheus, otlp_http/sink]
`

// TestGymReal: the capture of NeMo Gym's own telemetry code, replayed in order to the real
// binary on its default configuration. Every metric and span reaches the output with every
// total it had (cumulative series: the newest point of each); the two Uvicorn workers of
// math_with_judge (same service.name and service.instance.id, different process.pid) stay two
// series at the Prometheus endpoint; the observability branch's rollout outcomes success and
// failure read as scored and failed; token capture's `other` points (Gym's own overflow past
// 512 attribute sets) are kept. TestGymRealSchema checks each instrument's schema rule.
func TestGymReal(t *testing.T) {
	t.Parallel()
	bodies := loadGymReal(t)
	sink := harness.NewOTLPSink(t)
	tracesPath := filepath.Join(t.TempDir(), "otel-traces.jsonl")
	col, ports := harness.StartDefaultCollector(t, fmt.Sprintf(gymRealOutput, sink.URL(), tracesPath))
	base := fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP)
	for _, b := range bodies {
		postGymReal(t, base, b)
	}

	// Every metric, with every total.
	want := latestSeries(capturedMetrics(bodies))
	var got map[string]map[string]seriesValue
	err := harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		got = latestSeries(sink.Exports())
		for name, series := range want {
			if got[name] == nil || !sameTotals(series, got[name]) {
				return harness.ErrNotYet
			}
		}
		return nil
	})
	if err != nil {
		for _, name := range sortedKeys(want) {
			if assert.Contains(t, got, name, "%s did not reach the output", name) && !sameTotals(want[name], got[name]) {
				wv, wc, ws := metricTotal(want[name])
				gv, gc, gs := metricTotal(got[name])
				t.Errorf("%s: total (value, histogram count, histogram sum) %v, captured %v", name, []any{gv, gc, gs}, []any{wv, wc, ws})
			}
		}
	}
	t.Logf("%d metrics of NeMo Gym's code, %d series, reached the output", len(want), countSeries(want))

	// The two workers of math_with_judge: two series of gym.verify.duration_ms at the
	// Prometheus endpoint, which together count every verification.
	_, verifies, _ := metricTotal(want["gym.verify.duration_ms"])
	require.NotZero(t, verifies)
	promURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Prometheus)
	var lines []string
	err = harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		text, err := harness.HTTPGet(promURL)
		if err != nil {
			return err
		}
		lines = promLines(text, "gym_verify_duration_ms_count", `job="nemo-gym/math_with_judge"`)
		if harness.TextValue(text, "gym_verify_duration_ms_count", "job", "nemo-gym/math_with_judge") != float64(verifies) {
			return harness.ErrNotYet
		}
		return nil
	})
	assert.Len(t, lines, 2, "the two workers of math_with_judge are two series at the Prometheus endpoint: %q", lines)
	assert.NoError(t, err, "gym_verify_duration_ms_count of math_with_judge counts all %d verifications: %q", verifies, lines)

	// success/failure (the observability branch) read as scored/failed.
	outcomes := func(series map[string]seriesValue) map[string]float64 {
		out := map[string]float64{}
		for _, s := range series {
			if service("nemo-gym/obs_agent")(s.resource) {
				v, _ := s.attributes.Get("nemo.gym.rollout.outcome")
				out[v.AsString()] += s.v
			}
		}
		return out
	}
	sent := outcomes(want["gym.rollout.completed_total"])
	require.Equal(t, []string{"failure", "success"}, sortedKeys(sent), "the capture's old outcomes")
	assert.Equal(t, map[string]float64{"scored": sent["success"], "failed": sent["failure"]},
		outcomes(got["gym.rollout.completed_total"]), "success/failure read as scored/failed")

	// Token capture's own overflow: its `other` points are kept, with their counts.
	other := func(series map[string]seriesValue) (n uint64) {
		for _, s := range series {
			if v, ok := s.attributes.Get("nemo.gym.token_capture.operation"); ok && v.AsString() == "other" {
				n += s.count
			}
		}
		return n
	}
	sentOther := other(want["gym.token_capture.operation.duration_ms"])
	require.NotZero(t, sentOther, "the capture has Gym's `other` points")
	assert.Equal(t, sentOther, other(got["gym.token_capture.operation.duration_ms"]), "`other` points kept")

	// Every span reaches the traces file.
	wantSpans := spanNames(capturedTraces(bodies))
	var gotSpans map[string]int
	err = harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		td, err := readTracesFile(tracesPath)
		if err != nil {
			return err
		}
		if gotSpans = spanNames(td); !assert.ObjectsAreEqual(wantSpans, gotSpans) {
			return harness.ErrNotYet
		}
		return nil
	})
	assert.NoError(t, err, "spans: want %v, got %v", wantSpans, gotSpans)

	assert.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))
}

func countSeries(m map[string]map[string]seriesValue) (n int) {
	for _, s := range m {
		n += len(s)
	}
	return n
}

// promLines returns the sample lines of metric in a Prometheus text that contain every one of
// the label pairs (written as in the text: job="x").
func promLines(text, metric string, pairs ...string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") {
			continue
		}
		ok := true
		for _, p := range pairs {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

func capturedTraces(bodies []gymRealBody) []ptrace.Traces {
	return captured(bodies, "traces", func(b gymRealBody) ptrace.Traces { return b.traces })
}

// spanNames counts spans by service.name and span name.
func spanNames(tds []ptrace.Traces) map[string]int {
	out := map[string]int{}
	for _, td := range tds {
		for _, rs := range td.ResourceSpans().All() {
			svc, _ := rs.Resource().Attributes().Get("service.name")
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					out[svc.AsString()+" "+sp.Name()]++
				}
			}
		}
	}
	return out
}

// readTracesFile reads the file exporter's OTLP JSON lines.
func readTracesFile(path string) ([]ptrace.Traces, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ptrace.Traces
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	var u ptrace.JSONUnmarshaler
	for sc.Scan() {
		td, err := u.UnmarshalTraces(sc.Bytes())
		if err != nil {
			return nil, err
		}
		out = append(out, td)
	}
	return out, sc.Err()
}
