package aggregate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The aggregator's state, saved so that a restarted collector goes on where it stopped: every
// live resource with its attributes, process bookkeeping and series (values, start times,
// histogram buckets). It is a compact binary encoding (varints), versioned, and checked when
// read: a corrupt state is an error, never a panic.
//
// Not kept: the per-sink caches, and how long a resource has been idle (a restored
// resource's idle clock starts at the restore).

const stateVersion = 1

const (
	resFlagRetired = 1 << iota
	resFlagProcDrop
)

const (
	seriesFlagHasVal = 1 << iota
	seriesFlagOverflow
)

// AppendState appends the encoded state of every live resource to b. Each resource is
// encoded under its lock; ingest goes on meanwhile.
func (a *Aggregator) AppendState(b []byte) []byte {
	rs := a.resources()
	b = a.appendStateHeader(b)
	for _, r := range rs {
		r.mu.Lock()
		b = r.appendState(b)
		r.mu.Unlock()
	}
	return appendStateTrailer(b, len(rs))
}

// CollectWithState is Collect that also appends the state that remains after the collection
// (AppendState) to *state, each resource encoded in the same critical section as its export:
// what is exported is exactly what is saved (or older, for a resource held back).
func (a *Aggregator) CollectWithState(scope Scope, state *[]byte) pmetric.Metrics {
	return a.collect(scope, state)
}

// appendStateHeader starts a state: its version and the resources created so far. Then come
// the resources, each after a 1, and the trailer: a 0 and the number of resources (a state cut
// anywhere is told from a whole one).
func (a *Aggregator) appendStateHeader(b []byte) []byte {
	b = binary.AppendUvarint(b, stateVersion)
	return binary.AppendUvarint(b, a.insts.claims.Load())
}

func appendStateTrailer(b []byte, n int) []byte {
	return binary.AppendUvarint(append(b, 0), uint64(n))
}

func (r *Resource) appendState(b []byte) []byte {
	b = append(b, 1)
	b = appendString(b, r.key)
	b = appendResourceAttrs(b, r.attrs)
	b = binary.AppendUvarint(b, uint64(uint32(r.pid)))
	var flags byte
	if r.retired {
		flags |= resFlagRetired
	}
	if r.procDrop {
		flags |= resFlagProcDrop
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, r.claim)
	n := 0
	for _, in := range r.insts {
		if in != nil {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for _, in := range r.insts {
		if in == nil {
			continue
		}
		def := schema.Get(in.id)
		b = binary.AppendUvarint(b, uint64(in.id))
		b = binary.AppendUvarint(b, uint64(len(in.order)))
		for _, s := range in.order {
			b = appendSeries(b, def, s)
		}
		if in.overflow != nil {
			b = append(b, 1)
			b = appendSeries(b, def, in.overflow)
		} else {
			b = append(b, 0)
		}
		// The latest values of the snapshot series folded into the overflow series.
		b = binary.AppendUvarint(b, uint64(len(in.folded)))
		if len(in.folded) > 0 {
			b = binary.LittleEndian.AppendUint64(b, in.foldSalt)
			for _, h := range slices.Sorted(maps.Keys(in.folded)) { // the same state, the same bytes
				b = binary.LittleEndian.AppendUint64(b, h)
				b = binary.AppendVarint(b, in.folded[h].val)
			}
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendResourceAttrs(b []byte, attrs []ResourceAttrValue) []byte {
	b = binary.AppendUvarint(b, uint64(len(attrs)))
	for _, a := range attrs {
		b = appendString(b, a.Key)
		b = append(b, byte(a.Kind))
		switch a.Kind {
		case events.ValueString:
			b = appendString(b, a.Str)
		case events.ValueInt:
			b = binary.AppendVarint(b, a.Int)
		case events.ValueBool:
			if a.Bool {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		}
	}
	return b
}

func appendSeries(b []byte, def *schema.Instrument, s *series) []byte {
	var flags byte
	if s.hasVal {
		flags |= seriesFlagHasVal
	}
	if s.overflow {
		flags |= seriesFlagOverflow
	} else {
		b = appendString(b, s.key)
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(s.start))
	if def.Kind == schema.KindHistogram {
		b = binary.AppendUvarint(b, s.count)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.sum))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.min))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.max))
		for _, c := range s.buckets {
			b = binary.AppendUvarint(b, c)
		}
		return b
	}
	if isRatio(def) {
		b = binary.AppendUvarint(b, s.count)
		return binary.AppendVarint(b, s.val)
	}
	if def.ValueType == schema.ValueDouble {
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(s.dval))
	}
	return binary.AppendVarint(b, s.val)
}

// isRatio tells the gauge that is a ratio of two counts kept with it (gym.verify.success_rate):
// its state is the two counts, from which the ratio is computed again. (A state written before
// the instrument existed never holds it.)
func isRatio(def *schema.Instrument) bool { return def == schema.Get(schema.GymVerifySuccessRate) }

// RestoreState loads a state saved by AppendState into an empty aggregator, before any
// stream runs. A state that cannot be read is an error and leaves the aggregator empty.
func (a *Aggregator) RestoreState(b []byte) error {
	if a.live.Load() != 0 {
		return errors.New("restoring state: the aggregator is not empty")
	}
	d := stateReader{b: b}
	if v := d.uvarint(); d.err == nil && v != stateVersion {
		return fmt.Errorf("restoring state: version %d is not %d", v, stateVersion)
	}
	claims := d.uvarint()
	var rs []*Resource
	for d.err == nil {
		if d.byte() != 1 {
			break
		}
		r := d.resource()
		rs = append(rs, r)
		claims = max(claims, r.claim)
	}
	if n := d.uvarint(); d.err == nil && n != uint64(len(rs)) {
		d.fail("a resource count that differs")
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err == nil {
		seen := map[string]bool{}
		for _, r := range rs {
			if seen[r.key] {
				d.fail("a resource twice")
			}
			seen[r.key] = true
		}
	}
	if d.err != nil {
		return fmt.Errorf("restoring state: %w", d.err)
	}
	// An earlier life's clock may have been ahead of this one's (set back since, or stamps
	// ahead after a step back): no point goes before a restored start time.
	a.stamps.Floor(d.maxStart.AsTime())
	now := a.clock.Elapsed()
	// The oldest claim first, so the live resource of each service instance claims it last.
	sort.Slice(rs, func(i, j int) bool { return rs[i].claim < rs[j].claim })
	for _, r := range rs {
		r.lastSeen = now
		r.inst, _ = instanceKey(r.attrs)
		sh := &a.shards[a.shardOf(r.key)]
		sh.m[r.key] = r
		a.live.Add(1)
		if r.inst != "" && !r.retired {
			if a.insts.m == nil {
				a.insts.m = map[string]*Resource{}
			}
			a.insts.m[r.inst] = r
		}
		if r.pid > 0 && !r.retired {
			// The container is not stored: it is in the resource's attributes.
			r.pidIn = containerOf(len(r.attrs), func(i int) (string, []byte, bool) {
				return r.attrs[i].Key, []byte(r.attrs[i].Str), r.attrs[i].Kind == events.ValueString
			})
			a.procs.pids[announcedPID{r.pid, r.pidIn}] = r
		}
	}
	if claims > a.insts.claims.Load() {
		a.insts.claims.Store(claims)
	}
	return nil
}

// stateReader reads an encoded state; the first error sticks and every later read returns
// zero values.
type stateReader struct {
	b        []byte
	err      error
	maxStart pcommon.Timestamp // the latest start time read
}

func (d *stateReader) fail(msg string) {
	if d.err == nil {
		d.err = errors.New(msg)
	}
	d.b = nil
}

func (d *stateReader) uvarint() uint64 { return readVarint(d, binary.Uvarint) }

func (d *stateReader) varint() int64 { return readVarint(d, binary.Varint) }

// readVarint reads a varint of either sign with read (binary.Uvarint, binary.Varint).
func readVarint[T int64 | uint64](d *stateReader, read func([]byte) (T, int)) T {
	v, n := read(d.b)
	if n <= 0 {
		d.fail("truncated or bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length, which cannot exceed the bytes left (each element takes one at least).
func (d *stateReader) count() int {
	v := d.uvarint()
	if v > uint64(len(d.b)) {
		d.fail("a count past the end")
		return 0
	}
	return int(v)
}

func (d *stateReader) bytes(n int) []byte {
	if n > len(d.b) {
		d.fail("truncated")
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *stateReader) byte() byte {
	if b := d.bytes(1); len(b) == 1 {
		return b[0]
	}
	return 0
}

func (d *stateReader) string() string { return string(d.bytes(d.count())) }

func (d *stateReader) uint64() uint64 {
	if b := d.bytes(8); len(b) == 8 {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *stateReader) float() float64 {
	if b := d.bytes(8); len(b) == 8 {
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return 0
}

func (d *stateReader) attrs() []ResourceAttrValue {
	n := d.count()
	if n == 0 {
		return nil
	}
	out := make([]ResourceAttrValue, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		a := ResourceAttrValue{Key: d.string(), Kind: events.ValueKind(d.byte())}
		switch a.Kind {
		case events.ValueString:
			a.Str = d.string()
		case events.ValueInt:
			a.Int = d.varint()
		case events.ValueBool:
			a.Bool = d.byte() == 1
		default:
			d.fail("bad attribute kind")
		}
		out = append(out, a)
	}
	return out
}

func (d *stateReader) resource() *Resource {
	r := &Resource{key: d.string()}
	r.attrs = d.attrs()
	pid := d.uvarint()
	if pid > math.MaxInt32 {
		d.fail("bad pid")
	}
	r.pid = int32(pid)
	flags := d.byte()
	r.retired = flags&resFlagRetired != 0
	r.procDrop = flags&resFlagProcDrop != 0
	r.claim = d.uvarint()
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		id := d.uvarint()
		if id >= uint64(schema.NumInstruments) {
			d.fail("bad instrument id")
			break
		}
		if r.insts[id] != nil {
			d.fail("an instrument twice")
			break
		}
		def := schema.Get(schema.InstrumentID(id))
		in := newInstrument(schema.InstrumentID(id))
		ns := d.count()
		in.order = make([]*series, 0, ns)
		for j := 0; j < ns && d.err == nil; j++ {
			s := d.series(def, false)
			if d.err != nil {
				break
			}
			if _, dup := in.series[s.key]; dup {
				d.fail("a series twice")
				break
			}
			in.series[s.key] = s
			in.order = append(in.order, s)
		}
		if d.byte() == 1 {
			in.overflow = d.series(def, true)
		}
		if nf := d.count(); nf > 0 {
			if nf > maxFoldedSnapshots {
				d.fail("too many folded snapshots")
				break
			}
			in.foldSalt = d.uint64()
			in.folded = make(map[uint64]foldedSnapshot, nf)
			for j := 0; j < nf && d.err == nil; j++ {
				h := d.uint64()
				in.folded[h] = foldedSnapshot{val: d.varint()}
			}
		}
		r.insts[id] = in
	}
	return r
}

func (d *stateReader) series(def *schema.Instrument, overflow bool) *series {
	s := &series{overflow: overflow}
	if !overflow {
		s.key = d.string()
		s.attrs = decodeSeriesKey(d, def, s.key)
	}
	flags := d.byte()
	if (flags&seriesFlagOverflow != 0) != overflow {
		d.fail("overflow flag out of place")
	}
	s.hasVal = flags&seriesFlagHasVal != 0
	s.start = pcommon.Timestamp(d.uvarint())
	d.maxStart = max(d.maxStart, s.start)
	if def.Kind == schema.KindHistogram {
		s.count = d.uvarint()
		s.sum, s.min, s.max = d.float(), d.float(), d.float()
		s.buckets = make([]uint64, len(def.Bounds)+1)
		for i := range s.buckets {
			s.buckets[i] = d.uvarint()
		}
		return s
	}
	switch {
	case isRatio(def):
		s.count, s.val = d.uvarint(), d.varint()
		if s.count > 0 && (s.val < 0 || uint64(s.val) > s.count) {
			d.fail("a ratio of counts out of range")
		}
		if s.count > 0 {
			s.dval = float64(s.val) / float64(s.count)
		}
	case def.ValueType == schema.ValueDouble:
		s.dval = d.float()
	default:
		s.val = d.varint()
	}
	return s
}

// decodeSeriesKey is keyBuilder.ownedAttrs for a key read from a saved state: checked.
func decodeSeriesKey(d *stateReader, def *schema.Instrument, key string) []ownedAttr {
	b := []byte(key)
	out := make([]ownedAttr, 0, len(def.Attrs))
	for i := 0; len(b) > 0; i++ {
		if i >= len(def.Attrs) {
			d.fail("a series key with too many attributes")
			return nil
		}
		tag := b[0]
		b = b[1:]
		at := ownedAttr{id: def.Attrs[i].ID}
		switch tag {
		case keyAbsent:
			continue
		case keyString:
			n, w := binary.Uvarint(b)
			if w <= 0 || n > uint64(len(b)-w) {
				d.fail("bad series key")
				return nil
			}
			at.str = string(b[w : w+int(n)])
			b = b[w+int(n):]
		case keyInt:
			if len(b) < 8 {
				d.fail("bad series key")
				return nil
			}
			at.i = int64(binary.LittleEndian.Uint64(b))
			b = b[8:]
		case keyFalse, keyTrue:
			at.b = tag == keyTrue
		default:
			d.fail("bad series key tag")
			return nil
		}
		out = append(out, at)
	}
	return out
}
