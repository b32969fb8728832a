package aggregate

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Sink applies the events of one source (an HTTP request body, a connection, a file, a run)
// under its current resource: the aggregator's events.Sink. It decodes nothing: every input
// hands it decoded events. Not safe for concurrent use.
type Sink struct {
	agg     *Aggregator
	kb      keyBuilder
	cur     *Resource // nil: the sink's default resource
	def     *Resource
	defAttr []ResourceAttrValue
	defKey  []byte
	touched []touchedSeries
	checks  [][]byte
	rkey    []byte
	order   []int
	stats   *ingest.Stats // the source's: the sink counts overflowed measurements there

	// recent holds, per instrument, series this sink found lately (Resource.series).
	recent [schema.NumInstruments]recentSeries
}

// recentSeries are series of one instrument that a sink found lately, by recentSlot of
// their key. They are valid while the resource's instrument is in: a series stays in its
// instrument for the instrument's life (a new instrument, of another resource or after the
// process series were dropped, starts them afresh).
type recentSeries struct {
	in *instrument
	s  [8]*series
}

// recentSlot picks the recentSeries slot of a series key: a mix of its first and last eight
// bytes (keys that collide only cost a map lookup).
func recentSlot(key []byte) int {
	var w uint64
	if len(key) >= 8 {
		w = binary.LittleEndian.Uint64(key) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(key[len(key)-8:]), 29)
	} else {
		for _, c := range key {
			w = w<<8 | uint64(c)
		}
	}
	w = (w ^ w>>30) * 0xbf58476d1ce4e5b9 // splitmix64's finaliser: every bit of w counts
	w = (w ^ w>>27) * 0x94d049bb133111eb
	return int(w >> 61)
}

// NewSink returns the sink of a source whose default resource has defaultAttrs
// (events.DefaultResource); it counts overflowed measurements into stats. An events.NewSink.
func (a *Aggregator) NewSink(defaultAttrs []events.ResourceAttr, stats *ingest.Stats) events.Sink {
	return a.newSink(defaultAttrs, stats)
}

func (a *Aggregator) newSink(defaultAttrs []events.ResourceAttr, stats *ingest.Stats) *Sink {
	s := &Sink{
		agg:     a,
		kb:      keyBuilder{reg: a.cfg.Registry},
		defAttr: ownResourceAttrs(defaultAttrs),
		stats:   stats,
	}
	s.defKey = encodeResourceKey(nil, defaultAttrs, &s.order)
	return s
}

// DefaultResource makes the default resource current again.
func (s *Sink) DefaultResource() { s.cur = nil }

// Apply records an event under the sink's current resource.
func (s *Sink) Apply(ev *events.Event) {
	s.applyCurrent(ev)
}

func (s *Sink) applyCurrent(ev *events.Event) {
	r := s.resource()
	r.mu.Lock()
	for r.dropped {
		// A collection expired it meanwhile: the process is back, start it afresh.
		r.mu.Unlock()
		r = s.agg.revive(r)
		s.setCurrent(r)
		r.mu.Lock()
	}
	r.apply(s.agg, s, ev)
	r.mu.Unlock()
}

func (s *Sink) resource() *Resource {
	if s.cur != nil {
		return s.cur
	}
	if s.def == nil {
		s.def = s.agg.resource(s.defKey, func() []ResourceAttrValue { return s.defAttr })
	}
	return s.def
}

func (s *Sink) setCurrent(r *Resource) {
	if s.cur == nil {
		s.def = r
	} else {
		s.cur = r
	}
}

// SetResource makes the resource of attrs current; over max_resources it refuses it and
// makes the default resource current.
func (s *Sink) SetResource(attrs []events.ResourceAttr) error {
	s.rkey = encodeResourceKey(s.rkey[:0], attrs, &s.order)
	room := int64(1)
	if s.def == nil && s.agg.cfg.MaxResources > 0 && !s.agg.holds(s.defKey) {
		room = 2 // keep a place for the default resource a refused line falls back to
	}
	r, ok := s.agg.resourceWithin(s.rkey, func() []ResourceAttrValue { return ownResourceAttrs(attrs) }, room)
	if !ok {
		s.cur = nil
		return errTooManyResources(s.agg.cfg.MaxResources)
	}
	s.cur = r
	s.agg.announce(s.cur, attrs)
	return nil
}

// ReasonTooManyResources counts resource lines refused because max_resources are held.
const ReasonTooManyResources = "too_many_resources"

func errTooManyResources(max int) error {
	return events.NewDecodeError(ReasonTooManyResources, fmt.Sprintf("a new resource over max_resources %d: the lines after it go to the source's default resource until a known resource line", max))
}

func ownResourceAttrs(attrs []events.ResourceAttr) []ResourceAttrValue {
	out := make([]ResourceAttrValue, len(attrs))
	for i, a := range attrs {
		out[i] = ResourceAttrValue{Key: string(a.Key), Kind: a.Kind, Str: string(a.Str), Int: a.Int, Bool: a.Bool}
	}
	slices.SortFunc(out, func(x, y ResourceAttrValue) int { return strings.Compare(x.Key, y.Key) })
	return out
}

// encodeResourceKey encodes a resource's identity: typed equality of the attribute set, so
// the attributes sorted by key, each with its type. A resource line that repeats the default
// resource's attributes is the same resource.
func encodeResourceKey(b []byte, attrs []events.ResourceAttr, order *[]int) []byte {
	o := (*order)[:0]
	for i := range attrs {
		o = append(o, i)
	}
	slices.SortFunc(o, func(x, y int) int { return strings.Compare(string(attrs[x].Key), string(attrs[y].Key)) })
	*order = o
	for _, i := range o {
		a := &attrs[i]
		b = appendResourceAttr(b, a.Key, a.Kind, a.Str, a.Int, a.Bool)
	}
	return b
}

func appendResourceAttr(b, key []byte, kind events.ValueKind, str []byte, i int64, bv bool) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = append(b, byte(kind))
	switch kind {
	case events.ValueString:
		b = binary.AppendUvarint(b, uint64(len(str)))
		b = append(b, str...)
	case events.ValueInt:
		b = binary.LittleEndian.AppendUint64(b, uint64(i))
	case events.ValueBool:
		if bv {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	return b
}
