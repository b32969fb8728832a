package aggregate

import (
	"hash/maphash"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// AggregatorConfig are the settings of an Aggregator.
type AggregatorConfig struct {
	// CardinalityLimit is the most series an instrument keeps per resource, the overflow
	// series included.
	CardinalityLimit int
	// ExpireAfter: a resource that receives nothing for this long is exported once more, then
	// dropped.
	ExpireAfter time.Duration
	// Registry holds the failure kinds and health checks, Gym's and configured.
	Registry *normalize.Registry
	// TrackPIDs records the process.pid of resource lines naming this host (Hostname) or a
	// container (container.id, k8s.pod.uid), for the process stats.
	TrackPIDs bool
	Hostname  string
	// MaxResources bounds the resources held at once (0: no bound): a resource line that
	// would create one more is rejected, and its source goes on on its default resource.
	MaxResources int
	// Clock is where time is read (nil: the host's): timestamps from its wall clock, never
	// going back (clock.Stamps), expiry in its elapsed time, which a step of the host's clock
	// does not move.
	Clock clock.Clock
}

const numShards = 64

// Aggregator holds the cumulative state of every resource. Ingest from many sources runs in
// parallel: resources are found through sharded maps and each resource has its own lock, so
// sources of different processes never wait on each other.
type Aggregator struct {
	cfg    AggregatorConfig
	seed   maphash.Seed
	shards [numShards]shard
	clock  clock.Clock
	stamps *clock.Stamps // start times and timestamps
	procs  processes
	insts  instances
	live   atomic.Int64 // resources held
}

type shard struct {
	mu sync.Mutex
	m  map[string]*Resource
}

// stamp is the time of a series' start.
func (a *Aggregator) stamp() pcommon.Timestamp { return pcommon.NewTimestampFromTime(a.stamps.Now()) }

// NewAggregator returns an empty aggregator.
func NewAggregator(cfg AggregatorConfig) *Aggregator {
	c := cfg.Clock
	if c == nil {
		c = clock.System()
	}
	a := &Aggregator{cfg: cfg, seed: maphash.MakeSeed(), clock: c, stamps: clock.NewStamps(c)}
	a.procs.pids = map[announcedPID]*Resource{}
	for i := range a.shards {
		a.shards[i].m = map[string]*Resource{}
	}
	return a
}

// Resource is the state of one Gym process (one resource attribute set).
type Resource struct {
	mu       sync.Mutex
	key      string
	attrs    []ResourceAttrValue
	insts    [schema.NumInstruments]*instrument
	touched  bool          // received something since the last collection
	lastSeen time.Duration // the clock's elapsed time at the collection that last found it touched
	dropped  bool
	retired  bool   // a newer resource of its service instance took over: export once more, drop
	seq      uint64 // snapshot lines applied
	inst     string // its service instance (instanceKey), "" for none; fixed
	claim    uint64 // creation order (a.insts.claims), fixed: the oldest of an instance goes first

	// process stats
	pid      int32               // the pid this resource announced (0: none)
	pidIn    procstats.Container // the container it is numbered in (zero: the host)
	procDrop bool                // the process ended: export once more, then drop its series
}

// ResourceAttrValue is an owned resource attribute.
type ResourceAttrValue struct {
	Key  string
	Kind events.ValueKind
	Str  string
	Int  int64
	Bool bool
}

// resource returns the resource with the given canonical key, creating it from attrs.
func (a *Aggregator) resource(key []byte, attrs func() []ResourceAttrValue) *Resource {
	r, _ := a.resourceWithin(key, attrs, 0)
	return r
}

// resourceWithin is resource, but when room > 0 it creates a resource only while room more
// fit within MaxResources (nil, false): a resource line asks room for itself and, while its
// stream's default resource does not exist yet, for that one too, which its source falls back
// to when the line is refused. So the refused line never takes the count past MaxResources.
func (a *Aggregator) resourceWithin(key []byte, attrs func() []ResourceAttrValue, room int64) (*Resource, bool) {
	sh := &a.shards[maphash.Bytes(a.seed, key)%numShards]
	r, ok, created := a.lookupOrCreate(sh, key, attrs, room)
	if !ok {
		return nil, false
	}
	if created {
		a.claimInstance(r)
	}
	return r, true
}

func (a *Aggregator) shardOf(key string) uint64 { return maphash.String(a.seed, key) % numShards }

func (a *Aggregator) lookupOrCreate(sh *shard, key []byte, attrs func() []ResourceAttrValue, room int64) (*Resource, bool, bool) {
	sh.mu.Lock()
	r, ok := sh.m[string(key)]
	if !ok {
		bounded := room > 0
		if bounded && !a.reserve(room) {
			sh.mu.Unlock()
			return nil, false, false
		} else if !bounded {
			a.live.Add(1)
		}
		r = &Resource{key: string(key), attrs: attrs(), lastSeen: a.clock.Elapsed(), claim: a.insts.claims.Add(1)}
		r.inst, _ = instanceKey(r.attrs)
		sh.m[r.key] = r
	}
	sh.mu.Unlock()
	return r, true, !ok
}

// reserve counts one more resource if room more fit within MaxResources.
func (a *Aggregator) reserve(room int64) bool {
	for {
		n := a.live.Load()
		if a.cfg.MaxResources > 0 && n+room > int64(a.cfg.MaxResources) {
			return false
		}
		if a.live.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// holds reports whether the resource of the canonical key exists.
func (a *Aggregator) holds(key []byte) bool {
	sh := &a.shards[maphash.Bytes(a.seed, key)%numShards]
	sh.mu.Lock()
	_, ok := sh.m[string(key)]
	sh.mu.Unlock()
	return ok
}

// revive returns the live resource for r, which a collection may have expired and dropped.
func (a *Aggregator) revive(r *Resource) *Resource {
	return a.resource([]byte(r.key), func() []ResourceAttrValue { return r.attrs })
}

func (a *Aggregator) forget(r *Resource) {
	sh := &a.shards[a.shardOf(r.key)]
	sh.mu.Lock()
	if sh.m[r.key] == r {
		delete(sh.m, r.key)
		a.live.Add(-1)
	}
	sh.mu.Unlock()
}

// resources returns every live resource in a stable order (by key).
func (a *Aggregator) resources() []*Resource {
	var out []*Resource
	for i := range a.shards {
		sh := &a.shards[i]
		sh.mu.Lock()
		for _, r := range sh.m {
			out = append(out, r)
		}
		sh.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// series finds or admits the series of the key in k, or the overflow series when the
// instrument is at its cardinality limit.
func (r *Resource) series(a *Aggregator, sk *Sink, k *keyBuilder) *series {
	in := r.insts[k.id]
	if in == nil {
		in = newInstrument(k.id)
		r.insts[k.id] = in
	}
	key := k.key()
	// A source sends few series of an instrument over and over (the same loop, provider,
	// server; the three GC generations of each gc.stats line): its recent series of the
	// instrument are checked first, a byte compare instead of a map lookup.
	rc := &sk.recent[k.id]
	if rc.in != in {
		*rc = recentSeries{in: in}
	}
	recent := &rc.s[recentSlot(key)]
	if s := *recent; s != nil && s.key == string(key) {
		return s
	}
	s, ok := in.series[string(key)]
	if !ok {
		if len(in.order) >= a.cfg.CardinalityLimit-1 {
			return r.overflow(a, sk, k, in)
		}
		s = newSeries(k.in, k.ownedAttrs(), a.stamp())
		s.key = string(key)
		in.series[s.key] = s
		in.order = append(in.order, s)
	}
	*recent = s
	return s
}

// overflow returns the overflow series of an instrument at its cardinality limit (never
// remembered as a recent series: each measurement folded into it is counted).
func (r *Resource) overflow(a *Aggregator, sk *Sink, k *keyBuilder, in *instrument) *series {
	sk.stats.Overflowed++
	if in.overflow == nil {
		in.overflow = newSeries(k.in, nil, a.stamp())
		in.overflow.overflow = true
	}
	return in.overflow
}

// Snapshot bookkeeping: the entries of one snapshot line that normalise to one series are
// summed; at the end of the line each touched series takes the sum as its latest value.

func (r *Resource) snapshot(a *Aggregator, sk *Sink, k *keyBuilder, v int64) {
	s := r.series(a, sk, k)
	if s.overflow {
		r.foldSnapshot(sk, k, s, v)
		return
	}
	r.stage(sk, s, v)
}

func (r *Resource) stage(sk *Sink, s *series, v int64) {
	if s.seq != r.seq {
		s.seq = r.seq
		s.pending = v
		sk.touched = append(sk.touched, touchedSeries{s, schema.Get(sk.kb.id).Kind})
		return
	}
	s.pending += v
}

// foldSnapshot keeps the overflow series of a snapshot total at the sum of the latest values
// of the series folded into it.
func (r *Resource) foldSnapshot(sk *Sink, k *keyBuilder, ov *series, v int64) {
	in := r.insts[k.id]
	if in.folded == nil {
		in.folded = map[uint64]foldedSnapshot{}
		in.foldSalt = rand.Uint64()
	}
	h := foldHash(in.foldSalt, k.buf)
	// The overflow series' pending value starts from its current total.
	if ov.seq != r.seq {
		ov.seq = r.seq
		ov.pending = ov.val
		sk.touched = append(sk.touched, touchedSeries{ov, schema.Get(k.id).Kind})
	}
	f, known := in.folded[h]
	switch {
	case known && f.seq == r.seq: // a second entry of this line for the same folded series
		f.val += v
		ov.pending += v
	case known:
		ov.pending += v - f.val
		f = foldedSnapshot{seq: r.seq, val: v}
	default:
		ov.pending += v
		f = foldedSnapshot{seq: r.seq, val: v}
		if len(in.folded) >= maxFoldedSnapshots {
			return
		}
	}
	in.folded[h] = f
}

type touchedSeries struct {
	s    *series
	kind schema.Kind
}

// commitSnapshots ends a snapshot line: each touched series takes its new value; a total that
// went down means the process restarted, and the series starts again.
func (r *Resource) commitSnapshots(a *Aggregator, sk *Sink) {
	for _, t := range sk.touched {
		s := t.s
		if t.kind == schema.KindCounter && s.hasVal && s.pending < s.val {
			s.start = a.stamp()
		}
		s.val, s.hasVal = s.pending, true
	}
	clear(sk.touched)
	sk.touched = sk.touched[:0]
}
