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
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// The OTLP/HTTP metrics sink the collector under test exports to.

// otlpSink is an OTLP/HTTP metrics endpoint (POST /v1/metrics, protobuf or JSON, optionally
// gzip) that keeps every export it receives.
type otlpSink struct {
	mu      sync.Mutex
	exports []pmetric.Metrics
	errs    []string
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		s.mu.Lock()
		s.errs = append(s.errs, msg)
		s.mu.Unlock()
		http.Error(w, msg, code)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/metrics" {
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
	req := pmetricotlp.NewExportRequest()
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
	s.exports = append(s.exports, req.Metrics())
	s.mu.Unlock()
	resp, _ := pmetricotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

// OTLPSink is an otlpSink behind a loopback listener that a test can take down in two ways:
// answer 503 (failing), or close the listener (down) and open it again on the same port.
type OTLPSink struct {
	inner   *otlpSink
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
	s := &OTLPSink{inner: &otlpSink{}, t: t, addr: ln.Addr().String()}
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

// Exports returns the exports received so far, in order of arrival.
func (s *OTLPSink) Exports() []pmetric.Metrics {
	s.inner.mu.Lock()
	defer s.inner.mu.Unlock()
	return append([]pmetric.Metrics(nil), s.inner.exports...)
}

func (s *OTLPSink) Count() int {
	s.inner.mu.Lock()
	defer s.inner.mu.Unlock()
	return len(s.inner.exports)
}

func (s *OTLPSink) Errors() []string {
	s.inner.mu.Lock()
	defer s.inner.mu.Unlock()
	return append([]string(nil), s.inner.errs...)
}

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
