//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Helpers of the transport, process-stats, gymattrs and reliability
// tests: a controllable OTLP sink, configurations from templates, line generators, and
// readers of the exports a sink received.

// ctlSink is an otlpSink behind a loopback listener that a test can take down in two ways:
// answer 503 (failing), or close the listener (down) and open it again on the same port.
type ctlSink struct {
	inner   *otlpSink
	t       *testing.T
	addr    string // 127.0.0.1:PORT, kept across down/up
	failing atomic.Bool
	refused atomic.Int64 // requests answered 503

	mu  sync.Mutex
	srv *http.Server
}

func newCtlSink(t *testing.T) *ctlSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &ctlSink{inner: &otlpSink{}, t: t, addr: ln.Addr().String()}
	s.serve(ln)
	t.Cleanup(s.down)
	return s
}

// URL is the exporter's endpoint (the otlp_http exporter appends /v1/metrics).
func (s *ctlSink) URL() string { return "http://" + s.addr }

func (s *ctlSink) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

func (s *ctlSink) handle(w http.ResponseWriter, r *http.Request) {
	if s.failing.Load() {
		_, _ = io.Copy(io.Discard, r.Body)
		s.refused.Add(1)
		http.Error(w, "the sink is failing on purpose", http.StatusServiceUnavailable)
		return
	}
	s.inner.ServeHTTP(w, r)
}

// down closes the listener and every connection: the exporter gets "connection refused".
func (s *ctlSink) down() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// up listens on the same port again.
func (s *ctlSink) up() {
	s.t.Helper()
	var ln net.Listener
	err := eventually(10*time.Second, 50*time.Millisecond, func() error {
		var err error
		ln, err = net.Listen("tcp", s.addr)
		return err
	})
	require.NoError(s.t, err, "listening on %s again", s.addr)
	s.serve(ln)
}

// exports returns the exports received so far, in order of arrival.
func (s *ctlSink) exports() []pmetric.Metrics {
	s.inner.mu.Lock()
	defer s.inner.mu.Unlock()
	return append([]pmetric.Metrics(nil), s.inner.exports...)
}

func (s *ctlSink) count() int {
	s.inner.mu.Lock()
	defer s.inner.mu.Unlock()
	return len(s.inner.exports)
}

func (s *ctlSink) errors() []string {
	s.inner.mu.Lock()
	defer s.inner.mu.Unlock()
	return append([]string(nil), s.inner.errs...)
}

// render fills a text/template configuration.
func render(t *testing.T, tmpl string, data any) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, template.Must(template.New("config").Option("missingkey=error").Parse(tmpl)).Execute(&b, data))
	return b.String()
}

// serviceTelemetry is the service::telemetry block of every test configuration: the
// collector's own metrics on the test's free port (the library default, 8888, would collide
// between tests running in parallel).
// sinkExporterAndService is the exporters block of the configs that export to the test's OTLP
// sink, in collection order (no queue, no retry), and the start of their service block.
const sinkExporterAndService = `exporters:
  otlp_http:
    endpoint: {{.Sink}}
    encoding: proto
    retry_on_failure:
      enabled: false
    sending_queue:
      enabled: false
service:
  extensions: [health_check]
` + serviceTelemetry

const serviceTelemetry = `
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: {{.P.Telemetry}}`

// tmplData is what the configuration templates see: the collector's ports as .P and anything
// else a test adds.
type tmplData struct {
	P    collectorPorts
	Sink string
	Dir  string
	X    map[string]any
}

// lines returns n NDJSON lines of `rollout.completed` (outcome omitted: one count of
// gym.rollout.completed_total each) after a resource line naming service.name=service, each
// with a distinct unknown field (ignored by the receiver), so that no two files ever share
// their first bytes. With resource == false the resource line is left out.
func lines(service string, from, n int, resource bool) string {
	var b strings.Builder
	if resource {
		fmt.Fprintf(&b, `{"event":"resource","attributes":{"service.name":%q}}`+"\n", service)
	}
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, `{"event":"rollout.completed","outcome":"omitted","dispatch_name":"d%d","seq":"%s-%d"}`+"\n", i%3, service, i)
	}
	return b.String()
}

// completed sums gym.rollout.completed_total over the resources of md that match.
func completed(md pmetric.Metrics, match func(pcommon.Map) bool) (float64, bool) {
	return sumOf(md, "gym.rollout.completed_total", match)
}

// sumOf sums every point of the named Sum or Gauge metric (a histogram: its counts) over the
// resources of md that match; found reports whether any point was there.
func sumOf(md pmetric.Metrics, name string, match func(pcommon.Map) bool) (total float64, found bool) {
	for _, rm := range md.ResourceMetrics().All() {
		if match != nil && !match(rm.Resource().Attributes()) {
			continue
		}
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != name {
					continue
				}
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				case pmetric.MetricTypeHistogram:
					for _, dp := range m.Histogram().DataPoints().All() {
						total += float64(dp.Count())
						found = true
					}
					continue
				default:
					continue
				}
				for _, dp := range dps.All() {
					found = true
					total += numberOf(dp)
				}
			}
		}
	}
	return total, found
}

func numberOf(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

// service matches resources whose service.name is name.
func service(name string) func(pcommon.Map) bool {
	return func(m pcommon.Map) bool {
		v, ok := m.Get("service.name")
		return ok && v.Str() == name
	}
}

// attrIs matches resources with the attribute key equal to the string value.
func attrIs(key, value string) func(pcommon.Map) bool {
	return func(m pcommon.Map) bool {
		v, ok := m.Get(key)
		return ok && v.AsString() == value
	}
}

// waitCompleted waits until the newest export that holds gym.rollout.completed_total for the
// matching resources sums to want, and fails with the last value seen otherwise.
func waitCompleted(t *testing.T, sink *ctlSink, what string, match func(pcommon.Map) bool, want float64) {
	t.Helper()
	var got float64
	err := eventually(30*time.Second, 100*time.Millisecond, func() error {
		got = latestCompleted(sink.exports(), match)
		if got != want {
			return errNotYet
		}
		return nil
	})
	require.NoError(t, err, "%s: gym.rollout.completed_total is %v, want %v", what, got, want)
}

// latestCompleted is gym.rollout.completed_total of the matching resources in the last export
// that has it (-1 when none has).
func latestCompleted(exports []pmetric.Metrics, match func(pcommon.Map) bool) float64 {
	for i := len(exports) - 1; i >= 0; i-- {
		if v, ok := completed(exports[i], match); ok {
			return v
		}
	}
	return -1
}

// sendStream writes data on a new connection to a stream endpoint and closes it.
func sendStream(t *testing.T, network, addr, data string) {
	t.Helper()
	c, err := net.DialTimeout(network, addr, 10*time.Second)
	require.NoError(t, err, "dial %s %s", network, addr)
	defer c.Close()
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(30*time.Second)))
	_, err = io.WriteString(c, data)
	require.NoError(t, err)
}

// dialUnix connects to a Unix stream socket.
func dialUnix(path string) (net.Conn, error) {
	return net.DialTimeout("unix", path, 10*time.Second)
}

// appendFile appends data to a file, creating it.
func appendFile(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// vmRSS reads a process's resident set size in bytes from /proc/<pid>/status.
func vmRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) != 2 || fields[1] != "kB" {
				return 0, fmt.Errorf("VmRSS line %q", sc.Text())
			}
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// post sends body to url with the given headers (Content-Type application/x-ndjson unless
// they name one) and returns the status and answer.
func post(t *testing.T, client *http.Client, url, body string, header map[string]string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-ndjson")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

// telemetryValue reads one of the collector's own metrics (Prometheus text) summed over its
// label sets that contain every label=value pair of labels.
func telemetryValue(t *testing.T, p collectorPorts, metric string, labels ...string) float64 {
	t.Helper()
	return metricsValue(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", p.Telemetry), metric, labels...)
}

// metricsValue is telemetryValue of any Prometheus text endpoint (Prometheus' own /metrics).
func metricsValue(t *testing.T, url, metric string, labels ...string) float64 {
	t.Helper()
	text, err := httpGet(url)
	require.NoError(t, err)
	return textValue(text, metric, labels...)
}

// textValue is metricsValue of a Prometheus text already read (several values of one scrape).
func textValue(text, metric string, labels ...string) float64 {
	var total float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		ls, value := parseSample(line[len(metric):])
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if ls[labels[i]] != labels[i+1] {
				ok = false
			}
		}
		if v, err := strconv.ParseFloat(value, 64); ok && err == nil {
			total += v
		}
	}
	return total
}
