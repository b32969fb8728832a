package protocol

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// attrVal is one attribute value of a series key, typed as the schema says.
type attrVal struct {
	present bool
	str     []byte
	i       int64
	b       bool
}

// maxInstrumentAttrs bounds the attributes of one instrument (the schema has at most 5).
const maxInstrumentAttrs = 8

// keyBuilder collects the normalised attribute values of one measurement and encodes them
// into a map key. It lives in a Stream and is reused: building a key allocates nothing.
type keyBuilder struct {
	in   *schema.Instrument
	id   schema.InstrumentID
	n    int
	vals [maxInstrumentAttrs]attrVal
	buf  []byte
	reg  registry
}

// registry is what the key builder needs of normalize.Registry.
type registry interface {
	String(id schema.AttrID, v []byte) ([]byte, bool)
}

func (k *keyBuilder) begin(id schema.InstrumentID) *keyBuilder {
	k.id = id
	k.in = schema.Get(id)
	k.n = 0
	return k
}

// str sets the next attribute to a string value, normalised by the attribute's rule. An
// optional attribute with an empty value is left out.
func (k *keyBuilder) str(v []byte) *keyBuilder {
	a := &k.in.Attrs[k.n]
	val := &k.vals[k.n]
	k.n++
	if len(v) == 0 && a.Optional {
		val.present = false
		return k
	}
	out, _ := k.reg.String(a.ID, v) // enumerations were validated by the decoder
	if len(out) == 0 && a.Optional {
		val.present = false
		return k
	}
	val.present, val.str = true, out
	return k
}

// absent leaves the next (optional) attribute out.
func (k *keyBuilder) absent() *keyBuilder {
	k.vals[k.n].present = false
	k.n++
	return k
}

func (k *keyBuilder) int(v int64) *keyBuilder {
	k.vals[k.n] = attrVal{present: true, i: v}
	k.n++
	return k
}

func (k *keyBuilder) bool(v bool) *keyBuilder {
	k.vals[k.n] = attrVal{present: true, b: v}
	k.n++
	return k
}

// encode writes the key: per attribute a presence byte and the value.
func (k *keyBuilder) encode() []byte {
	b := k.buf[:0]
	for i := 0; i < k.n; i++ {
		v := &k.vals[i]
		if !v.present {
			b = append(b, 0)
			continue
		}
		switch schema.Attr(k.in.Attrs[i].ID).Type {
		case schema.AttrString:
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(len(v.str)))
			b = append(b, v.str...)
		case schema.AttrInt:
			b = append(b, 2)
			b = binary.LittleEndian.AppendUint64(b, uint64(v.i))
		case schema.AttrBool:
			if v.b {
				b = append(b, 4)
			} else {
				b = append(b, 3)
			}
		}
	}
	k.buf = b
	return b
}

// ownedAttrs copies the key's values for a new series.
func (k *keyBuilder) ownedAttrs() []ownedAttr {
	out := make([]ownedAttr, 0, k.n)
	for i := 0; i < k.n; i++ {
		v := &k.vals[i]
		if !v.present {
			continue
		}
		out = append(out, ownedAttr{id: k.in.Attrs[i].ID, str: string(v.str), i: v.i, b: v.b})
	}
	return out
}

type ownedAttr struct {
	id  schema.AttrID
	str string
	i   int64
	b   bool
}

// series is the cumulative state of one (resource, instrument, attribute set).
type series struct {
	attrs    []ownedAttr
	overflow bool
	start    pcommon.Timestamp

	// sums and gauges
	val    int64
	dval   float64
	hasVal bool

	// histograms
	count    uint64
	sum      float64
	min, max float64
	buckets  []uint64

	// snapshots: the value this line is building, and the line that built it
	pending int64
	seq     uint64
}

func (s *series) record(bounds []float64, v float64) {
	if s.count == 0 {
		s.min, s.max = v, v
	} else {
		s.min = math.Min(s.min, v)
		s.max = math.Max(s.max, v)
	}
	s.count++
	s.sum += v
	s.buckets[sort.SearchFloat64s(bounds, v)]++
}

// foldedSnapshot is the latest value of a snapshot series folded into the overflow series.
type foldedSnapshot struct {
	seq uint64
	val int64
}

// maxFoldedSnapshots bounds the memory an instrument spends remembering the latest value of
// each snapshot series folded into its overflow series. Past it, a folded key not yet seen
// adds its value without being remembered (docs/receiver.md).
const maxFoldedSnapshots = 1 << 16

// instrument is the state of one instrument of one resource.
type instrument struct {
	id       schema.InstrumentID
	series   map[string]*series
	order    []*series // admission order, for a stable export
	overflow *series
	folded   map[uint64]foldedSnapshot
	foldSeed maphash.Seed
}

func newInstrument(id schema.InstrumentID) *instrument {
	return &instrument{id: id, series: map[string]*series{}}
}

func newSeries(in *schema.Instrument, attrs []ownedAttr, now pcommon.Timestamp) *series {
	s := &series{attrs: attrs, start: now}
	if in.Kind == schema.KindHistogram {
		s.buckets = make([]uint64, len(in.Bounds)+1)
	}
	return s
}
