package aggregate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
)

// TestClockSteps: the host's clock is set back an hour, then forward a day, while two
// processes send. Every point of a cumulative series is at or after its start time, no point
// is older than the one before it, values never go down, and the processes expire after five
// minutes of elapsed time, each in its own collection: not all at once at the step forward,
// not never after the step back.
func TestClockSteps(t *testing.T) {
	a, c := newTestAggregator(t, 2000) // ExpireAfter 5 min
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	resA, resB := map[string]any{"service.name": "a"}, map[string]any{"service.name": "b"}
	var last = map[string]point{}
	check := func(what string, res map[string]any, want int64) {
		t.Helper()
		ps := points(a.Collect(Scope{}), res, "gym.rollout.completed_total")
		require.Len(t, ps, 1, what)
		p := ps[0]
		assert.LessOrEqual(t, p.start, p.ts, "%s: the start time is not after the point", what)
		assert.Equal(t, want, p.val, what)
		key := res["service.name"].(string)
		if prev, ok := last[key]; ok {
			assert.GreaterOrEqual(t, p.ts, prev.ts, "%s: no point older than the one before", what)
			assert.Equal(t, prev.start, p.start, "%s: the same series", what)
		}
		last[key] = p
	}
	completed := `{"event":"rollout.completed","outcome":"omitted","dispatch_name":"d"}`

	feed(t, st, `{"event":"resource","attributes":{"service.name":"a"}}`, completed)
	check("a, before the steps", resA, 1)
	c.advance(10 * time.Second)
	c.Step(-time.Hour)
	feed(t, st, completed)
	check("a, after the step back", resA, 2)
	assert.True(t, c.Now().Add(time.Hour).Equal(last["a"].ts.AsTime()), "stamps go on at the elapsed pace, ahead by the step")

	// b starts after the step back: its start time too is not before a's points.
	feed(t, st, `{"event":"resource","attributes":{"service.name":"b"}}`, completed)
	c.advance(10 * time.Second)
	check("b, new after the step back", resB, 1)
	assert.GreaterOrEqual(t, last["b"].start, last["a"].ts)

	// Four minutes on, a day forward: a (idle 4m10s of elapsed time) does not expire.
	c.advance(4 * time.Minute)
	c.Step(24 * time.Hour)
	check("a, after the step forward", resA, 2)
	assert.Equal(t, 2, a.Len(), "nothing expires at the step")
	feed(t, st, `{"event":"resource","attributes":{"service.name":"b"}}`, completed)
	check("b, after the step forward", resB, 2)

	// a has been idle 5 minutes of elapsed time: exported once more, then dropped; b stays.
	c.advance(50 * time.Second)
	check("a, its last export", resA, 2)
	assert.Equal(t, 1, a.Len())
	assert.Empty(t, points(a.Collect(Scope{}), resA, "gym.rollout.completed_total"))

	// Back an hour again: b still expires, 5 minutes of elapsed time after it was last seen.
	c.Step(-time.Hour)
	c.advance(3*time.Minute + 50*time.Second)
	check("b, idle 4 minutes 40", resB, 2)
	c.advance(time.Minute)
	check("b, its last export", resB, 2)
	assert.Zero(t, a.Len())
}

// TestRestoreAfterClockStepBack: a checkpoint saved by a life whose stamps were an hour ahead
// of the next life's clock: the restored series' points are not before their start times.
func TestRestoreAfterClockStepBack(t *testing.T) {
	a, c := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st, `{"event":"resource","attributes":{"service.name":"a"}}`,
		`{"event":"rollout.completed","outcome":"omitted","dispatch_name":"d"}`)
	var state []byte
	md := a.CollectWithState(Scope{}, &state)
	before := points(md, map[string]any{"service.name": "a"}, "gym.rollout.completed_total")[0]

	next := clock.NewFake(c.Now().Add(-time.Hour)) // the next life, an hour behind
	b := NewAggregator(AggregatorConfig{CardinalityLimit: 2000, ExpireAfter: 5 * time.Minute, Registry: a.cfg.Registry, Clock: next})
	require.NoError(t, b.RestoreState(state))
	next.Advance(time.Second)
	after := points(b.Collect(Scope{}), map[string]any{"service.name": "a"}, "gym.rollout.completed_total")
	require.Len(t, after, 1)
	assert.Equal(t, before.start, after[0].start, "restored: the same series")
	assert.LessOrEqual(t, after[0].start, after[0].ts, "no point before its start time")
	assert.Equal(t, int64(1), after[0].val)
}
