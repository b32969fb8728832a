// Package transport moves lines: from HTTP request bodies, stream connections (TCP, Unix) and
// followed files (FileTailer, on internal/follow) to the LineDecoder of each source. What a
// line means is the decoder's, which the receiver injects (NewDecoder, NewBodyDecoder): the gym
// events decoder (events.LineDecoder) for the gym receiver, gym_console's decoder for gym_console. It
// imports no decoder. The rollouts source, which reads rows rather than lines, is
// internal/rollouts' Source.
package transport

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
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

// HTTPHandler serves POST /v1/events. Bodies are read whole (bounded by the server's body
// limit, enforced by confighttp before and after decompression) before any line is applied,
// so a body over the limit changes nothing.
//
// No slot is held while a small body arrives: a sender that trickles its body cannot keep
// others out. A body is read first, up to SmallBody bytes, with nothing but its own buffer;
// a larger one then needs one of MaxConcurrent body slots to read the rest (so at most
// MaxConcurrent large buffers exist at once), and every body needs one of MaxConcurrent apply
// slots while its lines are applied. A slot not free within Wait is a 503 with Retry-After.
// Each body must arrive at MinBodyRate at least, after a grace of BodyGrace: a slower sender
// is answered 408 and its connection closed, so it holds nothing for long.
type HTTPHandler struct {
	maxLineBytes int
	record       Recorder
	refusals     *refusalLog
	opts         HTTPOptions
	slots        chan struct{} // apply slots
	bodySlots    chan struct{} // large-body slots
	wait         time.Duration
	durable      func(ctx context.Context)
	decoders     sync.Pool
	bufs         sync.Pool
	bigBufs      sync.Pool // buffers of MaxBodyBytes for bodies past SmallBody
	inflight     sync.WaitGroup
}

// HTTPOptions bound the handler's work.
type HTTPOptions struct {
	MaxLineBytes int
	// MaxConcurrent bodies applied at once, and bodies larger than SmallBody read at once;
	// more wait up to Wait, then get 503.
	MaxConcurrent int
	Wait          time.Duration
	// Durable, when set, is called after a body's lines are applied and before the answer:
	// it returns once they are saved (a checkpoint), so that an answered body survives a
	// crash. An error is logged by it; the answer stays (the lines are applied: a retry would
	// count them twice).
	Durable func(ctx context.Context)
	// MaxBodyBytes is the server's body limit (0: none known), the most a buffer grows to.
	MaxBodyBytes int64
	// SmallBody is how much of a body is read before it needs a body slot (0: 64 KiB).
	SmallBody int
	// MinBodyRate (bytes per second, after BodyGrace) a body must keep up (0: none);
	// ReadTimeout is the server's whole-request bound, which a deadline never passes.
	MinBodyRate int64
	BodyGrace   time.Duration
	ReadTimeout time.Duration
	// OnTooSlow is called for each body cut off for its rate.
	OnTooSlow func()
	// Logger names the sender of each refused body and of rejected lines (nil: not logged).
	Logger *zap.Logger
}

// Defaults of HTTPOptions.
const (
	DefaultSmallBody   = 64 << 10
	DefaultMinBodyRate = 16 << 10
	DefaultBodyGrace   = 2 * time.Second
)

// NewHTTPHandler returns the handler of the HTTP transport: the lines of each body go to a
// decoder that newDecoder made (pooled, Reset before each body).
func NewHTTPHandler(newDecoder NewBodyDecoder, opts HTTPOptions, record Recorder) *HTTPHandler {
	if opts.SmallBody <= 0 {
		opts.SmallBody = DefaultSmallBody
	}
	h := &HTTPHandler{
		maxLineBytes: opts.MaxLineBytes,
		record:       record,
		opts:         opts,
		slots:        make(chan struct{}, opts.MaxConcurrent),
		bodySlots:    make(chan struct{}, opts.MaxConcurrent),
		wait:         opts.Wait,
		durable:      opts.Durable,
		refusals:     newRefusalLog(cmp.Or(opts.Logger, zap.NewNop()), "http"),
	}
	h.decoders.New = func() any { return newDecoder(httpSource) }
	h.bufs.New = func() any { b := make([]byte, 0, initialBodyBuf); return &b }
	return h
}

const initialBodyBuf = 4 << 10

// httpSource is the source the HTTP transport's decoders are made for.
const httpSource = "http"

// EventsContentTypes are the media types of an events body: NDJSON and its JSON-lines aliases.
// None is a CORS-safelisted type (text/plain, application/x-www-form-urlencoded,
// multipart/form-data), so a web page can post events only after a CORS preflight, which the
// receiver answers only where http.cors allows the page's origin.
var EventsContentTypes = []string{
	"application/x-ndjson",
	"application/ndjson",
	"application/jsonl",
	"application/json-lines",
	"application/x-jsonlines",
}

// IsEventsContentType reports whether a Content-Type header names an events body. Parameters
// (charset=utf-8) are allowed; case does not matter; a missing type is refused, as a browser
// sends none for a Blob without a type.
func IsEventsContentType(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return false
	}
	return slices.Contains(EventsContentTypes, mt) // ParseMediaType lower-cases the type
}

// RetryAfterSeconds is the Retry-After of a 503.
const RetryAfterSeconds = 1

// Wait returns when no request is being served.
func (h *HTTPHandler) Wait() { h.inflight.Wait() }

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.inflight.Add(1)
	defer h.inflight.Done()
	if r.URL.Path != EventsPath {
		writeError(w, http.StatusNotFound, "no such path; events are posted to "+EventsPath)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "only POST is allowed on "+EventsPath)
		return
	}
	if !IsEventsContentType(r.Header.Get("Content-Type")) {
		const msg = "Content-Type must be application/x-ndjson (or application/ndjson, application/jsonl, application/json-lines, application/x-jsonlines); nothing was applied"
		h.refusals.refused(r.RemoteAddr, http.StatusUnsupportedMediaType, msg)
		writeError(w, http.StatusUnsupportedMediaType, msg)
		return
	}
	bp := h.bufs.Get().(*[]byte)
	defer func() { h.putBuf(bp) }() // readBody may swap in a large buffer
	status, msg := h.readBody(w, r, &bp)
	if status != 0 {
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		}
		if status == http.StatusRequestTimeout {
			w.Header().Set("Connection", "close")
		}
		h.refusals.refused(r.RemoteAddr, status, msg)
		writeError(w, status, msg)
		return
	}
	if !h.acquire(r, h.slots) {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		h.refusals.refused(r.RemoteAddr, http.StatusServiceUnavailable, busyMsg)
		writeError(w, http.StatusServiceUnavailable, busyMsg)
		return
	}
	defer func() { <-h.slots }()

	dec := h.decoders.Get().(BodyDecoder)
	dec.Reset()
	ans := Answer{Errors: []LineError{}}
	body := *bp
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		out, err := dec.Line(line)
		if out == ingest.Rejected {
			ans.Rejected++
			if len(ans.Errors) < maxErrors {
				ans.Errors = append(ans.Errors, LineError{Line: n, Error: err.Error()})
			}
		}
	}
	stats := dec.Flush()
	ans.Accepted, ans.Unknown = stats.Accepted, stats.Unknown
	if len(ans.Errors) > 0 {
		h.refusals.rejected("peer", r.RemoteAddr, stats, ans.Errors[0].Error)
	}
	if h.record != nil {
		h.record(stats)
	}
	h.decoders.Put(dec)
	if h.durable != nil && ans.Accepted > 0 {
		h.durable(r.Context())
	}

	status = http.StatusOK
	if ans.Rejected > 0 && ans.Accepted+ans.Unknown == 0 {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, &ans)
}

const busyMsg = "the receiver is busy; retry later"

// readBody reads the whole body into **bpp (nothing applied yet). It returns 0, or the status
// and message of the answer that refuses the body.
//
// A body past SmallBody moves, with its body slot, into a buffer of the whole limit taken from
// a pool, so large buffers never grow by copying and a storm of large bodies (gzip bombs that
// stop at the limit) reuses the same few buffers instead of making garbage: at most
// MaxConcurrent x MaxBodyBytes of large buffers are in use at once. Idle, the pool gives them
// back to the Go runtime within two garbage collections.
func (h *HTTPHandler) readBody(w http.ResponseWriter, r *http.Request, bpp **[]byte) (int, string) {
	buf := (**bpp)[:0]
	defer func() { **bpp = buf }()
	limit := h.opts.MaxBodyBytes
	big := false
	defer func() {
		if big {
			<-h.bodySlots
		}
	}()
	rc := http.NewResponseController(w)
	start := time.Now()
	paced := h.opts.MinBodyRate > 0
	for {
		if len(buf) == cap(buf) {
			if !big && len(buf) >= h.opts.SmallBody {
				if !h.acquire(r, h.bodySlots) {
					return http.StatusServiceUnavailable, busyMsg
				}
				big = true
				if limit > 0 {
					lp, _ := h.bigBufs.Get().(*[]byte)
					if lp == nil || int64(cap(*lp)) != limit {
						b := make([]byte, 0, limit)
						lp = &b
					}
					large := append((*lp)[:0], buf...)
					**bpp = buf[:0] // copied: the small buffer goes back to its pool
					h.putBuf(*bpp)
					*bpp, buf = lp, large
					continue
				}
			}
			size := max(2*cap(buf), initialBodyBuf)
			if !big {
				size = min(size, h.opts.SmallBody)
			}
			if limit > 0 {
				size = int(min(int64(size), limit))
			}
			if size == cap(buf) {
				// At the limit: the next read is the end, or confighttp's limit error; a byte
				// more would be a bug of the limit, refused all the same.
				var one [1]byte
				n, err := r.Body.Read(one[:])
				if n > 0 {
					err = &http.MaxBytesError{Limit: limit}
				}
				if errors.Is(err, io.EOF) {
					return 0, ""
				}
				return h.readError(err, len(buf), start)
			}
			nb := make([]byte, len(buf), size)
			copy(nb, buf)
			buf = nb
		}
		if paced {
			dl := start.Add(h.opts.BodyGrace + time.Duration(int64(len(buf))*int64(time.Second)/h.opts.MinBodyRate))
			if h.opts.ReadTimeout > 0 {
				dl = minTime(dl, start.Add(h.opts.ReadTimeout))
			}
			if err := rc.SetReadDeadline(dl); err != nil {
				paced = false // a writer that cannot set deadlines: read_timeout still bounds the body
			}
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return 0, ""
		}
		if err != nil {
			return h.readError(err, len(buf), start)
		}
	}
}

// readError is the answer to a body whose reading failed after n bytes.
func (h *HTTPHandler) readError(err error, n int, start time.Time) (int, string) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, "body over the limit of " + strconv.FormatInt(tooBig.Limit, 10) + " bytes; nothing was applied"
	case errors.Is(err, os.ErrDeadlineExceeded):
		if h.opts.OnTooSlow != nil {
			h.opts.OnTooSlow()
		}
		return http.StatusRequestTimeout, "the body arrived too slowly (" + strconv.Itoa(n) + " bytes in " + time.Since(start).Round(time.Millisecond).String() + "); nothing was applied"
	}
	return http.StatusBadRequest, "reading the body: " + err.Error()
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// putBuf pools a buffer by what it may be used for. The small pool takes only buffers of at
// most SmallBody: a body reads into its small buffer up to that buffer's capacity before it
// takes a body slot, so a larger one there would let a body past SmallBody in without a slot.
// A buffer of the whole limit goes back to the large pool; any other is left to the GC.
func (h *HTTPHandler) putBuf(b *[]byte) {
	switch {
	case h.opts.MaxBodyBytes > 0 && int64(cap(*b)) == h.opts.MaxBodyBytes && cap(*b) > h.opts.SmallBody:
		*b = (*b)[:0]
		h.bigBufs.Put(b)
	case cap(*b) <= h.opts.SmallBody:
		*b = (*b)[:0]
		h.bufs.Put(b)
	}
}

func (h *HTTPHandler) acquire(r *http.Request, slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(h.wait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
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
