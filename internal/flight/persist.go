package flight

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Store is where the recorder keeps its state across restarts: a storage extension's client.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Batch(ctx context.Context, ops ...*storage.Operation) error
}

// The state in a Store: one record per rollout kept, under a slot of its own (a rollout's
// record is rewritten alone when it changes, so a request's cost is the rollouts it touched,
// not the state's size), and a header with the slots in use, the time of the last collection
// and the stall counters.
const (
	headerKey      = "flight/header"
	recordPrefix   = "flight/rollout/"
	persistVersion = 1
)

// persistence is the Recorder's side of its Store: which slots hold records, and what changed
// since the last write. The Recorder's lock guards it.
type persistence struct {
	store     Store
	epoch     time.Time // the wall time of elapsed 0: records keep wall times
	high      int32     // slots ever used: the records are in [0, high)
	spare     []int32   // slots below high with no rollout
	dirty     []*rollout
	freed     []int32 // slots whose records are to be deleted
	headerDue bool
	ops       []*storage.Operation
}

// place gives a new rollout a slot.
func (p *persistence) place(ro *rollout) {
	if p.store == nil {
		return
	}
	if n := len(p.spare); n > 0 {
		ro.slot, p.spare = p.spare[n-1], p.spare[:n-1]
		return
	}
	ro.slot, p.high, p.headerDue = p.high, p.high+1, true
}

// free gives back the slot of a rollout forgotten; its record is deleted at the next write.
func (p *persistence) free(ro *rollout) {
	if p.store == nil || ro.slot < 0 {
		return
	}
	p.spare = append(p.spare, ro.slot)
	p.freed = append(p.freed, ro.slot)
	ro.slot = -1
}

func recordKey(slot int32) string { return recordPrefix + strconv.Itoa(int(slot)) }

// flush writes what changed since the last write in one batch. The batch is written before the
// request that changed it is answered, so a collector killed at any moment restores every
// span it acknowledged. A failed write is counted; the next one writes the changes again.
func (r *Recorder) flush() {
	p := &r.saved
	if p.store == nil || len(p.dirty) == 0 && len(p.freed) == 0 && !p.headerDue {
		return
	}
	ops := p.ops[:0]
	for _, s := range p.freed {
		ops = append(ops, storage.DeleteOperation(recordKey(s)))
	}
	for _, ro := range p.dirty {
		if ro.slot >= 0 {
			ops = append(ops, storage.SetOperation(recordKey(ro.slot), r.appendRecord(nil, ro)))
		}
	}
	if p.headerDue {
		ops = append(ops, storage.SetOperation(headerKey, r.appendHeader(nil)))
	}
	p.ops = ops
	if err := p.store.Batch(context.Background(), ops...); err != nil {
		r.stats.SaveFailed++
		r.lastSaveErr = err
		return
	}
	for _, ro := range p.dirty {
		ro.dirty = false
	}
	clear(p.dirty)
	p.dirty, p.freed, p.headerDue = p.dirty[:0], p.freed[:0], false
	clear(ops)
}

func (r *Recorder) wall(t time.Duration) int64 { return r.saved.epoch.Add(t).UnixNano() }

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func (r *Recorder) appendRecord(b []byte, ro *rollout) []byte {
	b = append(b, persistVersion)
	for _, s := range [...]string{ro.run, ro.id, ro.server, ro.lastSpan} {
		b = appendString(b, s)
	}
	var flags byte
	if ro.finished {
		flags |= 1
	}
	if ro.stalled {
		flags |= 2
	}
	b = append(b, byte(ro.stage), flags)
	b = binary.AppendUvarint(b, uint64(ro.calls))
	b = binary.AppendUvarint(b, uint64(ro.errors))
	b = binary.AppendVarint(b, r.wall(ro.firstSeen))
	b = binary.AppendVarint(b, r.wall(ro.lastSeen))
	b = append(b, ro.trace[:]...)
	return append(b, ro.span[:]...)
}

func (r *Recorder) appendHeader(b []byte) []byte {
	b = append(b, persistVersion)
	b = binary.AppendUvarint(b, uint64(r.saved.high))
	b = binary.AppendVarint(b, r.wall(r.clock.Elapsed()))
	b = binary.AppendUvarint(b, uint64(len(r.stalls)))
	for _, k := range sorted(r.stalls) {
		c := r.stalls[k]
		b = appendString(appendString(b, k.run), k.server)
		var overflow byte
		if k.overflow {
			overflow = 1
		}
		b = append(b, byte(k.stage), overflow)
		b = binary.AppendUvarint(b, uint64(c.start))
		b = binary.AppendUvarint(b, uint64(c.n))
	}
	// The gauge series exported non-zero: the next process writes a drained one at zero, so a
	// backend does not keep a dead process's last value beside the new one's.
	b = binary.AppendUvarint(b, uint64(len(r.exported)))
	for _, k := range sorted(r.exported) {
		b = appendString(appendString(appendString(b, k.metric), k.run), k.server)
		b = append(b, byte(k.stage))
	}
	return b
}

// reader decodes a record; the first error sticks.
type reader struct {
	b   []byte
	err error
}

var errDamaged = errors.New("damaged")

func (d *reader) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err, d.b = errDamaged, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *reader) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err, d.b = errDamaged, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *reader) bytes(n uint64) []byte {
	if uint64(len(d.b)) < n {
		d.err, d.b = errDamaged, nil
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// string reads a length-prefixed string, capped as every string a rollout keeps.
func (d *reader) string() string {
	s := string(d.bytes(d.uvarint()))
	if len(s) > maxStringBytes {
		d.err = errDamaged
	}
	return s
}

func (d *reader) version() {
	if v := d.bytes(1); d.err == nil && v[0] != persistVersion {
		d.err = fmt.Errorf("version %d, want %d", v[0], persistVersion)
	}
}

// Restored is what Restore found.
type Restored struct {
	Rollouts int // records restored
	Damaged  int // records that could not be read (left out, their slots reused)
	Dropped  int // records past max_rollouts (left out)
}

// Restore starts the (empty) recorder from the state kept in store by an earlier process,
// then keeps its state there. A rollout's idle time goes on from what it was at that process's
// last collection: the time the collector was down is not counted as silence, since the spans
// sent meanwhile wait in the senders' queues (an outage does not stall every rollout). A
// header that cannot be read starts the recorder empty, with the error; a record that cannot
// be read is left out and counted.
func (r *Recorder) Restore(ctx context.Context, store Store) (Restored, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var got Restored
	r.saved.store = store
	r.saved.epoch = r.clock.Now().Add(-r.clock.Elapsed())
	head, err := store.Get(ctx, headerKey)
	if err != nil || len(head) == 0 {
		return got, err
	}
	d := &reader{b: head}
	d.version()
	high := d.uvarint()
	savedAt := d.varint()
	n := d.uvarint()
	stalls := map[seriesKey]*counter{}
	for i := uint64(0); i < n && d.err == nil; i++ {
		k := seriesKey{metric: MetricStalls, run: d.string(), server: d.string()}
		sb := d.bytes(2)
		c := &counter{start: pcommon.Timestamp(d.uvarint()), n: int64(d.uvarint())}
		if d.err == nil {
			k.stage, k.overflow = Stage(sb[0]), sb[1] == 1
			stalls[k] = c
		}
	}
	exported := map[seriesKey]struct{}{}
	n = d.uvarint()
	for i := uint64(0); i < n && d.err == nil; i++ {
		k := seriesKey{metric: d.string(), run: d.string(), server: d.string()}
		if st := d.bytes(1); d.err == nil {
			k.stage = Stage(st[0])
			if k.metric == MetricInFlight || k.metric == MetricStalled || k.metric == MetricOldest {
				exported[k] = struct{}{}
			}
		}
	}
	if d.err != nil || high > uint64(maxSlots) {
		r.saved.headerDue = true // the next write replaces it
		return got, fmt.Errorf("the recorder's saved state is damaged (%w); starting empty", cmp.Or(d.err, errDamaged))
	}
	r.stalls, r.exported = stalls, exported
	now := r.clock.Elapsed()
	var kept []*rollout
	r.saved.high = int32(high)
	// Read in chunks: a header that names many slots costs time, never much memory.
	ops := make([]*storage.Operation, 0, min(high, restoreChunk))
	for lo := uint64(0); lo < high; lo += restoreChunk {
		ops = ops[:0]
		for i := lo; i < min(lo+restoreChunk, high); i++ {
			ops = append(ops, storage.GetOperation(recordKey(int32(i))))
		}
		if err := store.Batch(ctx, ops...); err != nil {
			return got, err
		}
		for j, op := range ops {
			slot := int32(lo) + int32(j)
			if len(op.Value) == 0 {
				r.saved.spare = append(r.saved.spare, slot)
				continue
			}
			ro, err := decodeRecord(op.Value, savedAt, now)
			if err != nil || r.byID[ro.rolloutKey] != nil || len(r.byID) >= r.cfg.MaxRollouts {
				if err != nil || r.byID[ro.rolloutKey] != nil {
					got.Damaged++
				} else {
					got.Dropped++
				}
				r.saved.spare = append(r.saved.spare, slot)
				r.saved.freed = append(r.saved.freed, slot)
				continue
			}
			ro.slot = slot
			r.byID[ro.rolloutKey] = ro
			kept = append(kept, ro)
		}
	}
	got.Rollouts = len(kept)
	// The lists' orders: in flight by first seen, finished by finish (its last span).
	slices.SortStableFunc(kept, func(a, b *rollout) int {
		if a.finished {
			return cmp.Compare(a.lastSeen, b.lastSeen)
		}
		return cmp.Compare(a.firstSeen, b.firstSeen)
	})
	for _, ro := range kept {
		if ro.finished {
			r.finished.push(ro)
		} else {
			r.inFlight.push(ro)
		}
		r.touch(ro)
	}
	// Written again at once on this process's clock, so that the records and the header agree
	// on the time however soon this process dies too.
	r.saved.headerDue = true
	r.flush()
	return got, nil
}

// Detach writes the header (the time of this stop) and stops writing to the store.
func (r *Recorder) Detach() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.saved.store == nil {
		return
	}
	r.saved.headerDue = true
	r.flush()
	r.saved.store = nil
}

// maxSlots bounds the slots a header may name: more than any max_rollouts an operator sets.
const maxSlots = 1 << 22

// restoreChunk is how many records Restore reads in one batch.
const restoreChunk = 1024

// decodeRecord reads a rollout's record; its times are set so that its age and idle time at
// now are what they were at savedAt (the earlier process's last collection).
func decodeRecord(b []byte, savedAt int64, now time.Duration) (*rollout, error) {
	d := &reader{b: b}
	d.version()
	ro := &rollout{slot: -1}
	ro.run, ro.id, ro.server, ro.lastSpan = d.string(), d.string(), d.string(), d.string()
	sf := d.bytes(2)
	ro.calls, ro.errors = uint32(d.uvarint()), uint32(d.uvarint())
	first, last := d.varint(), d.varint()
	copy(ro.trace[:], d.bytes(16))
	copy(ro.span[:], d.bytes(8))
	if d.err != nil {
		return nil, d.err
	}
	if ro.id == "" || sf[0] >= byte(stageCount) || sf[1] > 3 || last < first {
		return nil, errDamaged
	}
	ro.stage, ro.finished, ro.stalled = Stage(sf[0]), sf[1]&1 != 0, sf[1]&2 != 0
	// Written after the last collection: as good as now.
	idle := time.Duration(max(savedAt-last, 0))
	age := time.Duration(max(savedAt-first, 0))
	ro.lastSeen, ro.firstSeen = now-idle, now-max(age, idle)
	return ro, nil
}
