// Package ratelog is the one rate limit of the collector's log lines about bad input and waiting
// work (refused files and peers, rejected lines, unknown instruments): a burst, then silence
// until a period has passed, with a count of what was held back. A leaf: any engine package
// may use it.
package ratelog

import "time"

// Limiter lets Burst log lines through, then none until Every has passed since the first
// of them; it counts those it held back.
type Limiter struct {
	Burst      int
	Every      time.Duration
	used       int
	last       time.Time
	suppressed int64
}

// Allow reports whether a log line may be written at now.
func (l *Limiter) Allow(now time.Time) bool {
	if now.Sub(l.last) >= l.Every {
		l.used = 0
	}
	if l.used < l.Burst {
		if l.used == 0 {
			l.last = now
		}
		l.used++
		return true
	}
	l.suppressed++
	return false
}

// Take is Allow, with, when the line may be written, how many were held back before it (their
// count goes out with it).
func (l *Limiter) Take(now time.Time) (ok bool, held int64) {
	if !l.Allow(now) {
		return false, 0
	}
	return true, l.TakeSuppressed()
}

// TakeSuppressed returns how many lines were held back since it was last called.
func (l *Limiter) TakeSuppressed() int64 {
	n := l.suppressed
	l.suppressed = 0
	return n
}
