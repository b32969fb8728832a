package ratelog

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// HeldField is the field of a log line that counts the lines held back before it: one name
// in every log of the collector.
const HeldField = "not_logged_since_last"

// Logger writes warnings within a Limiter; each line written carries the count of those held
// back before it (HeldField). Safe for concurrent use.
type Logger struct {
	logger *zap.Logger
	// Now is the clock of the limit (tests set it).
	Now func() time.Time

	mu    sync.Mutex
	limit Limiter
}

// NewLogger returns a Logger of at most burst lines per period.
func NewLogger(logger *zap.Logger, burst int, period time.Duration) *Logger {
	return &Logger{logger: logger.WithOptions(zap.AddCallerSkip(1)), Now: time.Now, limit: Limiter{Burst: burst, Every: period}}
}

// Warn writes msg with fields when the limit lets it through, and reports whether it did.
func (l *Logger) Warn(msg string, fields ...zap.Field) bool {
	return l.WarnWith(msg, func() []zap.Field { return fields })
}

// WarnWith is Warn whose fields are built only for a line that is written: a path where most
// lines are held back (a file of damaged rows) builds none of them.
func (l *Logger) WarnWith(msg string, fields func() []zap.Field) bool {
	l.mu.Lock()
	ok, held := l.limit.Take(l.Now())
	l.mu.Unlock()
	if !ok {
		return false
	}
	// Check first: a logger that drops warnings costs no field built.
	if ce := l.logger.Check(zap.WarnLevel, msg); ce != nil {
		ce.Write(append(fields(), zap.Int64(HeldField, held))...)
	}
	return true
}
