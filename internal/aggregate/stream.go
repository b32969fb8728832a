package aggregate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Outcome is what became of one line (ingest's: the transports share it).
type Outcome = ingest.Outcome

const (
	Blank    = ingest.Blank    // only white space: counted nowhere
	Accepted = ingest.Accepted // applied
	Unknown  = ingest.Unknown  // an unknown event: counted and dropped
	Rejected = ingest.Rejected // broke a rule: counted with its reason, changed nothing
)

// StreamStats counts what a stream did with its lines since the last Reset (ingest's).
type StreamStats = ingest.Stats

// Stream is one stream of lines (an HTTP request body, a connection, a file) with its own
// current resource. Not safe for concurrent use.
type Stream struct {
	agg     *Aggregator
	dec     *events.Decoder
	ev      events.Event
	kb      keyBuilder
	cur     *Resource // nil: the stream's default resource
	def     *Resource
	defAttr []ResourceAttrValue
	defKey  []byte
	touched []touchedSeries
	checks  [][]byte
	rkey    []byte
	order   []int
	Stats   StreamStats

	// keepResource keeps a copy of the current resource line (files keep it with their
	// offsets, so that a resumed file goes on under its resource).
	keepResource bool
	resLine      []byte

	// recent holds, per instrument, series this stream found lately (Resource.series).
	recent [schema.NumInstruments]recentSeries
}

// recentSeries are series of one instrument that a stream found lately, by recentSlot of
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

// DefaultResource returns the attributes of a stream's default resource: gym.source, and
// log.file.path for a file (filePath "" leaves it out). A path that is not UTF-8 (a file name
// is any bytes) has its invalid bytes replaced by U+FFFD, as the rollouts source does: an
// attribute value must be UTF-8 for every backend.
func DefaultResource(source, filePath string) []events.ResourceAttr {
	attrs := []events.ResourceAttr{{Key: []byte(schema.ResourceSourceKey), Kind: events.ValueString, Str: []byte(source)}}
	if filePath != "" {
		attrs = append(attrs, events.ResourceAttr{Key: []byte(schema.ResourceFilePathKey), Kind: events.ValueString, Str: []byte(strings.ToValidUTF8(filePath, "\uFFFD"))})
	}
	return attrs
}

// NewStream returns a stream whose default resource has the given attributes (DefaultResource).
func (a *Aggregator) NewStream(maxLineBytes int, defaultAttrs []events.ResourceAttr) *Stream {
	s := &Stream{
		agg:     a,
		dec:     events.NewDecoder(maxLineBytes),
		kb:      keyBuilder{reg: a.cfg.Registry},
		defAttr: ownResourceAttrs(defaultAttrs),
		Stats:   ingest.NewStats(),
	}
	s.defKey = encodeResourceKey(nil, defaultAttrs, &s.order)
	return s
}

// Reset clears the stats and makes the default resource current again, so that a Stream can
// serve another request body.
func (s *Stream) Reset() {
	s.cur = nil
	s.Stats.Clear()
}

// Flush returns the stream's counts since they were last cleared (a transport records and
// clears them at the end of each read). The stream holds nothing back: every line is applied
// as it comes.
func (s *Stream) Flush() *StreamStats { return &s.Stats }

// Reject counts a line the transport refused before decoding it (over max_line_bytes while
// still arriving, cut short at the end of a stream). It changes nothing else.
func (s *Stream) Reject(reason string) {
	s.Stats.Rejected[reason]++
}

// Line decodes and applies one line (without its newline). A rejected line returns its error
// and changes nothing.
func (s *Stream) Line(line []byte) (Outcome, error) {
	err := s.dec.Decode(line, &s.ev)
	if err != nil {
		if errors.Is(err, events.ErrBlank) {
			return Blank, nil
		}
		s.Stats.Rejected[events.Reason(err)]++
		if s.ev.Type == events.EventResource {
			// Events after a rejected resource line belong to the default resource, so that no
			// event is put under a process that did not send it.
			s.cur = nil
			s.resLine = s.resLine[:0]
		}
		return Rejected, err
	}
	switch s.ev.Type {
	case events.EventUnknown:
		s.Stats.Unknown++
		return Unknown, nil
	case events.EventResource:
		if err := s.setResource(); err != nil {
			s.Stats.Rejected[ReasonTooManyResources]++
			s.cur = nil
			s.resLine = s.resLine[:0]
			return Rejected, err
		}
		if s.keepResource {
			s.resLine = append(s.resLine[:0], line...)
		}
		s.Stats.Accepted++
		return Accepted, nil
	}
	s.applyCurrent(&s.ev)
	s.Stats.Accepted++
	return Accepted, nil
}

// Apply records an event that another decoder produced (Gym's own run files, for one) under
// the stream's current resource, exactly as a decoded line's event. It counts no line: the
// caller counts its own input. ev's slices need be valid only during the call; its values
// must meet what Decode guarantees (valid UTF-8, enumerations within their sets).
func (s *Stream) Apply(ev *events.Event) {
	s.applyCurrent(ev)
}

func (s *Stream) applyCurrent(ev *events.Event) {
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

// KeepResourceLine makes the stream keep a copy of its current resource line (ResourceLine).
func (s *Stream) KeepResourceLine() { s.keepResource = true }

// ResourceLine returns the stream's current resource line, or nil while it is on its default
// resource. Valid until the next Line.
func (s *Stream) ResourceLine() []byte {
	if s.cur == nil || len(s.resLine) == 0 {
		return nil
	}
	return s.resLine
}

// Restore makes the resource of a resource line (kept by ResourceLine earlier) current again,
// without counting the line: a file resumed after a restart goes on under its resource.
func (s *Stream) Restore(line []byte) error {
	if err := s.dec.Decode(line, &s.ev); err != nil {
		return err
	}
	if s.ev.Type != events.EventResource {
		return errors.New("not a resource line")
	}
	if err := s.setResource(); err != nil {
		return err
	}
	if s.keepResource {
		s.resLine = append(s.resLine[:0], line...)
	}
	return nil
}

func (s *Stream) resource() *Resource {
	if s.cur != nil {
		return s.cur
	}
	if s.def == nil {
		s.def = s.agg.resource(s.defKey, func() []ResourceAttrValue { return s.defAttr })
	}
	return s.def
}

func (s *Stream) setCurrent(r *Resource) {
	if s.cur == nil {
		s.def = r
	} else {
		s.cur = r
	}
}

// setResource makes the resource of the decoded resource line current.
func (s *Stream) setResource() error {
	attrs := s.ev.Attrs
	s.rkey = encodeResourceKey(s.rkey[:0], attrs, &s.order)
	room := int64(1)
	if s.def == nil && s.agg.cfg.MaxResources > 0 && !s.agg.holds(s.defKey) {
		room = 2 // keep a place for the default resource a refused line falls back to
	}
	r, ok := s.agg.resourceWithin(s.rkey, func() []ResourceAttrValue { return ownResourceAttrs(attrs) }, room)
	if !ok {
		return errTooManyResources(s.agg.cfg.MaxResources)
	}
	s.cur = r
	s.agg.announce(s.cur, attrs)
	return nil
}

// ReasonTooManyResources counts resource lines refused because max_resources are held.
const ReasonTooManyResources = "too_many_resources"

func errTooManyResources(max int) error {
	return events.NewDecodeError(ReasonTooManyResources, fmt.Sprintf("a new resource over max_resources %d: the lines after it go to the stream's default resource until a known resource line", max))
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
