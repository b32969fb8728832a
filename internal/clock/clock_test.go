package clock

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestStampsAcrossSteps(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	c := NewFake(t0)
	s := NewStamps(c)
	assert.Equal(t, t0, s.Now(), "the wall clock")
	c.Advance(10 * time.Second)
	assert.Equal(t, t0.Add(10*time.Second), s.Now())

	// Back an hour: the stamps go on from the last one at the pace of elapsed time.
	c.Step(-time.Hour)
	assert.Equal(t, t0.Add(10*time.Second), s.Now(), "no time passed: the same stamp, not an older one")
	c.Advance(10 * time.Second)
	assert.Equal(t, t0.Add(20*time.Second), s.Now())
	c.Advance(time.Minute)
	assert.Equal(t, t0.Add(80*time.Second), s.Now(), "ahead of the wall clock by the step")

	// Forward a day: followed.
	c.Step(24 * time.Hour)
	c.Advance(10 * time.Second)
	want := t0.Add(-time.Hour + 24*time.Hour + 90*time.Second)
	assert.Equal(t, want, s.Now())
	c.Advance(10 * time.Second)
	assert.Equal(t, want.Add(10*time.Second), s.Now(), "and the wall clock again after it")
}

func TestStampsFloor(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	c := NewFake(t0)
	s := NewStamps(c)
	s.Floor(t0.Add(time.Hour)) // a restored start time, from a life whose clock was ahead
	assert.Equal(t, t0.Add(time.Hour), s.Now())
	c.Advance(time.Second)
	assert.Equal(t, t0.Add(time.Hour+time.Second), s.Now())
	s.Floor(t0) // an older floor changes nothing
	c.Advance(time.Second)
	assert.Equal(t, t0.Add(time.Hour+2*time.Second), s.Now())
}

// TestStampsNeverGoBack: from many goroutines while the wall clock steps back and forth,
// each goroutine's stamps never go back.
func TestStampsNeverGoBack(t *testing.T) {
	c := NewFake(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	s := NewStamps(c)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var last time.Time
			for range 10_000 {
				now := s.Now()
				if now.Before(last) {
					t.Errorf("a stamp went back: %v after %v", now, last)
					return
				}
				last = now
			}
		})
	}
	for i := range 2_000 {
		c.Advance(time.Millisecond)
		if i%100 == 0 {
			c.Step(time.Duration(1-2*(i/100%2)) * time.Hour)
		}
	}
	wg.Wait()
}

func TestSystemClock(t *testing.T) {
	c := System()
	e0 := c.Elapsed()
	time.Sleep(time.Millisecond)
	assert.Greater(t, c.Elapsed(), e0)
	assert.WithinDuration(t, time.Now(), c.Now(), time.Minute)
}
