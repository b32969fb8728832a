package transport

import (
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/follow"
)

// Refusals wraps a server's handler (the whole of it, authentication included) to count and
// log the requests refused before the gym handler sees them: 401 and 403, the answers of the
// server authenticator (bearertokenauth and the like). Without it such a refusal would leave
// no trace in the collector. Its log lines name the peer and are limited to 5 a minute, with
// the count of those held back.
func Refusals(next http.Handler, count func(status int), logger *zap.Logger) http.Handler {
	rf := &refusals{next: next, count: count, logger: logger, now: time.Now, logs: follow.LogLimiter{Burst: 5, Every: time.Minute}}
	rf.pool.New = func() any { return &statusWriter{} }
	return rf
}

type refusals struct {
	next   http.Handler
	count  func(status int)
	logger *zap.Logger
	now    func() time.Time
	pool   sync.Pool // *statusWriter: no allocation per request

	mu   sync.Mutex
	logs follow.LogLimiter
}

func (rf *refusals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := rf.pool.Get().(*statusWriter)
	sw.ResponseWriter, sw.status = w, 0
	rf.next.ServeHTTP(sw, r)
	status := sw.status
	sw.ResponseWriter = nil
	rf.pool.Put(sw)
	if status != http.StatusUnauthorized && status != http.StatusForbidden {
		return
	}
	rf.count(status)
	rf.mu.Lock()
	allow := rf.logs.Allow(rf.now())
	var held int64
	if allow {
		held = rf.logs.TakeSuppressed()
	}
	rf.mu.Unlock()
	if !allow {
		return
	}
	rf.logger.Warn("gym receiver: a request was refused by the server's authentication",
		zap.Int("status", status), zap.String("peer", r.RemoteAddr), zap.String("path", r.URL.Path),
		zap.Int64("refusals_not_logged_since_last", held))
}

// statusWriter records the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer (Flush, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
