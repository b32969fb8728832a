// Package transport carries event lines from the network and files to protocol streams.
package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/protocol"
)

// EventsPath is the path of the HTTP transport.
const EventsPath = "/v1/events"

// maxErrors is how many line errors an answer lists.
const maxErrors = 10

// Answer is the JSON body of an HTTP answer (docs/receiver.md).
type Answer struct {
	Accepted int64       `json:"accepted"`
	Rejected int64       `json:"rejected"`
	Unknown  int64       `json:"unknown"`
	Errors   []LineError `json:"errors"`
}

// LineError is one rejected line of a body, numbered from 1 over every line.
type LineError struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// Recorder receives the counts of every body, for self-telemetry.
type Recorder func(*protocol.StreamStats)

// HTTPHandler serves POST /v1/events. Bodies are read whole (bounded by the server's body
// limit, enforced by confighttp before and after decompression) before any line is applied,
// so a body over the limit changes nothing. Concurrent bodies are bounded: past the bound the
// answer is 503 with Retry-After and the sender tries again.
type HTTPHandler struct {
	agg          *protocol.Aggregator
	maxLineBytes int
	record       Recorder
	slots        chan struct{}
	wait         time.Duration
	streams      sync.Pool
	bufs         sync.Pool
}

// HTTPOptions bound the handler's work.
type HTTPOptions struct {
	MaxLineBytes int
	// MaxConcurrent bodies read and applied at once; more wait up to Wait, then get 503.
	MaxConcurrent int
	Wait          time.Duration
}

// NewHTTPHandler returns the handler of the HTTP transport.
func NewHTTPHandler(agg *protocol.Aggregator, opts HTTPOptions, record Recorder) *HTTPHandler {
	h := &HTTPHandler{
		agg:          agg,
		maxLineBytes: opts.MaxLineBytes,
		record:       record,
		slots:        make(chan struct{}, opts.MaxConcurrent),
		wait:         opts.Wait,
	}
	def := protocol.DefaultResource("http", "")
	h.streams.New = func() any { return agg.NewStream(opts.MaxLineBytes, def) }
	h.bufs.New = func() any { return new(bytes.Buffer) }
	return h
}

// RetryAfterSeconds is the Retry-After of a 503.
const RetryAfterSeconds = 1

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != EventsPath {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "only POST is allowed on "+EventsPath)
		return
	}
	if !h.acquire(r) {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		writeError(w, http.StatusServiceUnavailable, "the receiver is busy; retry later")
		return
	}
	defer func() { <-h.slots }()

	buf := h.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer h.putBuf(buf)
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "body over the limit of "+strconv.FormatInt(tooBig.Limit, 10)+" bytes; nothing was applied")
			return
		}
		writeError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}

	st := h.streams.Get().(*protocol.Stream)
	st.Reset()
	ans := Answer{Errors: []LineError{}}
	body := buf.Bytes()
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		out, err := st.Line(line)
		if out == protocol.Rejected {
			ans.Rejected++
			if len(ans.Errors) < maxErrors {
				ans.Errors = append(ans.Errors, LineError{Line: n, Error: err.Error()})
			}
		}
	}
	ans.Accepted, ans.Unknown = st.Stats.Accepted, st.Stats.Unknown
	if h.record != nil {
		h.record(&st.Stats)
	}
	h.streams.Put(st)

	status := http.StatusOK
	if ans.Rejected > 0 && ans.Accepted+ans.Unknown == 0 {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, &ans)
}

// maxPooledBuf keeps one huge body from pinning its buffer in the pool.
const maxPooledBuf = 1 << 20

func (h *HTTPHandler) putBuf(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuf {
		h.bufs.Put(b)
	}
}

func (h *HTTPHandler) acquire(r *http.Request) bool {
	select {
	case h.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(h.wait)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-r.Context().Done():
		return false
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(v)
	b = append(b, '\n')
	_, _ = io.Copy(w, bytes.NewReader(b))
}
