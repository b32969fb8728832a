package bound

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The resource rule (docs/processor.md, "Resource attributes"). Every resource of a batch is
// bounded before anything reads it (instance_per_process, the resource's identity, the
// exporters after the processor): a resource attribute costs at most its key's and its cut
// value's bytes, whatever was sent, so a series never costs the size of its resource's strings.
//
//   - a key over schema.ResourceMaxKeyBytes is removed (the emitter of resource lines leaves it
//     out; the gym receiver rejects such a line);
//   - past schema.ResourceMaxAttributes attributes, those after the first ones in key order
//     are removed (key order: the same set sent in another order keeps the same attributes);
//   - a string is cut at schema.DefaultStringMaxBytes of valid UTF-8 (normalize.FreeString,
//     the rule of every free string of the schema);
//   - a bytes, slice or map value whose string form is longer than that becomes its string
//     form (JSON, base64), cut alike; a shorter one stays as it is (process.command_args).
//
// A cut is deterministic: the same long value always gives the same cut value, so a series'
// identity is stable. Two resources that differ only past a cut become one resource; the
// received resource's hash then stays in the identity of its cumulative streams (cursor.go), so
// two processes' totals add up instead of being taken for one stream that restarts.

// maxReceivedPerResource bounds the received resources remembered per bounded resource, the
// first one apart (for resources_merged); past it a received resource is not remembered and
// counts at every batch.
const maxReceivedPerResource = 64

// resourceKV is a kept attribute of a resource whose attribute count is over the limit.
type resourceKV struct{ k string }

// resourceRule is the resource rule's scratch, reused for every resource.
type resourceRule struct {
	keys     []resourceKV
	drop     map[string]struct{}
	removeFn func(string, pcommon.Value) bool
}

// boundResource applies the resource rule to res in place and counts what it cut and
// removed. It returns the hash of the resource as received when the rule changed it, else 0.
// A resource within the bounds costs a walk of its attributes and allocates nothing.
func (p *Bounder) boundResource(res pcommon.Resource) (raw uint64) {
	attrs := res.Attributes()
	if withinBounds(attrs) {
		return 0
	}
	for k, v := range attrs.All() {
		raw += entryHash(p.bd.seed, k, v)
	}
	c := &p.b.c
	c.resRemoved += int64(p.res.removeKeys(attrs))
	for _, v := range attrs.All() {
		switch v.Type() {
		case pcommon.ValueTypeStr:
			if s, ok := cutString(v.Str()); ok {
				v.SetStr(s)
				c.resCut++
			}
		case pcommon.ValueTypeBytes, pcommon.ValueTypeSlice, pcommon.ValueTypeMap:
			// A string form that fits after all (the estimate is an upper bound) is kept.
			if stringFormFits(v, schema.DefaultStringMaxBytes) {
				continue
			}
			if s, ok := cutString(v.AsString()); ok {
				v.SetStr(s)
				c.resCut++
			}
		}
	}
	return mix64(raw) | 1
}

// withinBounds reports whether the resource rule leaves attrs as they are.
func withinBounds(attrs pcommon.Map) bool {
	if attrs.Len() > schema.ResourceMaxAttributes {
		return false
	}
	for k, v := range attrs.All() {
		if len(k) > schema.ResourceMaxKeyBytes {
			return false
		}
		switch v.Type() {
		case pcommon.ValueTypeStr:
			if s := v.Str(); len(s) > schema.DefaultStringMaxBytes || !utf8.ValidString(s) {
				return false
			}
		case pcommon.ValueTypeBytes, pcommon.ValueTypeSlice, pcommon.ValueTypeMap:
			if !stringFormFits(v, schema.DefaultStringMaxBytes) {
				return false
			}
		}
	}
	return true
}

// cutString bounds s by the rule of free strings; ok is false when s is kept as it is.
func cutString(s string) (string, bool) {
	out := normalize.FreeString(bytesOf(s))
	if len(out) == len(s) {
		return s, false
	}
	return prefixOf(s, len(out)), true
}

// maxSharedBytes: a value cut from a received string shares the string's memory while it is
// at most this long. A prefix of a longer one would keep all of it alive for as long as the
// series (in the exporters' copies too): it is copied instead, one copy per cut per batch,
// only for such values.
const maxSharedBytes = 4 * schema.DefaultStringMaxBytes

// prefixOf returns s[:n], a copy when s is longer than maxSharedBytes and n cuts it.
func prefixOf(s string, n int) string {
	if n < len(s) && len(s) > maxSharedBytes {
		return strings.Clone(s[:n])
	}
	return s[:n]
}

// removeKeys removes the keys over schema.ResourceMaxKeyBytes, then the attributes past
// schema.ResourceMaxAttributes in key order; it returns how many it removed.
func (r *resourceRule) removeKeys(attrs pcommon.Map) int {
	r.keys = r.keys[:0]
	clear(r.drop)
	for k := range attrs.All() {
		if len(k) > schema.ResourceMaxKeyBytes {
			r.dropKey(k)
			continue
		}
		r.keys = append(r.keys, resourceKV{k})
	}
	if len(r.keys) > schema.ResourceMaxAttributes {
		slices.SortFunc(r.keys, func(x, y resourceKV) int { return cmp.Compare(x.k, y.k) })
		for _, kv := range r.keys[schema.ResourceMaxAttributes:] {
			r.dropKey(kv.k)
		}
	}
	clear(r.keys)
	if len(r.drop) == 0 {
		return 0
	}
	n := attrs.Len()
	if r.removeFn == nil {
		r.removeFn = func(k string, _ pcommon.Value) bool { _, ok := r.drop[k]; return ok }
	}
	attrs.RemoveIf(r.removeFn)
	return n - attrs.Len()
}

func (r *resourceRule) dropKey(k string) {
	if r.drop == nil {
		r.drop = map[string]struct{}{}
	}
	r.drop[k] = struct{}{}
}

// stringFormFits reports whether the string form of a bytes, slice or map value (as
// pcommon.Value.AsString writes it: base64, JSON) surely has at most max bytes, from an upper
// bound of its length computed without writing it. False means "maybe longer".
func stringFormFits(v pcommon.Value, max int) bool {
	return stringFormBound(v, max) <= max
}

// stringFormBound is an upper bound of the length of v's string form; it stops counting past
// limit. A string byte counts 6 (a JSON escape such as \u003c is the longest form of one byte).
func stringFormBound(v pcommon.Value, limit int) int {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return 2 + 6*len(v.Str())
	case pcommon.ValueTypeBytes:
		return 2 + 4*(v.Bytes().Len()+2)/3
	case pcommon.ValueTypeInt, pcommon.ValueTypeDouble:
		return 32
	case pcommon.ValueTypeBool, pcommon.ValueTypeEmpty:
		return 5
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		n := 2
		for i := 0; i < s.Len() && n <= limit; i++ {
			n += 1 + stringFormBound(s.At(i), limit-n)
		}
		return n
	case pcommon.ValueTypeMap:
		n := 2
		for k, e := range v.Map().All() {
			if n > limit {
				break
			}
			n += 2 + 6*len(k) + 2 + stringFormBound(e, limit-n)
		}
		return n
	}
	return limit + 1
}

// receivedAs notes that the bounded resource r came as the received resource raw (0: as it
// was received); true when another received resource was bounded to r before: a merge.
func (r *resourceState) receivedAs(raw uint64, now int64) (merged bool) {
	if !r.recvSet {
		r.recv, r.recvSet = raw, true
		return false
	}
	if raw == r.recv {
		return false
	}
	if _, ok := r.received[raw]; ok {
		r.received[raw] = now
		return false
	}
	if r.received == nil {
		r.received = map[uint64]int64{}
	}
	if len(r.received) < maxReceivedPerResource {
		r.received[raw] = now
	}
	return true
}

// BoundResources applies the resource rule to every resource that each yields (a traces or a
// logs batch: gymattrs in such a pipeline), so that spans and log records reach their
// exporters with resources bounded as the metrics' are. It counts in the same telemetry.
func (p *Bounder) BoundResources(ctx context.Context, each func(yield func(pcommon.Resource) bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.b.reset()
	for res := range each {
		p.boundResource(res)
	}
	p.record(ctx)
}
