package aggregate

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// testClock is the aggregator's clock in a test: time passes when the test says.
type testClock struct{ *clock.Fake }

func (c *testClock) advance(d time.Duration) { c.Advance(d) }
func (c *testClock) ts() pcommon.Timestamp   { return pcommon.NewTimestampFromTime(c.Now()) }

// setClock makes c the aggregator's clock.
func (a *Aggregator) setClock(c clock.Clock) { a.clock, a.stamps = c, clock.NewStamps(c) }

func newTestAggregator(t *testing.T, limit int) (*Aggregator, *testClock) {
	t.Helper()
	reg, err := normalize.NewRegistry(nil, nil, nil)
	require.NoError(t, err)
	a := NewAggregator(AggregatorConfig{CardinalityLimit: limit, ExpireAfter: 5 * time.Minute, Registry: reg})
	c := &testClock{clock.NewFake(time.Unix(1_700_000_000, 0))}
	a.setClock(c.Fake)
	return a, c
}

// feed sends the lines through one stream and fails on any rejection.
func feed(t *testing.T, st liner, lines ...string) {
	t.Helper()
	for _, l := range lines {
		out, err := st.Line([]byte(l))
		require.NoError(t, err, l)
		require.NotEqual(t, ingest.Rejected, out, l)
	}
}

// point finds the data point of metric name whose attributes are attrs (key=value, ...).
type point struct {
	start, ts pcommon.Timestamp
	val       int64
	count     uint64
	sum       float64
	attrs     map[string]any
}

func points(md pmetric.Metrics, resource map[string]any, name string) []point {
	var out []point
	for i := range md.ResourceMetrics().Len() {
		rm := md.ResourceMetrics().At(i)
		if resource != nil && !equalMaps(rm.Resource().Attributes().AsRaw(), resource) {
			continue
		}
		ms := rm.ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			if m.Name() != name {
				continue
			}
			switch m.Type() {
			case pmetric.MetricTypeSum:
				for k := range m.Sum().DataPoints().Len() {
					dp := m.Sum().DataPoints().At(k)
					out = append(out, point{start: dp.StartTimestamp(), ts: dp.Timestamp(), val: dp.IntValue(), attrs: dp.Attributes().AsRaw()})
				}
			case pmetric.MetricTypeGauge:
				for k := range m.Gauge().DataPoints().Len() {
					dp := m.Gauge().DataPoints().At(k)
					out = append(out, point{ts: dp.Timestamp(), val: dp.IntValue(), attrs: dp.Attributes().AsRaw()})
				}
			case pmetric.MetricTypeHistogram:
				for k := range m.Histogram().DataPoints().Len() {
					dp := m.Histogram().DataPoints().At(k)
					out = append(out, point{start: dp.StartTimestamp(), ts: dp.Timestamp(), count: dp.Count(), sum: dp.Sum(), attrs: dp.Attributes().AsRaw()})
				}
			}
		}
	}
	return out
}

func equalMaps(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

var httpDefault = map[string]any{"gym.source": "http"}

func TestSnapshotRestartStartsSeriesAgain(t *testing.T) {
	a, c := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st, `{"event":"gc.stats","collections":[10,2,1],"collected":[100,20,1],"uncollectable":[0,0,0],"count":[5,1,0]}`)
	t0 := c.ts()
	c.advance(time.Minute)
	feed(t, st, `{"event":"gc.stats","collections":[12,2,1],"collected":[110,20,1],"uncollectable":[0,0,0],"count":[7,1,0]}`)
	md := a.Collect(Scope{})
	p := points(md, httpDefault, "gym.gc.collections_total")
	require.Len(t, p, 3)
	assert.Equal(t, int64(12), p[0].val)
	assert.Equal(t, t0, p[0].start, "a growing total keeps its start time")

	// The process restarted: its total went down.
	c.advance(time.Minute)
	t2 := c.ts()
	feed(t, st, `{"event":"gc.stats","collections":[3,2,1],"collected":[110,20,1],"uncollectable":[0,0,0],"count":[1,1,0]}`)
	md = a.Collect(Scope{})
	p = points(md, httpDefault, "gym.gc.collections_total")
	assert.Equal(t, int64(3), p[0].val)
	assert.Equal(t, t2, p[0].start, "a total that went down starts again")
	assert.Equal(t, t0, p[1].start, "other series keep theirs")
	g := points(md, httpDefault, "gym.gc.count")
	assert.Equal(t, int64(1), g[0].val, "a gauge takes the latest value, no restart")
}

func TestSnapshotEntriesThatNormaliseAlikeAreSummed(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st,
		`{"event":"server.requests","in_flight":1,"unhandled_exceptions":0,"responses":{"200":5,"0200":3},"cancelled":[{"route":"bad","response_started":false,"count":1},{"route":"worse?","response_started":false,"count":2}]}`,
		// A key absent from a later snapshot keeps its last value.
		`{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"404":1}}`,
	)
	md := a.Collect(Scope{})
	got := map[int64]int64{}
	for _, p := range points(md, httpDefault, "gym.server.responses_total") {
		got[p.attrs["http.response.status_code"].(int64)] = p.val
	}
	assert.Equal(t, map[int64]int64{200: 8, 404: 1}, got)
	c := points(md, httpDefault, "gym.server.requests.cancelled_total")
	require.Len(t, c, 1)
	assert.Equal(t, int64(3), c[0].val)
	assert.Equal(t, map[string]any{"http.route": "unmatched", "nemo.gym.request.phase": "before_response"}, c[0].attrs)
	assert.Empty(t, points(md, httpDefault, "gym.http.client.requests.in_flight"), "outbound_in_flight absent: no series")
}

func TestDriverCountsOnlyWhileOffered(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st, `{"event":"driver.counts","offered":0,"resident":0,"active":0}`)
	assert.Equal(t, 0, a.Collect(Scope{}).MetricCount(), "a server that offers nothing exports nothing")
	feed(t, st, `{"event":"driver.counts","offered":3,"resident":2,"active":1}`,
		`{"event":"driver.counts","offered":0,"resident":9,"active":9}`)
	md := a.Collect(Scope{})
	assert.Equal(t, int64(3), points(md, httpDefault, "gym.driver.rollouts.offered_total")[0].val)
	assert.Equal(t, int64(2), points(md, httpDefault, "gym.driver.rollouts.resident")[0].val, "offered 0 changes nothing")
}

// TestRolloutRewardCountsAsAScoredReward: a rollout.reward line counts its reward exactly as
// a scored rollout.completed carrying it would, into the same series; NaN counts nothing.
func TestRolloutRewardCountsAsAScoredReward(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st,
		`{"event":"rollout.completed","outcome":"scored","dispatch_name":"math"}`,
		`{"event":"rollout.reward","reward":0.5,"dispatch_name":"math"}`,
		`{"event":"rollout.completed","outcome":"scored","dispatch_name":"math","reward":0.25}`,
		`{"event":"rollout.reward","reward":1,"dispatch_name":"math","masked":true}`,
		`{"event":"rollout.reward","reward":0,"dispatch_name":"math"}`,
		`{"event":"rollout.reward","reward":-0.5,"dispatch_name":"math"}`,
		`{"event":"rollout.reward","reward":2,"dispatch_name":"code"}`,
		`{"event":"rollout.reward","reward":Infinity,"dispatch_name":"code"}`,
		`{"event":"rollout.reward","reward":-Infinity,"dispatch_name":"code"}`,
		`{"event":"rollout.reward","reward":NaN,"dispatch_name":"code"}`,
	)
	md := a.Collect(Scope{})
	got := map[string]int64{}
	for _, p := range points(md, httpDefault, "gym.rollout.rewarded_total") {
		got[fmt.Sprintf("%v/%v/%v", p.attrs["nemo.gym.rollout.dispatch.name"], p.attrs["nemo.gym.rollout.reward.range"], p.attrs["nemo.gym.rollout.masked"])] = p.val
	}
	assert.Equal(t, map[string]int64{
		"math/partial/false":   2, // one from each event
		"math/full/true":       1,
		"math/zero/false":      1,
		"math/negative/false":  1,
		"code/above_one/false": 2, // 2 and Infinity
		"code/negative/false":  1, // -Infinity
	}, got)
	c := points(md, httpDefault, "gym.rollout.completed_total")
	require.Len(t, c, 1, "rollout.reward counts no completion")
	assert.Equal(t, int64(2), c[0].val)
}

func TestCardinalityLimitOverflow(t *testing.T) {
	const limit = 4
	a, _ := newTestAggregator(t, limit)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	var total int64
	for i := range 10 {
		for range i + 1 {
			feed(t, st, `{"event":"rollout.completed","outcome":"omitted","dispatch_name":"d`+string(rune('a'+i))+`"}`)
			total++
		}
	}
	md := a.Collect(Scope{})
	p := points(md, httpDefault, "gym.rollout.completed_total")
	require.Len(t, p, limit, "limit-1 series and the overflow series")
	var sum int64
	for _, x := range p[:limit-1] {
		assert.NotContains(t, x.attrs, schema.OverflowAttribute)
		sum += x.val
	}
	assert.Equal(t, map[string]any{schema.OverflowAttribute: true}, p[limit-1].attrs)
	sum += p[limit-1].val
	assert.Equal(t, total, sum, "no count is lost")
	assert.Equal(t, int64(1+2+3), sum-p[limit-1].val, "the first limit-1 attribute sets keep their series")
	assert.Equal(t, total-6, st.Flush().Overflowed)

	// An admitted series stays admitted.
	feed(t, st, `{"event":"rollout.completed","outcome":"omitted","dispatch_name":"da"}`)
	p = points(a.Collect(Scope{}), httpDefault, "gym.rollout.completed_total")
	assert.Equal(t, int64(2), p[0].val)
}

func TestOverflowOfSnapshotsAndGauges(t *testing.T) {
	a, _ := newTestAggregator(t, 2)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st,
		`{"event":"http.pool.connects","counts":{"a":5,"b":7,"c":11}}`,
		`{"event":"http.pool.connects","counts":{"b":8}}`,
		`{"event":"event_loop.tasks","loop":"x","tasks":1}`,
		`{"event":"event_loop.tasks","loop":"y","tasks":2}`,
		`{"event":"event_loop.tasks","loop":"z","tasks":3}`,
	)
	md := a.Collect(Scope{})
	p := points(md, httpDefault, "gym.http.connection_pool.connect_total")
	require.Len(t, p, 2)
	assert.Equal(t, int64(5), p[0].val)
	assert.Equal(t, int64(8+11), p[1].val, "overflow of a snapshot total: the sum of the latest values folded")
	g := points(md, httpDefault, "gym.event_loop.tasks")
	require.Len(t, g, 2)
	assert.Equal(t, int64(3), g[1].val, "overflow of a gauge: the last value written to a folded series")
}

func TestResourceExpiresAfterOneMoreExport(t *testing.T) {
	a, c := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st, `{"event":"resource","attributes":{"service.name":"a"}}`, `{"event":"sandbox.active","provider":"p","delta":2}`)
	res := map[string]any{"service.name": "a"}
	require.Len(t, points(a.Collect(Scope{}), res, "gym.sandbox.active"), 1)
	c.advance(4 * time.Minute)
	require.Len(t, points(a.Collect(Scope{}), res, "gym.sandbox.active"), 1)
	c.advance(time.Minute)
	require.Len(t, points(a.Collect(Scope{}), res, "gym.sandbox.active"), 1, "exported once more")
	assert.Equal(t, 0, a.Len())
	assert.Empty(t, points(a.Collect(Scope{}), res, "gym.sandbox.active"), "then dropped")

	// The process comes back on the same stream: it starts afresh.
	feed(t, st, `{"event":"sandbox.active","provider":"p","delta":1}`)
	p := points(a.Collect(Scope{}), res, "gym.sandbox.active")
	require.Len(t, p, 1)
	assert.Equal(t, int64(1), p[0].val)
}

func TestRejectedResourceLineFallsBackToDefault(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("tcp", ""))
	feed(t, st, `{"event":"resource","attributes":{"service.name":"a"}}`)
	out, err := st.Line([]byte(`{"event":"resource","attributes":{"service.name":null}}`))
	require.Error(t, err)
	require.Equal(t, ingest.Rejected, out)
	feed(t, st, `{"event":"sandbox.create_retry","provider":"p"}`)
	md := a.Collect(Scope{})
	assert.Len(t, points(md, map[string]any{"gym.source": "tcp"}, "gym.sandbox.create_retry_total"), 1)
	assert.Empty(t, points(md, map[string]any{"service.name": "a"}, "gym.sandbox.create_retry_total"))
}

// A rejected line changes nothing, and the lines around it are kept.
func TestRejectedLineChangesNothing(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	lines := []string{
		`{"event":"server.requests","in_flight":1,"unhandled_exceptions":0,"responses":{"200":5}}`,
		`{"event":"server.requests","in_flight":9,"unhandled_exceptions":9,"responses":{"200":9,"600":1}}`,
		`{"event":"server.requests","in_flight":2,"unhandled_exceptions":0,"responses":{"200":6}}`,
	}
	var rejected int
	for _, l := range lines {
		if out, _ := st.Line([]byte(l)); out == ingest.Rejected {
			rejected++
		}
	}
	assert.Equal(t, 1, rejected)
	md := a.Collect(Scope{})
	assert.Equal(t, int64(6), points(md, httpDefault, "gym.server.responses_total")[0].val)
	assert.Equal(t, int64(2), points(md, httpDefault, "gym.server.requests.in_flight")[0].val)
	assert.Equal(t, int64(1), st.Flush().Rejected["out_of_range"]+st.Flush().Rejected["invalid_value"])
}

// Many streams of many processes ingest at once; every count arrives.
func TestConcurrentIngest(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	const streams, perStream = 8, 2000
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := newLines(a, 1<<16, events.DefaultResource("tcp", ""))
			res := `{"event":"resource","attributes":{"service.name":"p` + string(rune('0'+i%4)) + `"}}`
			_, _ = st.Line([]byte(res))
			for range perStream {
				_, _ = st.Line([]byte(`{"event":"sandbox.active","provider":"docker","delta":1}`))
			}
		}()
	}
	wg.Wait()
	md := a.Collect(Scope{})
	var sum int64
	for _, p := range points(md, nil, "gym.sandbox.active") {
		sum += p.val
		assert.Equal(t, int64(2*perStream), p.val, "two streams per process")
	}
	assert.Equal(t, int64(streams*perStream), sum)
}

func TestExportShape(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("file", "/var/log/gym/a.events.jsonl"))
	feed(t, st, `{"event":"event_loop.lag","loop":"main","lag_ms":3.2}`)
	md := a.Collect(Scope{Name: "s", Version: "v"})
	require.Equal(t, 1, md.ResourceMetrics().Len())
	rm := md.ResourceMetrics().At(0)
	assert.Equal(t, map[string]any{"gym.source": "file", "log.file.path": "/var/log/gym/a.events.jsonl"}, rm.Resource().Attributes().AsRaw())
	assert.Equal(t, "s", rm.ScopeMetrics().At(0).Scope().Name())
	m := rm.ScopeMetrics().At(0).Metrics().At(0)
	lag, _ := schema.Lookup("gym.event_loop.lag_ms")
	def := schema.Get(lag)
	assert.Equal(t, def.Name, m.Name())
	assert.Equal(t, def.Unit, m.Unit())
	assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.Histogram().AggregationTemporality())
	dp := m.Histogram().DataPoints().At(0)
	assert.Equal(t, def.Bounds, dp.ExplicitBounds().AsRaw())
	assert.Equal(t, len(def.Bounds)+1, dp.BucketCounts().Len())
	assert.Equal(t, 3.2, dp.Min())
	assert.Equal(t, 3.2, dp.Max())
	assert.True(t, strings.HasPrefix(def.Name, "gym."))
}

// A restarted process (same service instance, new pid) retires its old resource: exported
// once more, alone of its instance (the new resource waits for the next collection, so that a
// backend keeping one value per job/instance sees the old process's last total), then dropped;
// its series are not merged into the new ones.
func TestRestartedProcessRetiresItsOldResource(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	old := map[string]any{"service.name": "gym", "service.instance.id": "r1-rank0", "process.pid": int64(1002)}
	neu := map[string]any{"service.name": "gym", "service.instance.id": "r1-rank0", "process.pid": int64(4242)}
	other := map[string]any{"service.name": "gym", "service.instance.id": "r1-rank1", "process.pid": int64(1003)}
	feed(t, st,
		`{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"r1-rank0","process.pid":1002}}`,
		`{"event":"server.requests","in_flight":0,"unhandled_exceptions":30,"responses":{}}`,
		`{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"r1-rank1","process.pid":1003}}`,
		`{"event":"server.requests","in_flight":0,"unhandled_exceptions":7,"responses":{}}`,
	)
	require.Len(t, points(a.Collect(Scope{}), old, "gym.server.requests.unhandled_exceptions_total"), 1)
	feed(t, st,
		`{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"r1-rank0","process.pid":1002}}`,
		`{"event":"server.requests","in_flight":0,"unhandled_exceptions":40,"responses":{}}`,
		`{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"r1-rank0","process.pid":4242}}`,
		`{"event":"server.requests","in_flight":0,"unhandled_exceptions":5,"responses":{}}`,
	)
	md := a.Collect(Scope{})
	require.Equal(t, 2, md.ResourceMetrics().Len(), "the old resource is exported once more, the new one waits")
	assert.Equal(t, int64(40), points(md, old, "gym.server.requests.unhandled_exceptions_total")[0].val, "the old process's last total")
	assert.Empty(t, points(md, neu, "gym.server.requests.unhandled_exceptions_total"), "not in the same collection")
	md = a.Collect(Scope{})
	assert.Empty(t, points(md, old, "gym.server.requests.unhandled_exceptions_total"), "then dropped")
	assert.Len(t, points(md, other, "gym.server.requests.unhandled_exceptions_total"), 1, "other instances stay")
	require.Len(t, points(md, neu, "gym.server.requests.unhandled_exceptions_total"), 1, "the new one follows")
	assert.Equal(t, int64(5), points(md, neu, "gym.server.requests.unhandled_exceptions_total")[0].val)
}

// Two restarts within one collection: each process's last total leaves in a collection of its
// own, oldest first.
func TestRestartsWithinOneCollectionLeaveInOrder(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	var pids []int64
	for pid := int64(1); pid <= 3; pid++ {
		pids = append(pids, pid)
		feed(t, st,
			fmt.Sprintf(`{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"i","process.pid":%d}}`, pid),
			`{"event":"sandbox.create_retry","provider":"p"}`)
	}
	for _, pid := range pids {
		md := a.Collect(Scope{})
		require.Equal(t, 1, md.ResourceMetrics().Len(), "collection %d", pid)
		assert.Equal(t, pid, func() int64 {
			v, _ := md.ResourceMetrics().At(0).Resource().Attributes().Get("process.pid")
			return v.Int()
		}())
	}
}

// Past max_resources a new resource line is rejected with a reason, and its events are counted
// under the stream's default resource; known resources go on.
func TestMaxResources(t *testing.T) {
	a, c := newTestAggregator(t, 2000)
	a.cfg.MaxResources = 3 // the default resource and two processes
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	feed(t, st, `{"event":"sandbox.create_retry","provider":"p"}`,
		`{"event":"resource","attributes":{"service.name":"a"}}`, `{"event":"sandbox.create_retry","provider":"p"}`,
		`{"event":"resource","attributes":{"service.name":"b"}}`, `{"event":"sandbox.create_retry","provider":"p"}`)
	out, err := st.Line([]byte(`{"event":"resource","attributes":{"service.name":"c"}}`))
	require.Equal(t, ingest.Rejected, out)
	require.ErrorContains(t, err, "max_resources 3")
	assert.Equal(t, int64(1), st.Flush().Rejected[ReasonTooManyResources])
	feed(t, st, `{"event":"sandbox.create_retry","provider":"p"}`,
		`{"event":"resource","attributes":{"service.name":"a"}}`, `{"event":"sandbox.create_retry","provider":"p"}`)
	md := a.Collect(Scope{})
	assert.Equal(t, 3, md.ResourceMetrics().Len())
	assert.Equal(t, int64(2), points(md, httpDefault, "gym.sandbox.create_retry_total")[0].val, "c's event went to the default resource")
	assert.Equal(t, int64(2), points(md, map[string]any{"service.name": "a"}, "gym.sandbox.create_retry_total")[0].val)

	// Once resources expire there is room again.
	c.advance(10 * time.Minute)
	a.Collect(Scope{})
	require.Equal(t, 0, a.Len())
	feed(t, st, `{"event":"resource","attributes":{"service.name":"c"}}`, `{"event":"sandbox.create_retry","provider":"p"}`)
	assert.Len(t, points(a.Collect(Scope{}), map[string]any{"service.name": "c"}, "gym.sandbox.create_retry_total"), 1)
}

// max_resources is a hard bound even when the refused resource line is a stream's first
// line: the default resource its events fall back to must fit too (it once held one more).
func TestMaxResourcesCountsTheDefaultFallback(t *testing.T) {
	a, _ := newTestAggregator(t, 2000)
	a.cfg.MaxResources = 3
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	for _, name := range []string{"a", "b", "c", "d"} {
		_, _ = st.Line([]byte(`{"event":"resource","attributes":{"service.name":"` + name + `"}}`))
		feed(t, st, `{"event":"sandbox.create_retry","provider":"p"}`)
		assert.LessOrEqual(t, a.Len(), 3, "after resource %s", name)
	}
	md := a.Collect(Scope{})
	assert.Equal(t, 3, md.ResourceMetrics().Len(), "a, b and the default resource")
	assert.Equal(t, int64(2), points(md, httpDefault, "gym.sandbox.create_retry_total")[0].val, "c's and d's events")
	assert.Equal(t, int64(2), st.Flush().Rejected[ReasonTooManyResources])

	// Another stream whose default exists already may use the last place.
	a2, _ := newTestAggregator(t, 2000)
	a2.cfg.MaxResources = 2
	s1 := newLines(a2, 1<<16, events.DefaultResource("http", ""))
	feed(t, s1, `{"event":"sandbox.create_retry","provider":"p"}`, `{"event":"resource","attributes":{"service.name":"a"}}`)
	assert.Equal(t, 2, a2.Len())
	s2 := newLines(a2, 1<<16, events.DefaultResource("http", ""))
	out, _ := s2.Line([]byte(`{"event":"resource","attributes":{"service.name":"b"}}`))
	assert.Equal(t, ingest.Rejected, out, "full")
}

// newLines is the decoder of one source's lines whose events go to a's sink, as the receiver
// makes them.
func newLines(a *Aggregator, maxLineBytes int, defaultAttrs []events.ResourceAttr) *events.LineDecoder {
	return events.NewLineDecoder(maxLineBytes, a.NewSink, defaultAttrs)
}

// liner takes lines: a source's line decoder.
type liner interface {
	Line(line []byte) (ingest.Outcome, error)
}
