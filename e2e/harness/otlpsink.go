//go:build linux

package harness

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// The OTLP/HTTP backend the collector under test exports to.

// OTLPBackend is an OTLP/HTTP endpoint (an http.Handler: POST /v1/metrics, /v1/traces or
// /v1/logs, protobuf or JSON, optionally gzip) that keeps every export it receives.
type OTLPBackend struct {
	mu      sync.Mutex
	exports []pmetric.Metrics
	traces  []ptrace.Traces
	logs    []plog.Logs
	errs    []string
}

// otlpRequest is an export request of any signal.
type otlpRequest interface {
	UnmarshalProto([]byte) error
	UnmarshalJSON([]byte) error
}

func (s *OTLPBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		s.mu.Lock()
		s.errs = append(s.errs, msg)
		s.mu.Unlock()
		http.Error(w, msg, code)
	}
	// keep files the decoded request (under the lock).
	var req otlpRequest
	var keep func()
	switch r.URL.Path {
	case "/v1/metrics":
		m := pmetricotlp.NewExportRequest()
		req, keep = m, func() { s.exports = append(s.exports, m.Metrics()) }
	case "/v1/traces":
		tr := ptraceotlp.NewExportRequest()
		req, keep = tr, func() { s.traces = append(s.traces, tr.Traces()) }
	case "/v1/logs":
		l := plogotlp.NewExportRequest()
		req, keep = l, func() { s.logs = append(s.logs, l.Logs()) }
	}
	if r.Method != http.MethodPost || req == nil {
		fail(http.StatusNotFound, "unexpected %s %s", r.Method, r.URL.Path)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			fail(http.StatusBadRequest, "gzip: %v", err)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		fail(http.StatusBadRequest, "read: %v", err)
		return
	}
	ct := r.Header.Get("Content-Type")
	switch ct {
	case "application/x-protobuf":
		err = req.UnmarshalProto(data)
	case "application/json":
		err = req.UnmarshalJSON(data)
	default:
		err = fmt.Errorf("content type %q", ct)
	}
	if err != nil {
		fail(http.StatusBadRequest, "decode: %v", err)
		return
	}
	s.mu.Lock()
	keep()
	s.mu.Unlock()
	// An export response without a partial success is the same empty message for every signal.
	resp, _ := pmetricotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

// Exports returns the metrics exports received so far, in order of arrival.
func (s *OTLPBackend) Exports() []pmetric.Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]pmetric.Metrics(nil), s.exports...)
}

// Count is the number of metrics exports received so far.
func (s *OTLPBackend) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.exports)
}

// Errors are the requests refused so far, and why.
func (s *OTLPBackend) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}

// Spans returns the spans received so far by name (the last one of a name).
func (s *OTLPBackend) Spans() map[string]ptrace.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]ptrace.Span{}
	for _, td := range s.traces {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					out[sp.Name()] = sp
				}
			}
		}
	}
	return out
}

// SpanCount is the number of spans received so far.
func (s *OTLPBackend) SpanCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, td := range s.traces {
		n += td.SpanCount()
	}
	return n
}

// LogEvents counts the log records received so far by event name ("" for records with none).
func (s *OTLPBackend) LogEvents() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, ld := range s.logs {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					out[lr.EventName()]++
				}
			}
		}
	}
	return out
}

// LogRecords is the number of log records received so far.
func (s *OTLPBackend) LogRecords() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ld := range s.logs {
		n += ld.LogRecordCount()
	}
	return n
}

// OTLPSink is an OTLPBackend behind a loopback listener that a test can take down in two ways:
// answer 503 (failing), or close the listener (down) and open it again on the same port.
type OTLPSink struct {
	inner   *OTLPBackend
	t       *testing.T
	addr    string // 127.0.0.1:PORT, kept across down/up
	Failing atomic.Bool
	Refused atomic.Int64 // requests answered 503

	mu  sync.Mutex
	srv *http.Server
}

// NewOTLPSink starts a sink on a free loopback port; t.Cleanup closes it.
func NewOTLPSink(t *testing.T) *OTLPSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &OTLPSink{inner: &OTLPBackend{}, t: t, addr: ln.Addr().String()}
	s.serve(ln)
	t.Cleanup(s.Down)
	return s
}

// URL is the exporter's endpoint (the otlp_http exporter appends /v1/metrics).
func (s *OTLPSink) URL() string { return "http://" + s.addr }

func (s *OTLPSink) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

func (s *OTLPSink) handle(w http.ResponseWriter, r *http.Request) {
	if s.Failing.Load() {
		_, _ = io.Copy(io.Discard, r.Body)
		s.Refused.Add(1)
		http.Error(w, "the sink is failing on purpose", http.StatusServiceUnavailable)
		return
	}
	s.inner.ServeHTTP(w, r)
}

// Down closes the listener and every connection: the exporter gets "connection refused".
func (s *OTLPSink) Down() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Up listens on the same port again.
func (s *OTLPSink) Up() {
	s.t.Helper()
	var ln net.Listener
	err := Eventually(10*time.Second, 50*time.Millisecond, func() error {
		var err error
		ln, err = net.Listen("tcp", s.addr)
		return err
	})
	require.NoError(s.t, err, "listening on %s again", s.addr)
	s.serve(ln)
}

// Exports returns the metrics exports received so far, in order of arrival.
func (s *OTLPSink) Exports() []pmetric.Metrics { return s.inner.Exports() }

// Count is the number of metrics exports received so far.
func (s *OTLPSink) Count() int { return s.inner.Count() }

// Errors are the requests refused so far (besides the failing on purpose), and why.
func (s *OTLPSink) Errors() []string { return s.inner.Errors() }

// WaitMore waits until the sink has received n exports more than it had when called (that many
// collections more, with the sending queue off).
func (s *OTLPSink) WaitMore(t *testing.T, n int) {
	t.Helper()
	want := s.Count() + n
	require.NoError(t, Eventually(10*time.Second, 50*time.Millisecond, func() error {
		if s.Count() < want {
			return ErrNotYet
		}
		return nil
	}), "%d exports more", n)
}
