package aggregate

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Cardinality bombs: a sender that puts a new value in every free-valued attribute
// of every line, or announces a new resource on every line. Per resource every instrument keeps
// at most cardinality_limit series, the overflow series included, and nothing sent is lost
// (the overflow series holds the rest); resources expire, and their memory is given back.
//
// TestBomb runs bombN (100,000) distinct values per attribute and bombN distinct resources,
// in every `go test` (with -race as well: under a minute there, seconds without). TestBombFull
// runs the full 1,000,000 values per attribute in a plain `go test` (a few seconds);
// it is skipped with -short and under the race detector (where it would take minutes):
//
//	go test -run 'TestBomb' -v ./internal/aggregate
//
// Both log the heap they measured (live heap after GC, runtime.MemStats.HeapAlloc) per series
// and per resource. Only structural bounds are asserted (series counts, the folded-snapshot
// memory bound, resources back to 0 after expiry, the heap given back), never timings.

const (
	bombN     = 100_000
	bombFullN = 1_000_000
	bombLimit = schema.DefaultCardinalityLimit // 2000
)

func TestBomb(t *testing.T) {
	runBombs(t, bombN)
}

func TestBombFull(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the 1,000,000-value bombs are skipped (TestBomb runs 100,000)")
	}
	if raceEnabled() {
		t.Skip("race detector: the 1,000,000-value bombs are skipped (TestBomb runs 100,000)")
	}
	runBombs(t, bombFullN)
}

// runBombs runs the bombs of n distinct values per attribute; the resource bomb (bombN
// resources) only in TestBomb.
func runBombs(t *testing.T, n int) {
	t.Run("dispatch_name", func(t *testing.T) { bombDispatchName(t, n) })
	t.Run("provider", func(t *testing.T) { bombProvider(t, n) })
	t.Run("route", func(t *testing.T) { bombRoute(t, n) })
	t.Run("failure_kind", func(t *testing.T) { bombFailure(t, n, "failure_kind", "ns:k") })
	t.Run("failure_type", func(t *testing.T) { bombFailure(t, n, "failure_type", "pkg.Error") })
	if n == bombN {
		t.Run("resources", func(t *testing.T) { bombResources(t, bombN) })
		t.Run("every_instrument_at_the_limit", bombEveryInstrument)
	}
}

// raceEnabled reports whether the test binary was built with -race (go records it in the
// binary's build settings).
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// liveHeap is the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// bombFeed sends n lines built by line through st; each must be accepted.
func bombFeed(t *testing.T, st liner, n int, line func(b []byte, i int) []byte) {
	t.Helper()
	var b []byte
	for i := range n {
		b = line(b[:0], i)
		if out, err := st.Line(b); out != ingest.Accepted {
			t.Fatalf("line %d %q: %v %v", i, b, out, err)
		}
	}
}

// bombSource is a source's line decoder with its sink, whose current resource the tests read.
type bombSource struct {
	*events.LineDecoder
	sink *Sink
}

// bombStream returns a source whose current resource is {service.name: name}.
func bombStream(t *testing.T, a *Aggregator, name string) (*bombSource, map[string]any) {
	t.Helper()
	st := &bombSource{}
	st.LineDecoder = events.NewLineDecoder(1<<20, func(attrs []events.ResourceAttr, stats *ingest.Stats) events.Sink {
		st.sink = a.newSink(attrs, stats)
		return st.sink
	}, events.DefaultResource("tcp", ""))
	feed(t, st, `{"event":"resource","attributes":{"service.name":"`+name+`"}}`)
	st.Flush().Accepted = 0
	return st, map[string]any{"service.name": name}
}

// instrumentSeries checks that instrument id of resource res holds exactly the limit, its
// last series the overflow one, and returns the sum of its values (counts for a histogram).
func instrumentSeries(t *testing.T, md pmetric.Metrics, res map[string]any, id schema.InstrumentID, limit int) (total, overflow int64) {
	t.Helper()
	p := points(md, res, schema.Get(id).Name)
	require.Len(t, p, limit, "%s: limit-1 series and the overflow series", schema.Get(id).Name)
	for i, x := range p {
		v := x.val
		if schema.Get(id).Kind == schema.KindHistogram {
			v = int64(x.count)
		}
		total += v
		if i == limit-1 {
			assert.Equal(t, map[string]any{schema.OverflowAttribute: true}, x.attrs)
			overflow = v
		} else {
			assert.NotContains(t, x.attrs, schema.OverflowAttribute)
		}
	}
	return total, overflow
}

type bombFigures struct {
	what string
	base uint64
}

func startFigures(what string) bombFigures { return bombFigures{what: what, base: liveHeap()} }

// log reports the heap the bomb holds, per series, once its lines are in.
func (f bombFigures) log(t *testing.T, n, series int) {
	t.Helper()
	grown := int64(liveHeap()) - int64(f.base)
	t.Logf("%s: %d distinct values, %d series kept: heap +%.1f MiB, %d B per series kept",
		f.what, n, series, float64(grown)/(1<<20), grown/int64(max(series, 1)))
}

// Dispatch names: rollout.completed (scored, with a reward) counts into completed_total and
// rewarded_total, both keyed by the dispatch name.
func bombDispatchName(t *testing.T, n int) {
	fig := startFigures("dispatch_name")
	a, _ := newTestAggregator(t, bombLimit)
	st, res := bombStream(t, a, "dispatch")
	bombFeed(t, st, n, func(b []byte, i int) []byte {
		b = append(b, `{"event":"rollout.completed","outcome":"scored","dispatch_name":"d`...)
		b = strconv.AppendInt(b, int64(i), 10)
		return append(b, `","reward":0.5}`...)
	})
	fig.log(t, n, 2*bombLimit)
	md := a.Collect(Scope{})
	for _, id := range []schema.InstrumentID{schema.GymRolloutCompletedTotal, schema.GymRolloutRewardedTotal} {
		total, overflow := instrumentSeries(t, md, res, id, bombLimit)
		assert.Equal(t, int64(n), total, "every rollout counted once")
		assert.Equal(t, int64(n-(bombLimit-1)), overflow)
	}
	assert.Equal(t, int64(2*(n-(bombLimit-1))), st.Flush().Overflowed)
	assert.Equal(t, int64(n), st.Flush().Accepted)
}

// Providers: the four sandbox instruments, each value on one of them in turn.
func bombProvider(t *testing.T, n int) {
	fig := startFigures("provider")
	a, _ := newTestAggregator(t, bombLimit)
	st, res := bombStream(t, a, "provider")
	var sent [4]int64
	var delta int64
	bombFeed(t, st, n, func(b []byte, i int) []byte {
		sent[i%4]++
		switch i % 4 {
		case 0:
			b = append(b, `{"event":"sandbox.create_retry","provider":"p`...)
			b = strconv.AppendInt(b, int64(i), 10)
			return append(b, `"}`...)
		case 1:
			d := int64(i%3 - 1)
			delta += d
			b = append(b, `{"event":"sandbox.active","provider":"p`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `","delta":`...)
			b = strconv.AppendInt(b, d, 10)
			return append(b, '}')
		case 2:
			b = append(b, `{"event":"sandbox.startup","provider":"p`...)
		default:
			b = append(b, `{"event":"sandbox.exec","provider":"p`...)
		}
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","duration_ms":`...)
		b = strconv.AppendInt(b, int64(i%1000), 10)
		return append(b, '}')
	})
	fig.log(t, n, 4*bombLimit)
	md := a.Collect(Scope{})
	total, _ := instrumentSeries(t, md, res, schema.GymSandboxCreateRetryTotal, bombLimit)
	assert.Equal(t, sent[0], total)
	_, _ = instrumentSeries(t, md, res, schema.GymSandboxActive, bombLimit)
	var active int64
	for _, p := range points(md, res, schema.Get(schema.GymSandboxActive).Name) {
		active += p.val
	}
	assert.Equal(t, delta, active, "the up-down counter's deltas add up, overflow included")
	total, _ = instrumentSeries(t, md, res, schema.GymSandboxStartupDurationMs, bombLimit)
	assert.Equal(t, sent[2], total)
	total, _ = instrumentSeries(t, md, res, schema.GymSandboxExecDurationMs, bombLimit)
	assert.Equal(t, sent[3], total)
}

// Routes: server.requests snapshots whose `cancelled` entries name a new route each, 1,000
// entries a line. The overflow series of a snapshot total holds the sum of the latest values
// of the routes folded into it; the memory that takes is bounded by maxFoldedSnapshots.
func bombRoute(t *testing.T, n int) {
	const perLine = 1000
	fig := startFigures("route")
	a, _ := newTestAggregator(t, bombLimit)
	st, res := bombStream(t, a, "route")
	count := func(i int) int64 { return int64(i%5 + 1) }
	entry := func(b []byte, i int, c int64) []byte {
		b = append(b, `{"route":"/r/`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","response_started":`...)
		b = strconv.AppendBool(b, i%2 == 1)
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, c, 10)
		return append(b, '}')
	}
	snapshot := func(b []byte, from, to int, c func(int) int64) []byte {
		b = append(b, `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"200":1},"cancelled":[`...)
		for i := from; i < to; i++ {
			if i > from {
				b = append(b, ',')
			}
			b = entry(b, i, c(i))
		}
		return append(b, "]}"...)
	}
	var sent int64
	for i := range n {
		sent += count(i)
	}
	lines := (n + perLine - 1) / perLine
	bombFeed(t, st, lines, func(b []byte, l int) []byte {
		return snapshot(b, l*perLine, min((l+1)*perLine, n), count)
	})
	fig.log(t, n, bombLimit)
	r := st.sink.cur
	require.NotNil(t, r)
	cancelled := r.insts[schema.GymServerRequestsCancelledTotal]
	require.NotNil(t, cancelled)
	assert.LessOrEqual(t, len(cancelled.folded), maxFoldedSnapshots, "the folded routes remembered are bounded")
	t.Logf("route: the heap above includes the latest values of %d folded routes (the bound is %d)", len(cancelled.folded), maxFoldedSnapshots)
	assert.Len(t, cancelled.order, bombLimit-1)

	md := a.Collect(Scope{})
	total, overflow := instrumentSeries(t, md, res, schema.GymServerRequestsCancelledTotal, bombLimit)
	assert.Equal(t, sent, total, "the overflow series holds the latest value of every folded route")
	var admitted int64
	for i := range bombLimit - 1 {
		admitted += count(i)
	}
	assert.Equal(t, sent-admitted, overflow)
	assert.Equal(t, int64(n-(bombLimit-1)), st.Flush().Overflowed)

	// A later snapshot raises 1,000 folded routes that are remembered by one each: the
	// overflow total rises by exactly 1,000, not by their whole values again.
	from := bombLimit - 1 + 1000
	if from+perLine <= min(n, bombLimit-1+maxFoldedSnapshots) {
		bombFeed(t, st, 1, func(b []byte, _ int) []byte {
			return snapshot(b, from, from+perLine, func(i int) int64 { return count(i) + 1 })
		})
		_, overflow2 := instrumentSeries(t, a.Collect(Scope{}), res, schema.GymServerRequestsCancelledTotal, bombLimit)
		assert.Equal(t, overflow+perLine, overflow2)
	}
}

// Failure kinds (namespaced, so that they stay themselves) and failure types (exception
// class names): rollout.completed with outcome failed.
func bombFailure(t *testing.T, n int, field, prefix string) {
	fig := startFigures(field)
	a, _ := newTestAggregator(t, bombLimit)
	st, res := bombStream(t, a, field)
	bombFeed(t, st, n, func(b []byte, i int) []byte {
		b = append(b, `{"event":"rollout.completed","outcome":"failed","dispatch_name":"math","failure_class":"agent_request_failed","`...)
		b = append(b, field...)
		b = append(b, `":"`...)
		b = append(b, prefix...)
		b = strconv.AppendInt(b, int64(i), 10)
		return append(b, `"}`...)
	})
	fig.log(t, n, bombLimit)
	md := a.Collect(Scope{})
	total, overflow := instrumentSeries(t, md, res, schema.GymRolloutCompletedTotal, bombLimit)
	assert.Equal(t, int64(n), total)
	assert.Equal(t, int64(n-(bombLimit-1)), overflow)
	// The values were kept as sent (valid kinds and types are not folded into a fallback).
	p := points(md, res, schema.Get(schema.GymRolloutCompletedTotal).Name)
	key := map[string]string{"failure_kind": "nemo.gym.failure_kind", "failure_type": "nemo.gym.failure_type"}[field]
	assert.Equal(t, prefix+"0", p[0].attrs[key])
	assert.Equal(t, prefix+strconv.Itoa(bombLimit-2), p[bombLimit-2].attrs[key])
}

// Resources: a new resource on every other line. Each is bounded by the cardinality limit;
// their number is bounded by expiry: after expire_after without a line each is exported once
// more and dropped, and the heap it held is given back.
func bombResources(t *testing.T, n int) {
	base := liveHeap()
	a, c := newTestAggregator(t, bombLimit)
	st := newLines(a, 1<<16, events.DefaultResource("tcp", ""))
	retry := []byte(`{"event":"sandbox.create_retry","provider":"docker"}`)
	bombFeed(t, st, n, func(b []byte, i int) []byte {
		b = append(b, `{"event":"resource","attributes":{"service.name":"nemo-gym/math","service.instance.id":"r`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `-rank0","nemo.run.id":"r1","process.pid":`...)
		b = strconv.AppendInt(b, int64(10_000+i), 10)
		b = append(b, `,"host.name":"node7"}}`...)
		if out, err := st.Line(b); out != ingest.Accepted {
			t.Fatalf("resource line %d: %v", i, err)
		}
		return append(b[:0], retry...)
	})
	require.Equal(t, n, a.Len())
	held := liveHeap()
	grown := int64(held) - int64(base)
	t.Logf("resources: %d resources of 4 attributes with one series each: heap +%.1f MiB, %d B per resource",
		n, float64(grown)/(1<<20), grown/int64(n))

	// A collection (every collection_interval), then half of them send again within
	// expire_after; the rest stay silent.
	require.Equal(t, n, a.Collect(Scope{}).ResourceMetrics().Len())
	c.advance(3 * time.Minute)
	for i := 0; i < n; i += 2 {
		_, _ = st.Line(fmt.Appendf(nil, `{"event":"resource","attributes":{"service.name":"nemo-gym/math","service.instance.id":"r%d-rank0","nemo.run.id":"r1","process.pid":%d,"host.name":"node7"}}`, i, 10_000+i))
		_, _ = st.Line(retry)
	}
	_ = a.Collect(Scope{})
	c.advance(2 * time.Minute) // 5 minutes since the silent ones last sent
	exported := a.Collect(Scope{}).ResourceMetrics().Len()
	assert.Equal(t, n, exported, "every resource is in the collection that expires it")
	assert.Equal(t, n/2, a.Len(), "the silent half expired")
	c.advance(5 * time.Minute)
	_ = a.Collect(Scope{})
	assert.Equal(t, 0, a.Len(), "every resource expired")
	assert.Equal(t, 0, a.Collect(Scope{}).ResourceMetrics().Len())

	runtime.KeepAlive(st)
	after := liveHeap()
	t.Logf("resources: after expiry the heap is %+.1f MiB from before the bomb", (float64(after)-float64(base))/(1<<20))
	assert.Less(t, int64(after)-int64(base), grown/4+(4<<20), "expired resources give their memory back")
}

// The heaviest one resource can get: every instrument with a free-valued attribute at the
// limit, and every status code. Logs the heap of such a resource.
func bombEveryInstrument(t *testing.T) {
	fig := startFigures("one resource, every instrument at the limit")
	a, _ := newTestAggregator(t, bombLimit)
	st, res := bombStream(t, a, "everything")
	n := bombLimit + 100
	lines := []string{
		`{"event":"rollout.completed","outcome":"scored","dispatch_name":"d%d","reward":1}`,
		`{"event":"sandbox.active","provider":"p%d","delta":1}`,
		`{"event":"sandbox.startup","provider":"p%d","duration_ms":1}`,
		`{"event":"sandbox.exec","provider":"p%d","duration_ms":1}`,
		`{"event":"sandbox.create_retry","provider":"p%d"}`,
		`{"event":"server.startup_stage","stage":"s%d","server_name":"s","duration_ms":1}`,
		`{"event":"http.pool.queue","queue_constraint":"total","queue_outcome":"ok","server_name":"s%d","duration_ms":1}`,
		`{"event":"http.pool.connect","outcome":"ok","server_name":"s%d","duration_ms":1}`,
		`{"event":"http.pool.connects","counts":{"s%d":1}}`,
		`{"event":"event_loop.lag","loop":"l%d","lag_ms":1}`,
		`{"event":"event_loop.tasks","loop":"l%d","tasks":1}`,
		`{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{},"cancelled":[{"route":"/r/%d","response_started":false,"count":1}]}`,
	}
	for _, l := range lines {
		bombFeed(t, st, n, func(b []byte, i int) []byte { return fmt.Appendf(b, l, i) })
	}
	bombFeed(t, st, 500, func(b []byte, i int) []byte {
		return fmt.Appendf(b, `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"%d":1}}`, 100+i)
	})
	series := 0
	for _, in := range st.sink.cur.insts {
		if in != nil {
			series += len(in.order)
			if in.overflow != nil {
				series++
			}
		}
	}
	fig.log(t, n, series) // before Collect: the heap of the aggregate, not of an export
	md := a.Collect(Scope{})
	assert.Equal(t, series, md.DataPointCount())
	for i := range md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().Len() {
		m := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(i)
		assert.LessOrEqual(t, len(points(md, res, m.Name())), bombLimit, m.Name())
	}
	assert.Equal(t, 1, a.Len())
}
