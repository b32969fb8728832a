package protocol

import (
	"encoding/binary"
	"hash/maphash"
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

// maxKeyAttrs bounds the attributes of one instrument (the schema has at most 5).
const maxKeyAttrs = 8

// keyBuilder collects the normalised attribute values of one measurement. It lives in a Stream
// and is reused: building a key allocates nothing. The values are kept as they are (strings
// still in the line or the registry) with a running mix of them: a stream's recent series are
// found and checked against them (mix, equal), and the key is encoded into buf only for a map
// lookup. Reading back bytes just written one by one would stall on those stores.
type keyBuilder struct {
	in      *schema.Instrument
	id      schema.InstrumentID
	n       int // attributes set so far
	vals    [maxKeyAttrs]keyVal
	mix     uint64 // of the values so far, for recentSlot
	buf     []byte // the encoded key: per attribute a tag and the value
	encoded bool   // buf holds the key of vals
	reg     *normalize.Registry
}

// keyVal is one attribute of a key: its tag and, as the tag says, a string or an integer.
type keyVal struct {
	tag byte
	str []byte
	i   int64
}

func (k *keyBuilder) begin(id schema.InstrumentID) *keyBuilder {
	k.id = id
	k.in = schema.Get(id)
	k.n = 0
	k.mix = uint64(id)
	k.encoded = false
	return k
}

// add sets the next attribute, mixing m into the running mix.
func (k *keyBuilder) add(tag byte, str []byte, i int64, m uint64) *keyBuilder {
	k.vals[k.n] = keyVal{tag: tag, str: str, i: i}
	k.n++
	k.mix = k.mix*31 + m + uint64(tag)<<40
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
	// The length and three of the bytes: enough to tell apart the few series a stream
	// repeats (a collision only costs a map lookup).
	m := uint64(len(out))
	if len(out) > 0 {
		m += uint64(out[0])<<8 + uint64(out[len(out)/2])<<16 + uint64(out[len(out)-1])<<24
	}
	return k.add(keyString, out, 0, m)
}

// absent leaves the next (optional) attribute out.
func (k *keyBuilder) absent() *keyBuilder { return k.add(keyAbsent, nil, 0, 0) }

func (k *keyBuilder) int(v int64) *keyBuilder { return k.add(keyInt, nil, v, uint64(v)) }

func (k *keyBuilder) bool(v bool) *keyBuilder {
	if v {
		return k.add(keyTrue, nil, 0, 0)
	}
	return k.add(keyFalse, nil, 0, 0)
}

// key returns the encoded key of the attributes set so far.
func (k *keyBuilder) key() []byte {
	if !k.encoded {
		b := k.buf[:0]
		for i := range k.vals[:k.n] {
			v := &k.vals[i]
			b = append(b, v.tag)
			switch v.tag {
			case keyString:
				b = binary.AppendUvarint(b, uint64(len(v.str)))
				b = append(b, v.str...)
			case keyInt:
				b = binary.LittleEndian.AppendUint64(b, uint64(v.i))
			}
		}
		k.buf, k.encoded = b, true
	}
	return k.buf
}

// equal reports whether key (a series' encoded key) is the key of the attributes set so far,
// comparing it with the values where they are.
func (k *keyBuilder) equal(key string) bool {
	for i := range k.vals[:k.n] {
		v := &k.vals[i]
		if len(key) == 0 || key[0] != v.tag {
			return false
		}
		key = key[1:]
		switch v.tag {
		case keyString:
			n, w := decodeUvarint(key)
			if w == 0 || n != uint64(len(v.str)) || key[w:w+int(n)] != string(v.str) {
				return false
			}
			key = key[w+int(n):]
		case keyInt:
			if len(key) < 8 || leUint64(key) != uint64(v.i) {
				return false
			}
			key = key[8:]
		}
	}
	return len(key) == 0
}

// leUint64 is binary.LittleEndian.Uint64 for a string of at least 8 bytes.
func leUint64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// decodeUvarint is binary.Uvarint for a string; w is 0 when key does not start with one.
func decodeUvarint(key string) (n uint64, w int) {
	for shift := 0; w < len(key) && w < binary.MaxVarintLen64; shift += 7 {
		c := key[w]
		w++
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return n, w
		}
	}
	return 0, 0
}

// ownedAttrs copies the values for a new series.
func (k *keyBuilder) ownedAttrs() []ownedAttr {
	out := make([]ownedAttr, 0, k.n)
	for i := range k.vals[:k.n] {
		v := &k.vals[i]
		if v.tag == keyAbsent {
			continue
		}
		out = append(out, ownedAttr{id: k.in.Attrs[i].ID, str: string(v.str), i: v.i, b: v.tag == keyTrue})
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
