// Package clock is where the engine reads time, in two kinds that a step of the host's clock
// (NTP correcting it, an operator setting it) treats differently: the wall clock, which the
// timestamps a backend receives come from and which steps; and elapsed time, monotonic, which
// every duration (expiry, idle sweeps) is measured in and which never steps. Stamps keeps the
// timestamps of cumulative series from going back when the wall clock does.
package clock

import (
	"sync"
	"time"
)

// Clock gives the wall time and the time elapsed since a fixed origin.
type Clock interface {
	// Now is the wall clock.
	Now() time.Time
	// Elapsed is monotonic: a step of the wall clock does not move it.
	Elapsed() time.Duration
}

type system struct{ origin time.Time }

// System is the host's clock; Elapsed counts from the call (Go's monotonic reading).
func System() Clock { return system{origin: time.Now()} }

func (system) Now() time.Time { return time.Now() }

func (s system) Elapsed() time.Duration { return time.Since(s.origin) }

// Fake is a clock a test moves: Advance moves both readings (time passing), Step only the wall
// clock (the host's clock set).
type Fake struct {
	mu      sync.Mutex
	wall    time.Time
	elapsed time.Duration
}

// NewFake returns a fake clock whose wall time is t.
func NewFake(t time.Time) *Fake { return &Fake{wall: t} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wall
}

func (f *Fake) Elapsed() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.elapsed
}

// Advance lets d pass.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.wall = f.wall.Add(d)
	f.elapsed += d
	f.mu.Unlock()
}

// Step sets the wall clock by d (negative: back), as a host's clock is set.
func (f *Fake) Step(d time.Duration) {
	f.mu.Lock()
	f.wall = f.wall.Add(d)
	f.mu.Unlock()
}

// Stamps gives timestamps that never go back: the wall clock, unless it is behind the last
// stamp given; then that stamp plus the time elapsed since. A wall clock stepped back leaves the
// stamps going on at the pace of elapsed time, ahead of it by the step, until it is ahead
// again; one stepped forward is followed. So a cumulative series' start time is never after
// its points, and a backend never sees a point older than the one before. Safe for concurrent
// use.
type Stamps struct {
	clock Clock

	mu          sync.Mutex
	last        time.Time // zero before the first stamp
	lastElapsed time.Duration
}

// NewStamps returns stamps read from c.
func NewStamps(c Clock) *Stamps { return &Stamps{clock: c} }

// Now returns the next stamp.
func (s *Stamps) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	wall, el := s.clock.Now(), s.clock.Elapsed()
	if wall.Before(s.last) { // stepped back: go on from the last stamp at the elapsed pace
		wall = s.last.Add(el - s.lastElapsed)
	}
	s.last, s.lastElapsed = wall, el
	return wall
}

// Floor makes every later stamp at least t: a restored series' start time, kept by an earlier
// life under a clock that may have been ahead of this one.
func (s *Stamps) Floor(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last.Before(t) {
		s.last, s.lastElapsed = t, s.clock.Elapsed()
	}
}
