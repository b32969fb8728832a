package console

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

// Limiter rate-limits the warnings of a receiver's streams by ratelog's rule: at most burst
// per period, then a count of those left out (not_logged_since_last) with the next one
// logged. Safe for concurrent use: the streams of one receiver share it.
type Limiter struct {
	logger *zap.Logger
	now    func() time.Time

	mu    sync.Mutex
	limit ratelog.Limiter
}

// NewLimiter returns a limiter of at most burst warnings per period.
func NewLimiter(logger *zap.Logger, burst int, period time.Duration) *Limiter {
	return &Limiter{logger: logger.WithOptions(zap.AddCallerSkip(1)), now: time.Now, limit: ratelog.Limiter{Burst: burst, Every: period}}
}

// Warn logs, unless the period's warnings are used up.
func (l *Limiter) Warn(msg string, fields ...zap.Field) {
	l.mu.Lock()
	ok, held := l.limit.Take(l.now())
	l.mu.Unlock()
	if !ok {
		return
	}
	if held > 0 {
		fields = append(fields, zap.Int64("not_logged_since_last", held))
	}
	l.logger.Warn(msg, fields...)
}
