package aggregate

import (
	"encoding/binary"
	"math"
	"math/bits"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Tags of the encoded attributes of a series key.
const (
	keyAbsent byte = iota
	keyString      // then the length (uvarint) and the bytes
	keyInt         // then 8 bytes, little-endian
	keyFalse
	keyTrue
)

// keyBuilder collects the normalised attribute values of one measurement, encoded into a map
// key as they come. It lives in a Stream and is reused: building a key allocates nothing.
type keyBuilder struct {
	in  *schema.Instrument
	id  schema.InstrumentID
	n   int    // attributes set so far
	buf []byte // the key: per attribute a tag and the value
	reg *normalize.Registry
}

func (k *keyBuilder) begin(id schema.InstrumentID) *keyBuilder {
	k.id = id
	k.in = schema.Get(id)
	k.n = 0
	k.buf = k.buf[:0]
	return k
}

// str sets the next attribute to a string value, normalised by the attribute's rule. An
// optional attribute with an empty value is left out. Every string comes from a decoded line,
// valid UTF-8, so the rule need not check that again.
func (k *keyBuilder) str(v []byte) *keyBuilder {
	a := &k.in.Attrs[k.n]
	if len(v) == 0 && a.Optional {
		return k.absent()
	}
	out, _ := k.reg.StringValidUTF8(a.ID, v) // enumerations were validated by the decoder
	if len(out) == 0 && a.Optional {
		return k.absent()
	}
	k.n++
	k.buf = append(k.buf, keyString)
	k.buf = binary.AppendUvarint(k.buf, uint64(len(out)))
	k.buf = append(k.buf, out...)
	return k
}

// absent leaves the next (optional) attribute out.
func (k *keyBuilder) absent() *keyBuilder {
	k.n++
	k.buf = append(k.buf, keyAbsent)
	return k
}

func (k *keyBuilder) int(v int64) *keyBuilder {
	k.n++
	k.buf = append(k.buf, keyInt)
	k.buf = binary.LittleEndian.AppendUint64(k.buf, uint64(v))
	return k
}

func (k *keyBuilder) bool(v bool) *keyBuilder {
	k.n++
	if v {
		k.buf = append(k.buf, keyTrue)
	} else {
		k.buf = append(k.buf, keyFalse)
	}
	return k
}

// key returns the encoded key of the attributes set so far.
func (k *keyBuilder) key() []byte { return k.buf }

// ownedAttrs decodes the key into the attributes of a new series.
func (k *keyBuilder) ownedAttrs() []ownedAttr {
	out := make([]ownedAttr, 0, k.n)
	b := k.buf
	for i := 0; i < k.n; i++ {
		tag := b[0]
		b = b[1:]
		a := ownedAttr{id: k.in.Attrs[i].ID}
		switch tag {
		case keyAbsent:
			continue
		case keyString:
			n, w := binary.Uvarint(b)
			a.str = string(b[w : w+int(n)])
			b = b[w+int(n):]
		case keyInt:
			a.i = int64(binary.LittleEndian.Uint64(b))
			b = b[8:]
		case keyFalse, keyTrue:
			a.b = tag == keyTrue
		}
		out = append(out, a)
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
	key      string // its key in instrument.series (the same string)
	attrs    []ownedAttr
	overflow bool
	hasVal   bool // sums and gauges: val or dval is set
	start    pcommon.Timestamp

	// sums and gauges
	val  int64
	dval float64

	// histograms
	count    uint64
	sum      float64
	min, max float64
	buckets  []uint64

	// snapshots: the value this line is building, and the line that built it
	pending int64
	seq     uint64
}

// record adds v, a finite number (a duration or a size: never NaN, never -0), to a histogram
// series of instrument id. For such values plain compares are math.Min and math.Max.
func (s *series) record(id schema.InstrumentID, v float64) {
	if s.count == 0 {
		s.min, s.max = v, v
	} else {
		if v < s.min {
			s.min = v
		}
		if v > s.max {
			s.max = v
		}
	}
	s.count++
	s.sum += v
	s.buckets[bucketOf(orderedBounds[id], orderedFloat(v))]++
}

// orderedFloat maps a float64 that is not NaN to a uint64 in the same order (for bucketOf).
func orderedFloat(f float64) uint64 {
	b := math.Float64bits(f)
	return b ^ (uint64(int64(b)>>63) | 1<<63) // negative: all bits flipped; else the sign bit set
}

// orderedBounds are the bucket bounds of each histogram instrument, as orderedFloat keys.
var orderedBounds = func() (o [schema.NumInstruments][]uint64) {
	for id := range o {
		for _, b := range schema.Get(schema.InstrumentID(id)).Bounds {
			o[id] = append(o[id], orderedFloat(b))
		}
	}
	return o
}()

// bucketOf is sort.SearchFloat64s(bounds, v) for a v that is not NaN, on orderedFloat keys:
// the index of the first bound >= v. The search halves the window with a conditional move
// instead of a branch (the borrow of an integer subtraction): which way a sample goes
// is unpredictable, and a mispredicted branch a step costs more than the whole search.
func bucketOf(bounds []uint64, v uint64) int {
	n := len(bounds)
	if n == 0 {
		return 0
	}
	base := 0
	for n > 1 {
		half := n / 2
		_, less := bits.Sub64(bounds[base+half], v, 0) // 1 when bounds[base+half] < v
		base += half * int(less)
		n -= half
	}
	if bounds[base] < v {
		base++
	}
	return base
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
	series   map[string]*series // by key (series.key)
	order    []*series          // admission order, for a stable export
	overflow *series
	folded   map[uint64]foldedSnapshot // by foldHash of the key
	foldSalt uint64
}

// foldHash identifies a folded series by its key: FNV-1a over a random salt (per instrument)
// and the key. Unlike maphash it is the same in every process, so the remembered values
// survive a restart with the checkpoint; the salt keeps senders from choosing collisions.
func foldHash(salt uint64, key []byte) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := range 8 {
		h = (h ^ (salt >> (8 * i) & 0xff)) * prime
	}
	for _, c := range key {
		h = (h ^ uint64(c)) * prime
	}
	return h
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
