package bound

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Memory bounds of the state kept across batches (docs/processor.md, "Memory"). Variables
// only so that tests can lower them.
var (
	// maxFoldedKeys bounds, per resource and instrument, the bounded attribute sets
	// remembered as folded into the overflow series (so that they stay folded). Past it a
	// new set still folds, without being remembered.
	maxFoldedKeys = 1 << 16
	// maxRawStreams bounds, per resource and instrument, the cumulative streams (attribute
	// sets as received) whose latest value is remembered, so that a series merged from
	// several of them, or the overflow series, is the sum of their latest values. A new
	// cumulative stream past it is dropped and counted (state_full).
	maxRawStreams = 1 << 16
	// maxStateEntries bounds folded keys and cumulative streams over all resources.
	maxStateEntries = 1 << 19
)

// state is what a Bounder remembers across batches: per resource (identity: its typed
// attribute set) and instrument, the admitted series, the overflow series, the attribute sets
// folded into it, and the latest value of each cumulative stream feeding a series.
type state struct {
	limit     int   // cardinality_limit
	idle      int64 // series_idle_timeout, ns
	resources map[string]*resourceState
	lastSweep int64

	series  int // admitted and overflow series
	entries int // folded keys and cumulative streams (bounded by maxStateEntries)
}

type resourceState struct {
	seen  int64
	insts [schema.NumInstruments]*instState
	// unknown: the instruments bounded by the generic rules, by instKey (unknown.go); at
	// most maxUnknownInstruments.
	unknown map[string]*instState
	// The received resources it was bounded from (resource.go): the first (0: as received),
	// then the others that merged into it, with when each was last seen.
	recv     uint64
	recvSet  bool
	received map[uint64]int64
}

type instState struct {
	series   map[string]*series    // admitted, by bounded key
	folded   map[string]*foldedKey // bounded keys folded into the overflow series
	overflow *series
	raws     map[uint64]*rawStream // cumulative streams by hash of their received attributes
}

// foldedKey is a bounded attribute set folded into the overflow series.
type foldedKey struct{ seen int64 }

// series is one output series: an admitted attribute set, or the overflow series.
type series struct {
	seen     int64
	overflow bool
	cum      *cumState // cumulative state, once a cumulative point fed it
}

// cumState is the cumulative value of a series: the sum of the latest values of the streams
// feeding it (for a counter, a restarted stream's earlier total stays counted).
type cumState struct {
	gen     uint64    // the batch that created it
	streams int       // streams that ever fed it
	bounds  []float64 // a histogram's
	total
}

// rawStream is the latest point of one cumulative stream as received.
type rawStream struct {
	s        *series
	seen     int64
	start    pcommon.Timestamp
	ts       pcommon.Timestamp
	isDouble bool
	i        int64
	f        float64
	count    uint64
	sum      float64
	buckets  []uint64
}

func newState(limit int, idle time.Duration) *state {
	return &state{limit: limit, idle: int64(idle), resources: map[string]*resourceState{}}
}

// resource returns the state of the resource with the given identity key.
func (st *state) resource(key []byte, now int64) *resourceState {
	r, ok := st.resources[string(key)]
	if !ok {
		r = &resourceState{}
		st.resources[string(key)] = r
	}
	r.seen = now
	return r
}

func (r *resourceState) inst(id schema.InstrumentID) *instState {
	is := r.insts[id]
	if is == nil {
		is = &instState{series: map[string]*series{}}
		r.insts[id] = is
	}
	return is
}

// lookup returns the series of a bounded key: the admitted series, else a new one while the
// instrument has room (cardinality_limit - 1 series, the overflow series being the last),
// else the overflow series. A key folded once stays folded while it is remembered, and an
// admitted key stays admitted: a series never moves between its own stream and the overflow.
func (st *state) lookup(is *instState, key []byte, now int64) (s *series, overflowed bool) {
	if s, ok := is.series[string(key)]; ok {
		s.seen = now
		return s, false
	}
	if f, ok := is.folded[string(key)]; ok {
		f.seen = now
		return st.overflowOf(is, now), true
	}
	if len(is.series) < st.limit-1 {
		s := &series{seen: now}
		is.series[string(key)] = s
		st.series++
		return s, false
	}
	if len(is.folded) < maxFoldedKeys && st.entries < maxStateEntries {
		if is.folded == nil {
			is.folded = map[string]*foldedKey{}
		}
		is.folded[string(key)] = &foldedKey{seen: now}
		st.entries++
	}
	return st.overflowOf(is, now), true
}

func (st *state) overflowOf(is *instState, now int64) *series {
	if is.overflow == nil {
		is.overflow = &series{overflow: true}
		st.series++
	}
	is.overflow.seen = now
	return is.overflow
}

// applyResult is what a cumulative point did to its series.
type applyResult uint8

const (
	applied       applyResult = iota
	appliedStale              // older than the stream's latest point: superseded, no effect
	appliedFull               // a new stream and no room to track it
	appliedBounds             // histogram bounds other than the series': not merged
)

// stream returns the tracked stream h of series s, creating it when there is room.
func (st *state) stream(is *instState, s *series, h uint64, now int64) (r *rawStream, fresh bool) {
	if r = is.raws[h]; r != nil && r.s == s {
		r.seen = now
		return r, false
	}
	// r != nil with another series: a 64-bit hash collision of two streams as received
	// (or a stream that bounds differently now); the newer one takes the slot over.
	if r == nil {
		if len(is.raws) >= maxRawStreams || st.entries >= maxStateEntries {
			return nil, false
		}
		if is.raws == nil {
			is.raws = map[uint64]*rawStream{}
		}
		st.entries++
	}
	r = &rawStream{s: s, seen: now}
	is.raws[h] = r
	return r, true
}

// startsAfter reports whether a point's start time says its stream restarted since the
// stream's latest point (both start times set).
func startsAfter(start, prev pcommon.Timestamp) bool {
	return start != 0 && prev != 0 && start > prev
}

// isStale reports whether a point is older than the stream's latest point: an earlier time,
// or an earlier start (a point from before a restart).
func isStale(r *rawStream, start, ts pcommon.Timestamp) bool {
	return ts < r.ts || (start != 0 && r.start != 0 && start < r.start)
}

// newCum returns the cumulative state of s, creating it in batch gen.
func newCum(s *series, gen uint64, start pcommon.Timestamp) *cumState {
	if s.cum == nil {
		s.cum = &cumState{gen: gen, total: total{start: start}}
	}
	return s.cum
}

// joined notes a new stream of c with start time start: in the batch that created the series,
// the series starts at the earliest start of its streams.
func (c *cumState) joined(gen uint64, start pcommon.Timestamp) {
	c.streams++
	if c.gen == gen && start != 0 && (c.start == 0 || start < c.start) {
		c.start = start
	}
}

// applyNumber applies a cumulative Sum point of stream h to series s. monotonic: a counter,
// whose restarted stream (a later start, or a lower value) keeps its earlier total counted;
// an up-down counter's series is the sum of its streams' latest values.
func (st *state) applyNumber(is *instState, s *series, h uint64, dp pmetric.NumberDataPoint, monotonic bool, gen uint64, now int64) applyResult {
	start, ts := dp.StartTimestamp(), dp.Timestamp()
	isDouble := dp.ValueType() == pmetric.NumberDataPointValueTypeDouble
	var i int64
	var f float64
	if isDouble {
		f = dp.DoubleValue()
	} else {
		i = dp.IntValue()
	}
	r, fresh := st.stream(is, s, h, now)
	if r == nil {
		return appliedFull
	}
	c := newCum(s, gen, start)
	switch {
	case fresh:
		c.joined(gen, start)
	case isStale(r, start, ts):
		return appliedStale
	default:
		reset := startsAfter(start, r.start)
		if monotonic && !reset {
			reset = (isDouble && r.isDouble && f < r.f) || (!isDouble && !r.isDouble && i < r.i)
		}
		switch {
		case reset && c.streams == 1:
			// The series' only stream restarted: so does the series.
			c.i, c.f = 0, 0
			if start != 0 {
				c.start = start
			}
		case reset && monotonic:
			// Its earlier total stays counted.
		default:
			c.i -= r.i
			c.f -= r.f
		}
	}
	c.i += i
	c.f += f
	c.isDouble = c.isDouble || isDouble
	if ts > c.ts {
		c.ts = ts
	}
	r.start, r.ts, r.isDouble, r.i, r.f = start, ts, isDouble, i, f
	if !isDouble {
		r.f = 0
	} else {
		r.i = 0
	}
	return applied
}

// applyHistogram applies a cumulative Histogram point of stream h to series s. A stream whose
// count went down or whose start moved on restarted: its earlier observations stay counted.
func (st *state) applyHistogram(is *instState, s *series, h uint64, dp pmetric.HistogramDataPoint, gen uint64, now int64) applyResult {
	start, ts := dp.StartTimestamp(), dp.Timestamp()
	bc := dp.BucketCounts()
	if s.cum != nil && !equalBounds(s.cum.bounds, dp.ExplicitBounds()) {
		return appliedBounds
	}
	r, fresh := st.stream(is, s, h, now)
	if r == nil {
		return appliedFull
	}
	c := s.cum
	if c == nil {
		c = newCum(s, gen, start)
		c.bounds = dp.ExplicitBounds().AsRaw()
		c.buckets = make([]uint64, bc.Len())
	}
	switch {
	case fresh:
		c.joined(gen, start)
		r.buckets = make([]uint64, bc.Len())
	case isStale(r, start, ts):
		return appliedStale
	default:
		reset := startsAfter(start, r.start) || dp.Count() < r.count
		switch {
		case reset && c.streams == 1:
			c.count, c.sum = 0, 0
			clear(c.buckets)
			c.hasMM, c.noMM, c.noSum = false, false, false
			if start != 0 {
				c.start = start
			}
		case reset:
		default:
			c.count -= r.count
			c.sum -= r.sum
			for k := range c.buckets {
				c.buckets[k] -= r.buckets[k]
			}
		}
	}
	c.count += dp.Count()
	c.sum += dp.Sum()
	if !dp.HasSum() && dp.Count() > 0 {
		c.noSum = true
	}
	for k := range c.buckets {
		c.buckets[k] += bc.At(k)
		r.buckets[k] = bc.At(k)
	}
	if dp.Count() > 0 {
		if dp.HasMin() && dp.HasMax() {
			if !c.hasMM {
				c.min, c.max, c.hasMM = dp.Min(), dp.Max(), true
			} else {
				c.min = min(c.min, dp.Min())
				c.max = max(c.max, dp.Max())
			}
		} else {
			c.noMM = true
		}
	}
	if ts > c.ts {
		c.ts = ts
	}
	r.start, r.ts, r.count, r.sum = start, ts, dp.Count(), dp.Sum()
	return applied
}

// equalBounds compares bucket bounds held as a slice (a stream's, the schema's) with a point's,
// without copying the point's (pcommon.Float64Slice.Equal compares two points' bounds).
func equalBounds(a []float64, b pcommon.Float64Slice) bool {
	if len(a) != b.Len() {
		return false
	}
	for i, x := range a {
		if b.At(i) != x {
			return false
		}
	}
	return true
}

// sweep forgets what has been idle for the idle timeout: streams, folded keys, series (an
// admitted series frees its slot), then empty instruments and resources. It runs at most
// every quarter of the timeout, so state is forgotten between 1 and 1.25 timeouts after its
// last point.
func (st *state) sweep(now int64) {
	if now-st.lastSweep < st.idle/4 {
		return
	}
	st.lastSweep = now
	cut := now - st.idle
	for rk, r := range st.resources {
		live := false
		for id, is := range r.insts {
			if is == nil {
				continue
			}
			if st.sweepInst(is, cut) {
				r.insts[id] = nil
				continue
			}
			live = true
		}
		for k, is := range r.unknown {
			if st.sweepInst(is, cut) {
				delete(r.unknown, k)
				continue
			}
			live = true
		}
		for h, seen := range r.received {
			if seen <= cut {
				delete(r.received, h)
			}
		}
		if !live && r.seen <= cut {
			delete(st.resources, rk)
		}
	}
}

// sweepInst forgets what of one instrument has been idle since cut; true when nothing is left.
func (st *state) sweepInst(is *instState, cut int64) (empty bool) {
	// A stream is seen whenever its series is, so a series that goes takes its streams with it.
	for h, rs := range is.raws {
		if rs.seen <= cut {
			delete(is.raws, h)
			st.entries--
		}
	}
	for k, f := range is.folded {
		if f.seen <= cut {
			delete(is.folded, k)
			st.entries--
		}
	}
	for k, s := range is.series {
		if s.seen <= cut {
			delete(is.series, k)
			st.series--
		}
	}
	if is.overflow != nil && is.overflow.seen <= cut {
		is.overflow = nil
		st.series--
	}
	return len(is.series) == 0 && is.overflow == nil && len(is.folded) == 0 && len(is.raws) == 0
}
