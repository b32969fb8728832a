package transport

import (
	"maps"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

// refusalLog names where refused input came from (a file's path, a sender's address), which
// the counts, by reason only, cannot: at most 10 lines per 10 s for a transport, each with the
// count of those held back. Safe for concurrent use.
type refusalLog struct {
	log  *ratelog.Logger
	name string // the transport, first word of each line
}

func newRefusalLog(logger *zap.Logger, name string) *refusalLog {
	return newRefusalLogEvery(logger, name, 10, 10*time.Second)
}

// newRefusalLogEvery is a refusalLog of burst lines per period.
func newRefusalLogEvery(logger *zap.Logger, name string, burst int, period time.Duration) *refusalLog {
	return &refusalLog{log: ratelog.NewLogger(logger, burst, period), name: name}
}

// rejected logs the lines rejected in one read or body (nothing when none was), by reason,
// with the first one's error when known.
func (l *refusalLog) rejected(key, where string, s *ingest.Stats, first string) {
	if len(s.Rejected) == 0 {
		return
	}
	// A copy: the stats are cleared after this read.
	fields := []zap.Field{zap.String(key, where), zap.Any("reasons", maps.Clone(s.Rejected))}
	if first != "" {
		fields = append(fields, zap.String("first_error", first))
	}
	l.warn("lines rejected", fields...)
}

// refused logs a whole request refused before any of it was applied.
func (l *refusalLog) refused(peer string, status int, msg string) {
	l.warn("a request was refused; nothing of it was applied", zap.String("peer", peer), zap.Int("status", status), zap.String("error", msg))
}

// warn logs what, with fields, within the budget.
func (l *refusalLog) warn(what string, fields ...zap.Field) {
	l.log.Warn(l.name+": "+what, fields...)
}
