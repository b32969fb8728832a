package events

import (
	"bytes"
	"fmt"
	"hash/maphash"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Objects and arrays inside a line: resource attributes, snapshots, flagged checks. The
// line has been validated by parseTop, so the iterators below only walk it.

// cursor walks the members of an object or the elements of an array.
type cursor struct{ i int }

// iter starts walking the object or array of s.
func (d *Decoder) iter(s *slot) cursor { return cursor{i: int(s.start) + 1} }

// nextMember returns the next member of the object being walked: its value, and its key in
// *key (the slots travel in registers, two of them would not).
func (d *Decoder) nextMember(it *cursor, key *slot) (val slot, ok bool) {
	b := d.line
	i := gymjson.SkipSpace(b, it.i)
	if i >= len(b) || b[i] != '"' {
		return val, false
	}
	ke, _, _, _ := gymjson.ScanPlainString(b, i)
	kesc := false
	if ke < 0 {
		var err error
		if ke, kesc, err = gymjson.ScanString(b, i); err != nil {
			d.invalid(err)
			return val, false
		}
	}
	*key = makeSlot(i, ke, gymjson.String, kesc)
	i = gymjson.SkipSpace(b, ke)
	if i >= len(b) || b[i] != ':' {
		d.invalid(gymjson.SyntaxError(b, i, "want ':'"))
		return val, false
	}
	return d.value(it, gymjson.SkipSpace(b, i+1))
}

// nextElem returns the next element of the array being walked.
func (d *Decoder) nextElem(it *cursor) (val slot, ok bool) {
	b := d.line
	i := gymjson.SkipSpace(b, it.i)
	if i >= len(b) || b[i] == ']' {
		return val, false
	}
	return d.value(it, i)
}

// value scans the member's or element's value at line[i] and moves the cursor past it and
// its comma.
func (d *Decoder) value(it *cursor, i int) (val slot, ok bool) {
	b := d.line
	val, ve := d.scanSlot(b, i)
	if ve < 0 {
		return val, false
	}
	i = gymjson.SkipSpace(b, ve)
	if i < len(b) && b[i] == ',' {
		i++
	}
	it.i = i
	return val, true
}

// scanSlot scans the value at b[i] of an object or array being walked (already validated:
// its depth is not checked again) into a slot, plain strings and numbers by their fast paths.
// It returns the slot and the index just past the value, or -1 after recording an error.
func (d *Decoder) scanSlot(b []byte, i int) (slot, int) {
	if i < len(b) {
		switch c := b[i]; {
		case c == '"':
			if e, _, _, _ := gymjson.ScanPlainString(b, i); e >= 0 {
				return makeSlot(i, e, gymjson.String, false), e
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if e, mant, num := gymjson.ScanPlainNumber(b, i); e >= 0 {
				return slot{start: int32(i), end: int32(e), kind: gymjson.Number, num: num, mant: mant}, e
			}
		}
	}
	e, kind, esc, err := gymjson.ScanValue(b, i, 1)
	if err != nil {
		d.invalid(err)
		return slot{}, -1
	}
	return makeSlot(i, e, kind, esc), e
}

// invalid records a syntax error found while walking (cannot happen on a validated line).
func (d *Decoder) invalid(err error) {
	if d.err == nil {
		d.err = scanError(err)
	}
}

// container returns the slot of field k when it is an object or array of kind (want
// describes it in the message of another type). ok is false when an error is already
// recorded, when the field is absent or null (missing when required), or of another type.
func (d *Decoder) container(k int, kind gymjson.Kind, required bool, want string) (*slot, bool) {
	if d.err != nil {
		return nil, false
	}
	s, ok := d.get(k)
	if !ok {
		if required {
			d.missing(keyNames[k])
		}
		return nil, false
	}
	if s.kind != kind {
		d.wrongType(k, want, s)
		return nil, false
	}
	return s, true
}

// ---- members deduplicated by key (last occurrence wins) ----

// linearMembers is the member count up to which lookups scan linearly.
const linearMembers = 8

// resetMembers starts collecting the members of a new object.
func (d *Decoder) resetMembers() {
	d.members = d.members[:0]
	d.mask = 0
}

// member returns the index of key in d.members, appending it when new.
func (d *Decoder) member(key []byte) (idx int, found bool) {
	n := len(d.members)
	if n < linearMembers {
		for i := range d.members {
			if bytes.Equal(d.members[i].key, key) {
				return i, true
			}
		}
		d.members = append(d.members, objectMember{key: key})
		return n, false
	}
	if d.mask == 0 || 2*(n+1) > d.mask+1 {
		d.rehash(n + 1)
	}
	h := int(maphash.Bytes(d.seed, key)) & d.mask
	for {
		j := d.table[h]
		if j == 0 {
			d.table[h] = int32(n + 1)
			d.members = append(d.members, objectMember{key: key})
			return n, false
		}
		if bytes.Equal(d.members[j-1].key, key) {
			return int(j - 1), true
		}
		h = (h + 1) & d.mask
	}
}

// rehash indexes d.members in a table with room for at least n members at half load.
func (d *Decoder) rehash(n int) {
	size := 32
	for size < 4*n {
		size *= 2
	}
	if cap(d.table) < size {
		d.table = make([]int32, size)
	} else {
		d.table = d.table[:size]
		clear(d.table)
	}
	d.mask = size - 1
	for i := range d.members {
		h := int(maphash.Bytes(d.seed, d.members[i].key)) & d.mask
		for d.table[h] != 0 {
			h = (h + 1) & d.mask
		}
		d.table[h] = int32(i + 1)
	}
}

// eachElement walks array field k (want describes it in the message of another type), whose
// elements must be of kind (elemWant in the message of another type): f reads element j
// while no error is recorded. Absent or null, it is missing when required, else nothing.
func (d *Decoder) eachElement(k int, required bool, want string, kind gymjson.Kind, elemWant string, f func(j int, e slot)) {
	s, ok := d.container(k, gymjson.Array, required, want)
	if !ok {
		return
	}
	it := d.iter(s)
	for j := 0; ; j++ {
		e, ok := d.nextElem(&it)
		if !ok || d.err != nil {
			return
		}
		if e.kind != kind {
			d.wrongTypeAt(fieldLabel(place{field: keyNames[k], idx: j}.String()), elemWant, &e)
			return
		}
		f(j, e)
		if d.err != nil {
			return
		}
	}
}

// eachObject walks the array of objects at key k, reading the members of each into m; at
// names one of them in an error.
func (d *Decoder) eachObject(k int, required bool, want string, members []string, m *[maxMembers]slot, f func(at func(member string) place)) {
	d.eachElement(k, required, want, gymjson.Object, "an object", func(j int, e slot) {
		d.readMembers(&e, members, m)
		f(func(member string) place { return place{field: keyNames[k], idx: j, member: member} })
	})
}

// keyRule names the check of an object's keys (a switch in the loop, not a func value: a
// call more per key showed on resource lines).
type keyRule uint8

const (
	resourceKeys   keyRule = iota // `attributes`: resourceKey
	serverNameKeys                // `counts`: serverNameKey
	statusCodeKeys                // `responses`: statusCodeKey
)

// collectMembers gathers the members of required object field k (want describes it in the
// message of another type) into d.members: a repeated key keeps the place of its first
// occurrence and takes the value of its last. Each key is checked by rule, which ends the
// walk at the first error. The result is false when an error is recorded.
func (d *Decoder) collectMembers(k int, want string, rule keyRule) bool {
	s, ok := d.container(k, gymjson.Object, true, want)
	if !ok {
		return false
	}
	d.resetMembers()
	it := d.iter(s)
	var ks slot
	for {
		v, ok := d.nextMember(&it, &ks)
		if !ok || d.err != nil {
			return d.err == nil
		}
		key := d.str(&ks)
		idx, seen := d.member(key)
		d.members[idx].val = v
		switch rule {
		case resourceKeys:
			ok = d.resourceKey(key, seen)
		case serverNameKeys:
			ok = d.serverNameKey(key)
		default:
			ok = d.statusCodeKey(key)
		}
		if !ok {
			return false
		}
	}
}

// ---- resource ----

func (d *Decoder) decodeResource(ev *Event) {
	if !d.collectMembers(fkAttributes, "an object", resourceKeys) {
		return
	}
	for i := range d.members {
		m := &d.members[i]
		a := ResourceAttr{Key: m.key}
		switch m.val.kind {
		case gymjson.String:
			a.Kind = ValueString
			// The resource rule of every input (docs/processor.md, "Resource attributes").
			v := d.str(&m.val)
			// The resource rule (a line is valid UTF-8, so a cut at a rune boundary is a valid
			// prefix, as normalize.FreeString's), counted by the line decoder.
			a.Str = cutRunes(v, schema.DefaultStringMaxBytes)
			if len(a.Str) != len(v) {
				d.resourceCuts++
			}
		case gymjson.True, gymjson.False:
			a.Kind = ValueBool
			a.Bool = m.val.kind == gymjson.True
		case gymjson.Number:
			a.Kind = ValueInt
			v, st := d.intOf(&m.val, false)
			if st != gymjson.IntOK {
				d.intFail(`field "attributes": key `+quote(m.key), &m.val, false, st)
				return
			}
			a.Int = v
		default:
			d.wrongTypeAt(`field "attributes": key `+quote(m.key), "a string, an integer or a boolean", &m.val)
			return
		}
		ev.Attrs = append(ev.Attrs, a)
	}
}

// resourceKey checks a key of `attributes`: non-empty, bounded, and at most so many distinct.
func (d *Decoder) resourceKey(key []byte, seen bool) bool {
	if len(key) == 0 {
		d.fail(ReasonInvalidValue, `field "attributes": empty key`)
		return false
	}
	if len(key) > schema.ResourceMaxKeyBytes {
		d.fail(ReasonInvalidValue, `field "attributes": key %s is %d bytes, over %d`, quote(key), len(key), schema.ResourceMaxKeyBytes)
		return false
	}
	if !seen && len(d.members) > schema.ResourceMaxAttributes {
		d.fail(ReasonTooManyAttributes, `field "attributes": more than %d attributes`, schema.ResourceMaxAttributes)
		return false
	}
	return true
}

// ---- rollout.health ----

func (d *Decoder) decodeFlagged(ev *Event) {
	d.eachElement(fkFlaggedChecks, false, "an array of strings", gymjson.String, "a string", func(_ int, v slot) {
		ev.Flagged = append(ev.Flagged, d.str(&v))
	})
}

// ---- http.pool.connects ----

func (d *Decoder) decodeCounts(ev *Event) {
	if !d.collectMembers(fkCounts, "an object of server name to count", serverNameKeys) {
		return
	}
	for i := range d.members {
		m := &d.members[i]
		n, ok := d.memberCount("counts", m)
		if !ok {
			return
		}
		ev.Counts = append(ev.Counts, NamedCount{Name: m.key, Count: n})
	}
}

// serverNameKey checks a key of `counts`, a server name: non-empty.
func (d *Decoder) serverNameKey(key []byte) bool {
	if len(key) == 0 {
		d.fail(ReasonInvalidValue, `field "counts": empty server name`)
		return false
	}
	return true
}

// memberCount converts the value of a snapshot entry, an integer >= 0.
func (d *Decoder) memberCount(field string, m *objectMember) (int64, bool) {
	v, st := d.intOf(&m.val, true)
	if st != gymjson.IntOK {
		d.intFail(fieldLabel(field)+": key "+quote(m.key), &m.val, true, st)
		return 0, false
	}
	return v, true
}

// ---- server.requests ----

func (d *Decoder) decodeResponses(ev *Event) {
	if !d.collectMembers(fkResponses, "an object of status code to count", statusCodeKeys) {
		return
	}
	for i := range d.members {
		m := &d.members[i]
		code, _ := d.statusCode(m.key)
		n, ok := d.memberCount("responses", m)
		if !ok {
			return
		}
		ev.Responses = append(ev.Responses, StatusCount{Code: code, Count: n})
	}
}

// statusCodeKey checks a key of `responses`, a status code.
func (d *Decoder) statusCodeKey(key []byte) bool {
	_, ok := d.statusCode(key)
	return ok
}

// statusCode converts a status-code key: ASCII digits (leading zeros allowed) with a value
// within the schema's range.
func (d *Decoder) statusCode(key []byte) (int64, bool) {
	if len(key) == 0 {
		d.fail(ReasonInvalidValue, `field "responses": key "" is not a status code`)
		return 0, false
	}
	var v int64
	for _, c := range key {
		if c < '0' || c > '9' {
			d.fail(ReasonInvalidValue, `field "responses": key %s is not a status code (want ASCII digits)`, quote(key))
			return 0, false
		}
		if v <= statusMax { // saturate
			v = v*10 + int64(c-'0')
		}
	}
	if v < statusMin || v > statusMax {
		d.fail(ReasonOutOfRange, `field "responses": status code %s is outside %d..%d`, quote(key), statusMin, statusMax)
		return 0, false
	}
	return v, true
}

// decodeCancelled reads the optional `cancelled` array. Each entry is an object with
// `route` (string, required), `response_started` (boolean, required) and `count` (integer
// >= 0, required); other keys are ignored, a duplicate key is last-wins and null is absent.
func (d *Decoder) decodeCancelled(ev *Event) {
	var m [maxMembers]slot
	d.eachElement(fkCancelled, false, "an array of {route, response_started, count}", gymjson.Object, "an object", func(j int, e slot) {
		d.readMembers(&e, cancelledMembers, &m)
		route, started, count := &m[0], &m[1], &m[2]
		var c CancelledCount
		switch route.kind {
		case gymjson.None, gymjson.Null:
			d.missing(fmt.Sprintf("cancelled[%d].route", j))
			return
		case gymjson.String:
			c.Route = d.str(route)
		default:
			d.wrongTypeAt(fieldLabel(fmt.Sprintf("cancelled[%d].route", j)), "a string", route)
			return
		}
		switch started.kind {
		case gymjson.None, gymjson.Null:
			d.missing(fmt.Sprintf("cancelled[%d].response_started", j))
			return
		case gymjson.True, gymjson.False:
			c.ResponseStarted = started.kind == gymjson.True
		default:
			d.wrongTypeAt(fieldLabel(fmt.Sprintf("cancelled[%d].response_started", j)), "a boolean", started)
			return
		}
		c.Count = d.integerAt(place{field: "cancelled", idx: j, member: "count"}, count, true, true)
		if d.err == nil {
			ev.Cancelled = append(ev.Cancelled, c)
		}
	})
}

var cancelledMembers = []string{"route", "response_started", "count"}

// ---- gc.stats ----

// gcTriple reads required field k, an array of exactly 3 integers >= 0 (one per generation).
func (d *Decoder) gcTriple(k int, out *[3]int64) {
	s, ok := d.container(k, gymjson.Array, true, "an array of 3 integers >= 0")
	if !ok {
		return
	}
	it := d.iter(s)
	n := 0
	for {
		v, ok := d.nextElem(&it)
		if !ok || d.err != nil {
			break
		}
		if n < 3 {
			x, st := d.intOf(&v, true)
			if st != gymjson.IntOK {
				d.intFail(fieldLabel(fmt.Sprintf("%s[%d]", keyNames[k], n)), &v, true, st)
				return
			}
			out[n] = x
		}
		n++
	}
	if d.err == nil && n != 3 {
		d.fail(ReasonWrongType, "field %q: want an array of 3 integers >= 0, got %d elements", keyNames[k], n)
	}
}
