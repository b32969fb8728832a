package checkpoint

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
)

func newAgg(t testing.TB) *aggregate.Aggregator {
	reg, err := normalize.NewRegistry(nil, nil, nil)
	require.NoError(t, err)
	return aggregate.NewAggregator(aggregate.AggregatorConfig{CardinalityLimit: 100, ExpireAfter: time.Hour, Registry: reg})
}

func retries(md pmetric.Metrics) int64 {
	var n int64
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if ms.At(j).Name() == "gym.sandbox.create_retry_total" {
				n += ms.At(j).Sum().DataPoints().At(0).IntValue()
			}
		}
	}
	return n
}

// lineSource applies lines in batches under its lock and saves, under the same lock, how many
// it has applied: the shape of the files transport (and of any source joining the checkpoint).
type lineSource struct {
	mu    sync.Mutex
	st    *events.LineDecoder
	store interface {
		Save(context.Context, []byte) error
	}
	applied int
}

func (s *lineSource) batch(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		_, _ = s.st.Line([]byte(`{"event":"sandbox.create_retry","provider":"p"}`))
		s.applied++
	}
	_ = s.store.Save(context.Background(), []byte(strconv.Itoa(s.applied)))
}

// Every checkpoint, taken while a source applies lines, holds the offsets of exactly the lines
// in its state, and so does its collection's export at most.
func TestCheckpointIsConsistent(t *testing.T) {
	agg := newAgg(t)
	store := storagetest.NewMem(nil)
	c := New(store, agg)
	sec := c.Section("lines")
	src := &lineSource{st: events.NewLineDecoder(1<<16, agg.NewSink, events.DefaultResource("file", "/f")), store: sec}
	sec.GuardedBy(&src.mu)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
				src.batch(1 + i%37)
			}
		}
	}()
	for range 50 {
		var md pmetric.Metrics
		_, err := c.Collect(context.Background(), func(state *[]byte) { md = agg.CollectWithState(aggregate.Scope{}, state) })
		require.NoError(t, err)
		saved := store.Value(Key)
		b := newAgg(t)
		r := New(storagetest.NewMem(map[string][]byte{Key: saved}), b)
		ok, err := r.Restore(context.Background())
		require.NoError(t, err)
		require.True(t, ok)
		off, _ := r.Section("lines").Load(context.Background())
		n := 0 // no offsets yet: no line applied
		if len(off) > 0 {
			n, err = strconv.Atoi(string(off))
			require.NoError(t, err)
		}
		assert.Equal(t, int64(n), retries(b.Collect(aggregate.Scope{})), "offsets and state of the same lines")
		assert.LessOrEqual(t, retries(md), int64(n), "the export never carries more than its checkpoint")
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
}

// Concurrent Syncs share checkpoints, and each returns only after a checkpoint that began
// after it was called.
func TestSyncGroupCommit(t *testing.T) {
	agg := newAgg(t)
	store := storagetest.NewMem(nil)
	c := New(store, agg)
	st := events.NewLineDecoder(1<<16, agg.NewSink, events.DefaultResource("http", ""))
	var mu sync.Mutex
	var wg sync.WaitGroup
	const callers = 64
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			_, _ = st.Line([]byte(`{"event":"sandbox.create_retry","provider":"p"}`))
			mu.Unlock()
			require.NoError(t, c.Sync(context.Background()))
		}()
	}
	wg.Wait()
	b := newAgg(t)
	ok, err := New(storagetest.NewMem(map[string][]byte{Key: store.Value(Key)}), b).Restore(context.Background())
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(callers), retries(b.Collect(aggregate.Scope{})), "every line applied before a Sync returned is saved")
	assert.LessOrEqual(t, store.Sets(), int64(callers))
	t.Logf("%d callers, %d checkpoints", callers, store.Sets())
}

func TestDamagedCheckpoint(t *testing.T) {
	for _, data := range []string{"nope", "gymckpt", "gymckpt\x02", "gymckpt\x01\x01\x05ab"} {
		c := New(storagetest.NewMem(map[string][]byte{Key: []byte(data)}), newAgg(t))
		_, err := c.Restore(context.Background())
		assert.Error(t, err, "%q", data)
	}
}

// A source that has not started yet (a start that failed before it) keeps its restored
// offsets in the next checkpoint.
func TestUnstartedSourceKeepsItsOffsets(t *testing.T) {
	agg := newAgg(t)
	store := storagetest.NewMem(nil)
	c := New(store, agg)
	var mu sync.Mutex
	sec := c.Section("files")
	sec.GuardedBy(&mu)
	require.NoError(t, sec.Save(context.Background(), []byte("offsets-1")))
	_, err := c.Save(context.Background())
	require.NoError(t, err)

	c2 := New(store, newAgg(t))
	ok, err := c2.Restore(context.Background())
	require.NoError(t, err)
	require.True(t, ok)
	c2.Section("files").GuardedBy(&mu) // registered, never started
	_, err = c2.Save(context.Background())
	require.NoError(t, err)

	c3 := New(store, newAgg(t))
	_, err = c3.Restore(context.Background())
	require.NoError(t, err)
	off, _ := c3.Section("files").Load(context.Background())
	assert.Equal(t, "offsets-1", string(off))
}

// A source behind a Gate that holds it through a long poll lets a checkpoint in at its next
// Yield; the checkpoint pulls its offsets there, and keeps the saved ones while it has none.
func TestGateAndPull(t *testing.T) {
	store := storagetest.NewMem(nil)
	c := New(store, newAgg(t))
	var g Gate
	applied := 0
	own := false
	sec := c.Section("rows")
	sec.Pull(g.Checkpoint(), func() ([]byte, bool) { return []byte(strconv.Itoa(applied)), own })
	require.NoError(t, sec.Save(context.Background(), []byte("saved")))

	saved := func() string {
		t.Helper()
		_, err := c.Save(context.Background())
		require.NoError(t, err)
		r := New(storagetest.NewMem(map[string][]byte{Key: store.Value(Key)}), newAgg(t))
		_, err = r.Restore(context.Background())
		require.NoError(t, err)
		off, _ := r.Section("rows").Load(context.Background())
		return string(off)
	}
	assert.Equal(t, "saved", saved(), "no offsets of its own: the saved ones stand")

	own = true
	g.Lock()
	stop, polled := make(chan struct{}), make(chan struct{})
	go func() { // a poll that never ends by itself, yielding between two rows
		defer close(polled)
		defer g.Unlock()
		for {
			select {
			case <-stop:
				return
			default:
			}
			applied++
			g.Yield()
		}
	}()
	got, err := strconv.Atoi(saved())
	require.NoError(t, err)
	close(stop)
	<-polled
	assert.Positive(t, got, "the checkpoint got in between two rows of the poll")
	assert.Equal(t, strconv.Itoa(applied), saved())
}

// Checkpoints waiting for a Gate are each handed it at the source's next Yield, and the source
// goes on only once they are done; a Lock of the source waits for them too.
func TestGateHandsOff(t *testing.T) {
	var g Gate
	waiting := func() int { g.mu.Lock(); defer g.mu.Unlock(); return g.waiting }
	var done atomic.Int32
	checkpoint := func() {
		l := g.Checkpoint()
		l.Lock()
		done.Add(1)
		l.Unlock()
	}
	g.Lock()
	go checkpoint()
	go checkpoint()
	require.Eventually(t, func() bool { return waiting() == 2 }, 5*time.Second, time.Millisecond)
	assert.Zero(t, done.Load(), "a checkpoint waits while the source holds the gate")
	g.Yield()
	assert.Equal(t, int32(2), done.Load(), "Yield returns once every waiting checkpoint is done")
	g.Yield() // none waiting: goes straight on
	g.Unlock()

	// the source's Lock yields to a checkpoint already waiting
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	g.Lock()
	ck := make(chan struct{})
	go func() {
		defer close(ck)
		l := g.Checkpoint()
		l.Lock()
		note("checkpoint")
		l.Unlock()
	}()
	require.Eventually(t, func() bool { return waiting() == 1 }, 5*time.Second, time.Millisecond)
	g.Unlock()
	g.Lock()
	note("source")
	g.Unlock()
	<-ck
	assert.Equal(t, []string{"checkpoint", "source"}, order)
}

// A section takes a source's lock, and its offsets when it pulls them.
func TestPushAndPull(t *testing.T) {
	store := storagetest.NewMem(nil)
	c := New(store, newAgg(t))
	var push, pull sync.Mutex
	c.Section("push").GuardedBy(&push)
	c.Section("pull").Pull(&pull, func() ([]byte, bool) { return []byte(strconv.Itoa(7)), true })
	require.NoError(t, c.Section("push").Save(context.Background(), []byte("pushed")))
	_, err := c.Save(context.Background())
	require.NoError(t, err)
	r := New(storagetest.NewMem(map[string][]byte{Key: store.Value(Key)}), newAgg(t))
	_, err = r.Restore(context.Background())
	require.NoError(t, err)
	for name, want := range map[string]string{"push": "pushed", "pull": "7"} {
		got, _ := r.Section(name).Load(context.Background())
		assert.Equal(t, want, string(got), name)
	}
	assert.True(t, push.TryLock(), "the lock is released after the checkpoint")
	assert.True(t, pull.TryLock(), "the lock is released after the checkpoint")
}
