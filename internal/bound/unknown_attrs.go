package bound

import (
	"cmp"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// genericID is the instrument the attrBounder is given for a point bounded by the generic
// rules: a metric the schema does not know, or a schema metric it does not accept as sent
// (docs/processor.md, "Unknown metrics").
const genericID = schema.NumInstruments

// The generic rules' bounds on one point's attributes. A point of an SDK has at most 128
// attributes (the OpenTelemetry SDKs' default attribute count limit); a key is a name, not
// free text. Past them an attribute is removed (counted): a series key stays bounded.
const (
	maxGenericAttrs    = 128
	maxGenericKeyBytes = schema.DefaultStringMaxBytes
)

// genericAttrs is the scratch of the generic rules, reused for every point.
type genericAttrs struct {
	on      bool // the point was bounded by the generic rules (write follows them)
	kvs     []genericKV
	conv    int // values to write back
	visitFn func(string, pcommon.Value) bool
}

// genericKV is one attribute of the point as received, and its bounded value.
type genericKV struct {
	k       string
	v       pcommon.Value
	idx     int    // its index in the point's map
	s       string // string and complex values: the bounded string
	conv    bool   // the bounded value differs from the received one (written back)
	removed bool
}

// boundGeneric bounds attrs by the generic rules: every attribute stays, except a repeated
// key (the first stays), a key longer than maxGenericKeyBytes and, in key order, those past
// maxGenericAttrs; a string value is capped at schema.DefaultStringMaxBytes of valid UTF-8
// (normalize.FreeString, the rule of the schema's free strings); a map, slice or bytes value
// becomes its string form (JSON, base64), capped alike; ints, doubles and bools stay. The
// series key is the bounded set in key order, so two orders of one set are one series.
func (b *attrBounder) boundGeneric(attrs pcommon.Map, wantRaw bool) dropReason {
	g := &b.gen
	g.kvs = g.kvs[:0]
	g.conv = 0
	b.drop = b.drop[:0]
	b.wantRaw, b.raw = wantRaw, 0
	b.removed, b.normalised = 0, 0
	b.sdkOverflow = false
	attrs.Range(g.visitFn)
	if b.sdkOverflow {
		return keepPoint
	}
	slices.SortStableFunc(g.kvs, func(x, y genericKV) int { return cmp.Compare(x.k, y.k) })
	kept := 0
	for j := range g.kvs {
		kv := &g.kvs[j]
		if (j > 0 && kv.k == g.kvs[j-1].k) || len(kv.k) > maxGenericKeyBytes || kept == maxGenericAttrs {
			kv.removed = true
			b.drop[kv.idx] = true
			b.removed++
			continue
		}
		kept++
		switch kv.v.Type() {
		case pcommon.ValueTypeStr:
			kv.s = kv.v.Str()
			if out := normalize.FreeString(bytesOf(kv.s)); len(out) != len(kv.s) {
				kv.s, kv.conv = prefixOf(kv.s, len(out)), true
			}
		case pcommon.ValueTypeMap, pcommon.ValueTypeSlice, pcommon.ValueTypeBytes:
			kv.s = kv.v.AsString()
			kv.s, kv.conv = prefixOf(kv.s, len(normalize.FreeString(bytesOf(kv.s)))), true
		}
		if kv.conv {
			g.conv++
			b.normalised++
		}
	}
	b.encodeGeneric()
	return keepPoint
}

func (b *attrBounder) visitGeneric(k string, v pcommon.Value) bool {
	if b.wantRaw {
		b.raw += entryHash(b.seed, k, v)
	}
	if k == schema.OverflowAttribute && v.Type() == pcommon.ValueTypeBool && v.Bool() {
		b.sdkOverflow = true
	}
	b.gen.kvs = append(b.gen.kvs, genericKV{k: k, v: v, idx: len(b.drop)})
	b.drop = append(b.drop, false)
	return true
}

// encodeGeneric writes the series key: per kept attribute, in key order, the key and the
// typed bounded value (a converted value is a string).
func (b *attrBounder) encodeGeneric() {
	k := b.key[:0]
	for j := range b.gen.kvs {
		kv := &b.gen.kvs[j]
		if kv.removed {
			continue
		}
		t := kv.v.Type()
		if kv.conv {
			t = pcommon.ValueTypeStr
		}
		k = appendTyped(k, kv.k, t, kv.v, kv.s)
	}
	b.key = k
}

// writeGeneric applies the bounded set to the map it was computed from: removed attributes go,
// capped and converted values are replaced (in place: the map keeps its order).
func (b *attrBounder) writeGeneric(attrs pcommon.Map) {
	if b.removed > 0 {
		b.idx = 0
		attrs.RemoveIf(b.removeFn)
	}
	if b.gen.conv == 0 {
		return
	}
	for j := range b.gen.kvs {
		if kv := &b.gen.kvs[j]; kv.conv && !kv.removed {
			attrs.PutStr(kv.k, kv.s)
		}
	}
}
