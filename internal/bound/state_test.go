package bound

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func lowerBounds(t *testing.T, folded, raws, entries int) {
	f, r, e := maxFoldedKeys, maxRawStreams, maxStateEntries
	maxFoldedKeys, maxRawStreams, maxStateEntries = folded, raws, entries
	t.Cleanup(func() { maxFoldedKeys, maxRawStreams, maxStateEntries = f, r, e })
}

// Past the bound on cumulative streams, a new stream is dropped and counted: adding its
// total again at every export would count it many times over.
func TestStateFullDropsNewCumulativeStreams(t *testing.T) {
	lowerBounds(t, 1<<16, 3, 1<<20)
	tp := newTestProcessor(t, nil)
	res := gymResource("a")
	batch := func(tm int, n int) pmetric.Metrics {
		var pts []pt
		for i := range n {
			pts = append(pts, pt{a: fc(fmt.Sprintf("reason %d", i)), start: 1, t: tm, i: 1})
		}
		return newBatch().resource(res).counter(completed, "1", pts...).md
	}
	out := tp.run(t, batch(60, 5))
	assert.EqualValues(t, 3, only(t, out, completed).Int)
	assert.EqualValues(t, 2, tp.dropped(t, "state_full"))
	// The tracked streams go on exactly.
	out = tp.run(t, batch(120, 3))
	assert.EqualValues(t, 3, only(t, out, completed).Int)

	// Gauges and deltas keep no per-stream state: never state_full.
	out = tp.run(t, newBatch().resource(res).sum(completed, "1", true, delta,
		pt{a: fc("d1"), start: 1, t: 60, i: 1}, pt{a: fc("d2"), start: 1, t: 60, i: 1}).md)
	assert.EqualValues(t, 2, only(t, out, completed).Int)
}

// Past the bound on folded keys, a new key still folds (not remembered); the global bound
// applies over resources.
func TestStateFoldedKeysBound(t *testing.T) {
	lowerBounds(t, 1, 1<<16, 1<<20)
	tp := newTestProcessor(t, limit(2))
	out := tp.run(t, newBatch().resource(gymResource("a-pid4242")).gauge("gym.event_loop.tasks", "{task}",
		pt{a: attrs{"nemo.gym.event_loop": "main"}, t: 1, i: 1},
		pt{a: attrs{"nemo.gym.event_loop": "w1"}, t: 1, i: 2},
		pt{a: attrs{"nemo.gym.event_loop": "w2"}, t: 2, i: 3},
	).md)
	assert.EqualValues(t, 3, byAttrs(points(out, "gym.event_loop.tasks"))[overflowKey].Int)
	r := tp.st.resources[string(tp.resourceKey(resourceMap(gymResource("a-pid4242"))))]
	require.NotNil(t, r)
	assert.EqualValues(t, 1+1+1, tp.counter(t, "state_entries"), "main, the overflow series, one folded key")
}

func resourceMap(a attrs) pcommon.Map {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	putAttrs(rm.Resource().Attributes(), a)
	return rm.Resource().Attributes()
}

// Batches from several pipelines at once: the state is shared and consistent.
func TestConcurrentBatches(t *testing.T) {
	tp := newTestProcessor(t, limit(50))
	const workers, rounds = 4, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 1; r <= rounds; r++ {
				var pts []pt
				for d := range 100 {
					pts = append(pts, pt{a: sc(fmt.Sprintf("d%d", d)), start: 1, t: r, i: int64(r)})
				}
				md := newBatch().resource(gymResource(fmt.Sprintf("w%d", w))).counter(completed, "1", pts...).md
				out, err := tp.Process(context.Background(), md)
				if !assert.NoError(t, err) {
					return
				}
				var sum int64
				for _, p := range points(out, completed) {
					sum += p.Int
				}
				assert.Equal(t, int64(100*r), sum)
			}
		}()
	}
	wg.Wait()
	require.Len(t, tp.st.resources, workers)
}
