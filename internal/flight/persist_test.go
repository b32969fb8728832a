package flight

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
)

// TestRunsKeptApart: Gym names a rollout <task>-<rollout> in every run, so two runs reuse ids.
// Run A finishes 3-0, then run B's 3-0 starts and goes quiet; A's 5-0 stays busy while B's
// 5-0 goes quiet. Each run's rollouts are its own: in flight A=1, B=2; stalled B=2.
func TestRunsKeptApart(t *testing.T) {
	r, c := newTest(testCfg)
	r.ConsumeTraces(traces("A", "agent", sp{id: "3-0", name: "gym.verify", end: t0}, sp{id: "5-0", name: "gym.verify", end: t0}))
	r.ConsumeTraces(traces("A", "agent", sp{id: "3-0", name: RolloutSpan, end: t0}))
	r.ConsumeTraces(traces("B", "agent", sp{id: "3-0", name: "gym.verify", end: t0}, sp{id: "5-0", name: "gym.verify", end: t0}))
	for i := range 6 {
		c.Advance(time.Minute)
		r.ConsumeTraces(traces("A", "agent", sp{id: "5-0", name: "gym.verify", end: t0.Add(time.Duration(i) * time.Minute)}))
	}
	got, logs := collect(r)
	assert.Equal(t, map[string]float64{
		"gym.rollout.in_flight|A|agent|verify":    1,
		"gym.rollout.in_flight|B|agent|verify":    2,
		"gym.rollout.stalled|B|agent|verify":      2,
		"gym.rollout.stalls_total|B|agent|verify": 2,
		"gym.rollout.oldest_in_flight_age|A||":    360,
		"gym.rollout.oldest_in_flight_age|B||":    360,
	}, got)
	require.Len(t, logs, 2)
	for _, l := range logs {
		assert.Equal(t, "B", l.Attributes().AsRaw()[KeyRun])
	}
	assert.Zero(t, r.Stats().LateSpans, "B's 3-0 is not a late span of A's")
	assert.Equal(t, 4, r.Kept())
}

// TestRestore: a recorder killed at any moment (no collection, no shutdown: its store as it
// is) is restored by the next: the same rollouts in flight, finished, stalled, with their
// stall counters; the time the collector was down is not counted as silence.
func TestRestore(t *testing.T) {
	mem := storagetest.NewMem(nil)
	r, c := newTest(testCfg)
	_, err := r.Restore(context.Background(), mem)
	require.NoError(t, err)
	r.ConsumeTraces(traces("A", "agent", sp{id: "quiet", name: "gym.sandbox.exec", end: t0}, sp{id: "busy", name: "gym.verify", end: t0}, sp{id: "done", name: "gym.verify", end: t0}))
	c.Advance(6 * time.Minute)
	r.ConsumeTraces(traces("A", "model", sp{id: "busy", name: "gym.model.responses", end: t0}))
	before, _ := collect(r) // quiet stalls
	r.ConsumeTraces(traces("A", "agent", sp{id: "done", name: RolloutSpan, end: t0}, sp{id: "new", name: "gym.verify", end: t0}))
	// Killed now: "done" finished and "new" started after the last collection.
	crash := mem.CrashCopy()

	c2 := clock.NewFake(t0.Add(time.Hour)) // a new process: its elapsed time starts again
	c2.Advance(10 * time.Minute)           // down for 10 minutes (more than stall_after)
	r2 := New(testCfg, c2)
	got, err := r2.Restore(context.Background(), crash)
	require.NoError(t, err)
	assert.Equal(t, Restored{Rollouts: 4}, got)
	after, logs := collect(r2)
	assert.Empty(t, logs, "no stall raised by the outage, none logged twice")
	assert.Equal(t, map[string]float64{
		"gym.rollout.in_flight|A|agent|sandbox":    1,
		"gym.rollout.in_flight|A|agent|verify":     1,
		"gym.rollout.in_flight|A|model|model_call": 1,
		"gym.rollout.stalled|A|agent|sandbox":      1,
		"gym.rollout.stalls_total|A|agent|sandbox": 1,
		"gym.rollout.stalls_total|A|agent|verify":  1, // done's, before it finished
		"gym.rollout.stalled|A|agent|verify":       0, // done's too: it finished since, so drained
		"gym.rollout.oldest_in_flight_age|A||":     360,
	}, after)
	assert.Equal(t, before["gym.rollout.stalls_total|A|agent|sandbox"], after["gym.rollout.stalls_total|A|agent|sandbox"])

	// A late span of the finished one stays late; the busy one stalls stall_after after its
	// last span, counted from before the outage.
	r2.ConsumeTraces(traces("A", "agent", sp{id: "done", name: "HTTP POST", end: t0}))
	assert.Equal(t, int64(1), r2.Stats().LateSpans)
	c2.Advance(5*time.Minute + time.Second)
	after, logs = collect(r2)
	assert.Equal(t, 2.0, after["gym.rollout.stalled|A|agent|verify"]+after["gym.rollout.stalled|A|model|model_call"])
	assert.Len(t, logs, 2)

	// And it keeps its state where it found it: a third process restores the second's stalls.
	r3 := New(testCfg, clock.NewFake(t0.Add(2*time.Hour)))
	got, err = r3.Restore(context.Background(), crash.CrashCopy())
	require.NoError(t, err)
	assert.Equal(t, 4, got.Rollouts)
	after, logs = collect(r3)
	assert.Empty(t, logs)
	assert.Equal(t, 3.0, after["gym.rollout.stalled|A|agent|sandbox"]+after["gym.rollout.stalled|A|agent|verify"]+after["gym.rollout.stalled|A|model|model_call"])
}

// TestRestoreDamaged: a damaged record is left out and counted, the others restored; a damaged
// header starts the recorder empty with a clear error, and its next write mends the store.
func TestRestoreDamaged(t *testing.T) {
	mem := storagetest.NewMem(nil)
	r, _ := newTest(testCfg)
	_, err := r.Restore(context.Background(), mem)
	require.NoError(t, err)
	for i := range 3 {
		r.ConsumeTraces(traces("A", "agent", sp{id: fmt.Sprint(i), name: "gym.verify", end: t0}))
	}
	collect(r)
	bad := mem.CrashCopy()
	require.NoError(t, bad.Set(context.Background(), recordKey(1), []byte{persistVersion, 200}))
	r2, _ := newTest(testCfg)
	got, err := r2.Restore(context.Background(), bad)
	require.NoError(t, err)
	assert.Equal(t, Restored{Rollouts: 2, Damaged: 1}, got)
	r2.ConsumeTraces(traces("A", "agent", sp{id: "9", name: "gym.verify", end: t0}))
	assert.Equal(t, 3, r2.Kept(), "the damaged record's slot is used again")

	for _, head := range [][]byte{{persistVersion, 0xff}, {9}, []byte("not a header")} {
		bad = mem.CrashCopy()
		require.NoError(t, bad.Set(context.Background(), headerKey, head))
		r3, _ := newTest(testCfg)
		_, err = r3.Restore(context.Background(), bad)
		require.Error(t, err, "%q", head)
		assert.Equal(t, 0, r3.Kept())
		collect(r3)
		r4, _ := newTest(testCfg)
		_, err = r4.Restore(context.Background(), bad)
		assert.NoError(t, err, "mended by the next write")
	}
}

// TestStoreBounded: the store holds one record per rollout kept, whatever came and went.
func TestStoreBounded(t *testing.T) {
	mem := storagetest.NewMem(nil)
	r, c := newTest(Config{MaxRollouts: 10, StallAfter: time.Minute, FinishedAfter: 2 * time.Minute})
	_, err := r.Restore(context.Background(), mem)
	require.NoError(t, err)
	for i := range 100 {
		r.ConsumeTraces(traces("A", "agent", sp{id: fmt.Sprint(i), name: "gym.verify", end: t0}))
		if i%3 == 0 {
			r.ConsumeTraces(traces("A", "agent", sp{id: fmt.Sprint(i), name: RolloutSpan, end: t0}))
		}
		c.Advance(10 * time.Second)
		collect(r)
	}
	assert.Equal(t, r.Kept()+1, mem.Len(), "a record per rollout kept and the header")
	assert.LessOrEqual(t, r.Kept(), 10)
}

// FuzzRestore: whatever a damaged store holds, Restore neither panics nor keeps more than
// max_rollouts, and every string it keeps is within the cap.
func FuzzRestore(f *testing.F) {
	mem := storagetest.NewMem(nil)
	r, _ := newTest(testCfg)
	_, _ = r.Restore(context.Background(), mem)
	r.ConsumeTraces(traces("A", "agent", sp{id: "a", name: "gym.verify", end: t0}))
	collect(r)
	f.Add(mem.Value(headerKey), mem.Value(recordKey(0)))
	f.Add([]byte{persistVersion, 1, 0, 0}, []byte{persistVersion})
	f.Fuzz(func(t *testing.T, head, rec []byte) {
		store := storagetest.NewMem(map[string][]byte{headerKey: head, recordKey(0): rec, recordKey(1): rec})
		r, _ := newTest(Config{MaxRollouts: 1, StallAfter: time.Minute, FinishedAfter: time.Hour})
		_, _ = r.Restore(context.Background(), store)
		assert.LessOrEqual(t, r.Kept(), 1)
		for _, ro := range r.byID {
			assert.LessOrEqual(t, len(ro.id)+len(ro.run)+len(ro.server)+len(ro.lastSpan), 4*maxStringBytes)
		}
		collect(r)
	})
}

// TestRestoreMany: records past one read batch are all restored.
func TestRestoreMany(t *testing.T) {
	cfg := Config{MaxRollouts: 3000, StallAfter: time.Minute, FinishedAfter: time.Hour}
	mem := storagetest.NewMem(nil)
	r := New(cfg, clock.NewFake(t0))
	_, err := r.Restore(context.Background(), mem)
	require.NoError(t, err)
	for i := range 2500 {
		r.ConsumeTraces(traces("A", "agent", sp{id: fmt.Sprint(i), name: "gym.verify", end: t0}))
	}
	r2 := New(cfg, clock.NewFake(t0))
	got, err := r2.Restore(context.Background(), mem.CrashCopy())
	require.NoError(t, err)
	assert.Equal(t, Restored{Rollouts: 2500}, got)
	after, _ := collect(r2)
	assert.Equal(t, 2500.0, after["gym.rollout.in_flight|A|agent|verify"])
}

// TestRestoreDrainsDeadSeries: a gauge series the killed process exported non-zero and that has
// drained since (its rollout moved on to another stage) is written at zero by the next process,
// so a backend does not add the dead process's last value to the new one's.
func TestRestoreDrainsDeadSeries(t *testing.T) {
	mem := storagetest.NewMem(nil)
	r, _ := newTest(testCfg)
	_, err := r.Restore(context.Background(), mem)
	require.NoError(t, err)
	r.ConsumeTraces(traces("A", "agent", sp{id: "x", name: "gym.verify", end: t0}))
	collect(r)
	r.ConsumeTraces(traces("A", "agent", sp{id: "x", name: "gym.model.responses", end: t0}))
	r2, _ := newTest(testCfg)
	_, err = r2.Restore(context.Background(), mem.CrashCopy())
	require.NoError(t, err)
	got, _ := collect(r2)
	assert.Equal(t, map[string]float64{
		"gym.rollout.in_flight|A|agent|model_call": 1,
		"gym.rollout.in_flight|A|agent|verify":     0,
		"gym.rollout.oldest_in_flight_age|A||":     0,
	}, got)
}
