package transport

import (
	"maps"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/follow"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// refusalLog names where refused input came from (a file's path, a sender's address), which
// the counts, by reason only, cannot: at most 10 lines per 10 s for a transport, each with the
// count of those held back. Safe for concurrent use.
type refusalLog struct {
	logger *zap.Logger
	name   string // the transport, first word of each line

	mu    sync.Mutex
	limit follow.LogLimiter
}

func newRefusalLog(logger *zap.Logger, name string) *refusalLog {
	return &refusalLog{logger: logger, name: name, limit: follow.LogLimiter{Burst: 10, Every: 10 * time.Second}}
}

func (l *refusalLog) take() (bool, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit.Take(time.Now())
}

// rejected logs the lines rejected in one read or body (nothing when none was), by reason,
// with the first one's error when known.
func (l *refusalLog) rejected(key, where string, s *ingest.Stats, first string) {
	if len(s.Rejected) == 0 {
		return
	}
	ok, held := l.take()
	if !ok {
		return
	}
	// A copy: the stats are cleared after this read.
	reasons := maps.Clone(s.Rejected)
	fields := []zap.Field{zap.String(key, where), zap.Any("reasons", reasons), zap.Int64("not_logged_since_last", held)}
	if first != "" {
		fields = append(fields, zap.String("first_error", first))
	}
	l.logger.Warn(l.name+": lines rejected", fields...)
}

// refused logs a whole request refused before any of it was applied.
func (l *refusalLog) refused(peer string, status int, msg string) {
	ok, held := l.take()
	if !ok {
		return
	}
	l.logger.Warn(l.name+": a request was refused; nothing of it was applied", zap.String("peer", peer),
		zap.Int("status", status), zap.String("error", msg), zap.Int64("not_logged_since_last", held))
}
