package bound

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"strconv"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// dropReason says why a data point is dropped (the reason attribute of
// otelcol_processor_gymattrs_points_dropped); keepPoint keeps it.
type dropReason uint8

const (
	keepPoint              dropReason = iota
	dropRejectedValue                 // a declared attribute's value breaks a rejecting rule
	dropWrongType                     // a declared attribute's value has a type that cannot be converted
	dropIgnoredHealthCheck            // nemo.gym.health.check is a configured ignored check
	dropUnscoredReward                // a numeric reward range that is NaN: unscored, never counted
	dropStateFull                     // a cumulative stream the state bounds leave no room to track
	dropUnknownMetric                 // unknown_metrics: drop
	dropNoRecordedValue               // a no-recorded-value point that would fold into the overflow series
	dropInstrumentLimit               // an unknown instrument past maxUnknownInstruments of its resource
	dropUnmergeable                   // a point of an unknown instrument that cannot merge, past the limit
	numDropReasons
)

var dropReasonNames = [numDropReasons]string{
	keepPoint:              "",
	dropRejectedValue:      "rejected_value",
	dropWrongType:          "wrong_type",
	dropIgnoredHealthCheck: "ignored_health_check",
	dropUnscoredReward:     "unscored_reward",
	dropStateFull:          "state_full",
	dropUnknownMetric:      "unknown_metric",
	dropNoRecordedValue:    "no_recorded_value",
	dropInstrumentLimit:    "instrument_limit",
	dropUnmergeable:        "unmergeable_overflow",
}

func (r dropReason) String() string { return dropReasonNames[r] }

// maxInstrumentAttrs bounds the attributes of one instrument (the schema has at most 5);
// init panics should metadata.yaml ever exceed it.
const maxInstrumentAttrs = 8

// Schema tables built once at init, from the generated schema only.
var (
	// attrPos[instrument][attribute] is the attribute's position in the instrument's Attrs,
	// -1 when the instrument does not declare it.
	attrPos [schema.NumInstruments][schema.NumAttributes]int8

	// declaredKeys[instrument] are the keys of the instrument's Attrs, in their order: a
	// point's key is found among them by comparison (most end at the length), cheaper than
	// hashing every key of every point for the schema's map.
	declaredKeys [schema.NumInstruments][]string

	// scoredGate is the one conditional attribute rule of the schema that is not a value
	// rule: gym.rollout.completed_total carries its optional (failure) attributes only when
	// the outcome is not `scored` (the first value of nemo.gym.rollout.outcome, as the
	// receiver reads it). outcomePos is the outcome's position, optional the positions of the
	// optional attributes removed from a scored completion.
	scoredGate struct {
		id         schema.InstrumentID
		outcomePos int
		scored     string
		optional   []int
	}
)

func init() {
	for id := range schema.NumInstruments {
		in := schema.Get(id)
		if len(in.Attrs) > maxInstrumentAttrs {
			panic("bound: metadata.yaml instrument " + in.Name + " has more attributes than maxInstrumentAttrs")
		}
		for a := range attrPos[id] {
			attrPos[id][a] = -1
		}
		for i, a := range in.Attrs {
			attrPos[id][a.ID] = int8(i)
			declaredKeys[id] = append(declaredKeys[id], schema.Attr(a.ID).Key)
		}
	}
	scoredGate.id = schema.GymRolloutCompletedTotal
	scoredGate.scored = schema.ScoredOutcome
	scoredGate.outcomePos = int(attrPos[scoredGate.id][schema.AttrNemoGymRolloutOutcome])
	if scoredGate.outcomePos < 0 {
		panic("bound: metadata.yaml: gym.rollout.completed_total has no nemo.gym.rollout.outcome")
	}
	for i, a := range schema.Get(scoredGate.id).Attrs {
		if a.Optional {
			scoredGate.optional = append(scoredGate.optional, i)
		}
	}
}

// slot is one declared attribute of the instrument, as received and as bounded.
type slot struct {
	has    bool // received (its first occurrence)
	raw    pcommon.Value
	mapIdx int // its index in the point's attribute map

	present bool   // in the bounded attribute set
	changed bool   // the bounded value differs from the received one (value or type)
	str     []byte // string attributes: the bounded value
	s       string // string attributes: the bounded value as a string (no copy when a prefix)
	i       int64
	b       bool
}

// attrBounder bounds the attributes of one data point to its instrument and encodes the bounded
// set as a series key. It is reused for every point: bounding a point whose values are kept
// as received allocates nothing.
type attrBounder struct {
	reg  *normalize.Registry
	seed maphash.Seed

	id    schema.InstrumentID
	in    *schema.Instrument
	slots [maxInstrumentAttrs]slot

	drop []bool // per attribute of the point's map, in map order: remove it
	idx  int

	wantRaw bool
	raw     uint64 // hash of the received attributes (all of them), when wantRaw

	key []byte // the bounded set, encoded

	// sdkOverflow: the point is an SDK's own overflow series (otel.metric.overflow=true):
	// it belongs to the instrument's overflow series, whatever its other attributes.
	sdkOverflow bool

	// per point
	removed, normalised int

	visitFn, removeFn func(string, pcommon.Value) bool
	interned          map[string]string

	gen genericAttrs // the generic rules' scratch (unknown_attrs.go)
}

func newAttrBounder(reg *normalize.Registry) *attrBounder {
	b := &attrBounder{reg: reg, seed: maphash.MakeSeed(), interned: map[string]string{}}
	b.visitFn = b.visit
	b.removeFn = b.remove
	b.gen.visitFn = b.visitGeneric
	return b
}

// bound bounds attrs for instrument id. On keepPoint, b.key holds the series key, and
// write applies the bounded set to the map. wantRaw also hashes the received attributes
// into b.raw (the identity of the stream as sent, for cumulative points).
func (b *attrBounder) bound(id schema.InstrumentID, attrs pcommon.Map, wantRaw bool) dropReason {
	if b.gen.on = id == genericID; b.gen.on {
		return b.boundGeneric(attrs, wantRaw)
	}
	b.id, b.in = id, schema.Get(id)
	n := len(b.in.Attrs)
	for i := range n {
		b.slots[i] = slot{}
	}
	b.drop = b.drop[:0]
	b.idx = 0
	b.wantRaw, b.raw = wantRaw, 0
	b.removed, b.normalised = 0, 0
	b.sdkOverflow = false
	attrs.Range(b.visitFn)
	if b.sdkOverflow {
		return keepPoint
	}

	for i := range n {
		sl := &b.slots[i]
		if !sl.has {
			continue
		}
		if r := b.apply(i, sl); r != keepPoint {
			return r
		}
	}
	if id == scoredGate.id {
		if o := &b.slots[scoredGate.outcomePos]; o.present && o.s == scoredGate.scored {
			for _, i := range scoredGate.optional {
				b.leaveOut(&b.slots[i])
			}
		}
	}
	b.encode()
	return keepPoint
}

func (b *attrBounder) visit(k string, v pcommon.Value) bool {
	i := b.idx
	b.idx++
	if b.wantRaw {
		b.raw += entryHash(b.seed, k, v)
	}
	drop := true
	if k == schema.OverflowAttribute && v.Type() == pcommon.ValueTypeBool && v.Bool() {
		b.sdkOverflow = true
	} else if p := declaredPos(b.id, k); p >= 0 && !b.slots[p].has && v.Type() != pcommon.ValueTypeEmpty {
		sl := &b.slots[p]
		sl.has, sl.raw, sl.mapIdx = true, v, i
		drop = false
	}
	b.drop = append(b.drop, drop)
	if drop {
		b.removed++
	}
	return true
}

// declaredPos is the position of key k among instrument id's attributes (attrPos of its
// attribute), -1 when the instrument does not declare it.
func declaredPos(id schema.InstrumentID, k string) int {
	for p, d := range declaredKeys[id] {
		if d == k {
			return p
		}
	}
	return -1
}

// leaveOut removes a received attribute from the bounded set.
func (b *attrBounder) leaveOut(sl *slot) {
	if !sl.present {
		return
	}
	sl.present = false
	b.drop[sl.mapIdx] = true
	b.removed++
}

// apply bounds the received value of the instrument's i-th attribute by its rule.
func (b *attrBounder) apply(i int, sl *slot) dropReason {
	ia := &b.in.Attrs[i]
	a := schema.Attr(ia.ID)
	v := sl.raw
	switch a.Type {
	case schema.AttrString:
		return b.applyString(i, ia, a, sl)
	case schema.AttrInt:
		var n int64
		switch v.Type() {
		case pcommon.ValueTypeInt:
			n = v.Int()
		case pcommon.ValueTypeDouble:
			f := v.Double()
			if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
				return dropWrongType
			}
			n, sl.changed = int64(f), true
		case pcommon.ValueTypeStr:
			var ok bool
			if n, ok = parseDigits(v.Str()); !ok {
				return dropWrongType
			}
			sl.changed = true
		default:
			return dropWrongType
		}
		if !normalize.Int(ia.ID, n) {
			return dropRejectedValue
		}
		sl.present, sl.i = true, n
	case schema.AttrBool:
		switch v.Type() {
		case pcommon.ValueTypeBool:
			sl.b = v.Bool()
		case pcommon.ValueTypeStr:
			switch v.Str() {
			case "true":
				sl.b = true
			case "false":
				sl.b = false
			default:
				return dropWrongType
			}
			sl.changed = true
		default:
			return dropWrongType
		}
		sl.present = true
	default:
		return dropWrongType
	}
	if sl.changed {
		b.normalised++
	}
	return keepPoint
}

func (b *attrBounder) applyString(i int, ia *schema.InstrumentAttr, a *schema.Attribute, sl *slot) dropReason {
	v := sl.raw
	var s string
	converted := false
	switch v.Type() {
	case pcommon.ValueTypeStr:
		s = v.Str()
	case pcommon.ValueTypeInt, pcommon.ValueTypeDouble:
		if a.Rule == schema.RuleRewardRange {
			f := v.Double()
			if v.Type() == pcommon.ValueTypeInt {
				f = float64(v.Int())
			}
			return b.reward(i, sl, f)
		}
		s, converted = v.AsString(), true
	case pcommon.ValueTypeBool:
		if a.Rule == schema.RulePhase {
			return b.derived(i, sl, normalize.Phase(v.Bool()))
		}
		s, converted = v.AsString(), true
	default:
		return dropWrongType
	}
	in := bytesOf(s)
	if a.Rule == schema.RuleHealthCheck && b.reg.IgnoredHealthCheck(in) {
		return dropIgnoredHealthCheck
	}
	out, ok := b.reg.String(ia.ID, in)
	if !ok {
		if a.Rule == schema.RuleRewardRange {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return b.reward(i, sl, f)
			}
		}
		return dropRejectedValue
	}
	if out == nil {
		if !ia.Optional {
			return dropRejectedValue
		}
		// An empty optional value (failure kind/class/type, server type): left out.
		sl.present = true
		b.leaveOut(sl)
		return keepPoint
	}
	if ia.Values != nil && !b.in.Allows(i, out) {
		return dropRejectedValue
	}
	sl.present, sl.str = true, out
	sl.s = b.stringOf(out, s)
	if converted || sl.s != s {
		sl.changed = true
		b.normalised++
	}
	return keepPoint
}

// reward derives nemo.gym.rollout.reward.range from a numeric value (a reward sent where its
// range belongs). NaN is unscored: the point is dropped, as the receiver never counts it.
func (b *attrBounder) reward(i int, sl *slot, f float64) dropReason {
	rng, scored := normalize.RewardRange(f)
	if !scored {
		return dropUnscoredReward
	}
	return b.derived(i, sl, rng)
}

// derived sets a string attribute to a value derived from another type.
func (b *attrBounder) derived(i int, sl *slot, out []byte) dropReason {
	if b.in.Attrs[i].Values != nil && !b.in.Allows(i, out) {
		return dropRejectedValue
	}
	sl.present, sl.str, sl.changed = true, out, true
	sl.s = b.intern(out)
	b.normalised++
	return keepPoint
}

// stringOf returns out (a bounded value of s) as a string: a prefix of s when it is one (the
// normalisation rules cut, they never copy; copied from a long s, see prefixOf), else an
// interned copy (a fallback or sentinel of the schema: a small fixed set).
func (b *attrBounder) stringOf(out []byte, s string) string {
	if len(out) == 0 {
		return ""
	}
	if len(out) <= len(s) && unsafe.SliceData(out) == unsafe.StringData(s) {
		return prefixOf(s, len(out))
	}
	return b.intern(out)
}

// intern is only ever given values of the schema (fallbacks, enumerations, derived values),
// so the map stays small.
func (b *attrBounder) intern(out []byte) string {
	if s, ok := b.interned[string(out)]; ok {
		return s
	}
	s := string(out)
	b.interned[s] = s
	return s
}

// encode writes the series key: per declared attribute a presence byte and the typed value.
func (b *attrBounder) encode() {
	k := b.key[:0]
	for i := range b.in.Attrs {
		sl := &b.slots[i]
		if !sl.present {
			k = append(k, 0)
			continue
		}
		switch schema.Attr(b.in.Attrs[i].ID).Type {
		case schema.AttrString:
			k = append(k, 1)
			k = binary.AppendUvarint(k, uint64(len(sl.s)))
			k = append(k, sl.s...)
		case schema.AttrInt:
			k = append(k, 2)
			k = binary.LittleEndian.AppendUint64(k, uint64(sl.i))
		case schema.AttrBool:
			if sl.b {
				k = append(k, 4)
			} else {
				k = append(k, 3)
			}
		}
	}
	b.key = k
}

// write applies the bounded set to the map it was computed from: undeclared and left-out
// attributes are removed, changed values replaced (in place: the map keeps its order).
func (b *attrBounder) write(attrs pcommon.Map) {
	if b.gen.on {
		b.writeGeneric(attrs)
		return
	}
	if b.removed > 0 {
		b.idx = 0
		attrs.RemoveIf(b.removeFn)
	}
	for i := range b.in.Attrs {
		sl := &b.slots[i]
		if !sl.present || !sl.changed {
			continue
		}
		key := schema.Attr(b.in.Attrs[i].ID).Key
		switch schema.Attr(b.in.Attrs[i].ID).Type {
		case schema.AttrString:
			attrs.PutStr(key, sl.s)
		case schema.AttrInt:
			attrs.PutInt(key, sl.i)
		case schema.AttrBool:
			attrs.PutBool(key, sl.b)
		}
	}
}

func (b *attrBounder) remove(string, pcommon.Value) bool {
	i := b.idx
	b.idx++
	return i < len(b.drop) && b.drop[i]
}

// setOverflow makes attrs the overflow series' attribute set.
func setOverflow(attrs pcommon.Map) {
	attrs.Clear()
	attrs.PutBool(schema.OverflowAttribute, true)
}

// clearExemplarAttrs removes the filtered attributes of a point's exemplars: they are
// attributes the instrument does not declare (free text among them). Returns how many.
func clearExemplarAttrs(ex pmetric.ExemplarSlice) int {
	n := 0
	for i := 0; i < ex.Len(); i++ {
		fa := ex.At(i).FilteredAttributes()
		if l := fa.Len(); l > 0 {
			n += l
			fa.Clear()
		}
	}
	return n
}

// parseDigits parses a status-code-like string: ASCII digits only (leading zeros allowed,
// as events-v1 allows them in status-code keys), within int64.
func parseDigits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// bytesOf views s as bytes without copying. normalize never modifies its input, and what it
// returns is never modified here.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// entryHash hashes one attribute (key, type and value). Entries are combined by addition, so
// the hash of a map does not depend on its order.
func entryHash(seed maphash.Seed, k string, v pcommon.Value) uint64 {
	h := maphash.String(seed, k)
	var vh uint64
	switch v.Type() {
	case pcommon.ValueTypeStr:
		vh = maphash.String(seed, v.Str())
	case pcommon.ValueTypeInt:
		vh = mix64(uint64(v.Int()))
	case pcommon.ValueTypeDouble:
		vh = mix64(math.Float64bits(v.Double()) ^ 0x5bd1e9955bd1e995)
	case pcommon.ValueTypeBool:
		if v.Bool() {
			vh = mix64(3)
		} else {
			vh = mix64(5)
		}
	default:
		vh = maphash.String(seed, v.AsString())
	}
	return mix64(h ^ mix64(vh+uint64(v.Type())))
}

// mix64 is the splitmix64 finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
