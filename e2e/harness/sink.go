package harness

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"iter"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// Sink is an OTLP/HTTP metrics endpoint (POST /v1/metrics) on loopback that decodes each
// export, counts its data points, and discards it.
type Sink struct {
	URL string
	srv *http.Server

	mu      sync.Mutex
	reqs    int64
	bytes   int64
	colls   map[int64]*Collection // by collection time (the data points' timestamp)
	lastErr error
	// onExport, when set, sees every decoded export (StartSinkWith), under the sink's lock.
	onExport func(pmetric.Metrics)
}

// Collection is what the sink received of one collection: the requests whose data points
// carry the same timestamp (the receiver stamps every point of a collection with its time).
type Collection struct {
	Time         time.Time
	Requests     int
	Points       int64 // data points
	Series       map[string]int64
	WireBytes    int64 // request bodies as sent (compressed)
	FirstArrival time.Time
	LastArrival  time.Time
}

// Latency is the time from the collection to the arrival of its last request at the sink:
// building the metrics, the pipeline, marshalling, compressing and sending.
func (c Collection) Latency() time.Duration { return c.LastArrival.Sub(c.Time) }

// StartSink listens on a free loopback port.
func StartSink() (*Sink, error) { return StartSinkWith(nil) }

// StartSinkWith is StartSink with onExport called on every decoded export, one at a time.
func StartSinkWith(onExport func(pmetric.Metrics)) (*Sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Sink{URL: "http://" + ln.Addr().String(), colls: map[int64]*Collection{}, onExport: onExport}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the sink.
func (s *Sink) Close() { _ = s.srv.Close() }

func (s *Sink) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/metrics" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	wire, err := io.ReadAll(io.LimitReader(r.Body, 1<<30))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	arrival := time.Now()
	raw := wire
	switch r.Header.Get("Content-Encoding") {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(wire))
		if err == nil {
			raw, err = io.ReadAll(zr)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	default:
		http.Error(w, "unsupported encoding (configure the exporter with compression: gzip or none)", http.StatusUnsupportedMediaType)
		return
	}
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	per := map[int64]*Collection{}
	countPoints(req.Metrics(), func(ts int64, name string, n int64) {
		c := per[ts]
		if c == nil {
			c = &Collection{Time: time.Unix(0, ts), Series: map[string]int64{}}
			per[ts] = c
		}
		c.Points += n
		c.Series[name] += n
	})
	s.mu.Lock()
	if s.onExport != nil {
		s.onExport(req.Metrics())
	}
	s.reqs++
	s.bytes += int64(len(wire))
	for ts, c := range per {
		have := s.colls[ts]
		if have == nil {
			have = &Collection{Time: c.Time, Series: map[string]int64{}, FirstArrival: arrival}
			s.colls[ts] = have
		}
		have.Requests++
		have.Points += c.Points
		for k, v := range c.Series {
			have.Series[k] += v
		}
		have.WireBytes += int64(len(wire))
		have.LastArrival = arrival
	}
	// Keep the latest 64 collections.
	if len(s.colls) > 64 {
		keys := make([]int64, 0, len(s.colls))
		for k := range s.colls {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		for _, k := range keys[:len(keys)-64] {
			delete(s.colls, k)
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// countPoints calls f with each metric's data point count, by data point timestamp.
func countPoints(md pmetric.Metrics, f func(ts int64, name string, n int64)) {
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				for _, ts := range pointTimes(m) {
					f(int64(ts), m.Name(), 1)
				}
			}
		}
	}
}

// pointTimes returns the timestamps of a metric's data points.
func pointTimes(m pmetric.Metric) []pcommon.Timestamp {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return timestamps(m.Sum().DataPoints().All())
	case pmetric.MetricTypeGauge:
		return timestamps(m.Gauge().DataPoints().All())
	case pmetric.MetricTypeHistogram:
		return timestamps(m.Histogram().DataPoints().All())
	case pmetric.MetricTypeExponentialHistogram:
		return timestamps(m.ExponentialHistogram().DataPoints().All())
	case pmetric.MetricTypeSummary:
		return timestamps(m.Summary().DataPoints().All())
	}
	return nil
}

func timestamps[P interface{ Timestamp() pcommon.Timestamp }](points iter.Seq2[int, P]) []pcommon.Timestamp {
	var out []pcommon.Timestamp
	for _, p := range points {
		out = append(out, p.Timestamp())
	}
	return out
}

// Requests returns the export requests received so far and their bytes on the wire.
func (s *Sink) Requests() (int64, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs, s.bytes
}

// Collections returns the collections received, oldest first.
func (s *Sink) Collections() []Collection {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Collection, 0, len(s.colls))
	for _, c := range s.colls {
		cc := *c
		cc.Series = map[string]int64{}
		for k, v := range c.Series {
			cc.Series[k] = v
		}
		out = append(out, cc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// WaitCollection waits for a collection made after t whose last request arrived at least
// quiet ago (so that the collection is complete), and returns it.
func (s *Sink) WaitCollection(ctx context.Context, after time.Time, quiet time.Duration) (Collection, error) {
	for {
		for _, c := range s.Collections() {
			if c.Time.After(after) && time.Since(c.LastArrival) >= quiet {
				return c, nil
			}
		}
		select {
		case <-ctx.Done():
			s.mu.Lock()
			err := s.lastErr
			s.mu.Unlock()
			return Collection{}, errors.Join(ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
