package console

import (
	"bytes"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// Attributes (and any value kept as its JSON text): read when they are put into pdata.

// attrs is an object of attributes (encoding/json's map[string]any): the objects of each
// of its keys since the last null, merged in order when it is read.
type attrs struct {
	first raw
	more  []raw // a duplicate key's objects (never in the SDK's output)
}

func (d *reader) attrs(i, depth int, name string, a *attrs) (int, error) {
	if end, ok, err := d.null(i); ok || err != nil {
		*a = attrs{}
		return end, err
	}
	if d.b[i] != '{' {
		return d.mismatch(i, name)
	}
	end, err := gymjson.Skip(d.b, i, depth)
	if err != nil {
		return end, err
	}
	if a.first == nil {
		a.first = raw(d.b[i:end])
	} else {
		a.more = append(a.more, raw(d.b[i:end]))
	}
	return end, nil
}

// member is one key of an object and its value.
type member struct {
	key []byte
	val raw
}

// appendMembers appends the members of the object obj (validated) to ms.
func (d *reader) appendMembers(ms []member, obj raw) []member {
	r := reader{b: obj}
	_, _ = r.object(0, 1, func(key []byte, i int) (int, error) {
		end, _ := gymjson.Skip(obj, i, 2)
		if len(key) > 0 && len(r.key) > 0 && &key[0] == &r.key[0] {
			key = bytes.Clone(key) // a key with escapes: r.key is overwritten by the next
		}
		ms = append(ms, member{key: key, val: obj[i:end]})
		return end, nil
	})
	return ms
}

// sortedMembers returns the members of objs as one map holds them: the last of each key,
// in key order. They are on top of d.members (the caller cuts it back to n).
func (d *reader) sortedMembers(objs ...raw) (ms []member, n int) {
	n = len(d.members)
	for _, o := range objs {
		if o != nil {
			d.members = d.appendMembers(d.members, o)
		}
	}
	if ms = d.members[n:]; sortedUnique(ms) {
		return ms, n
	}
	// Sort their indexes (a member's pointers would cost a write barrier per move), stable
	// so that the last of equal keys is the last one written.
	o := len(d.order)
	for k := range ms {
		d.order = append(d.order, int32(n+k))
	}
	idx := d.order[o:]
	slices.SortStableFunc(idx, func(a, b int32) int { return bytes.Compare(d.members[a].key, d.members[b].key) })
	start := len(d.members)
	for r, k := range idx {
		if r+1 < len(idx) && bytes.Equal(d.members[k].key, d.members[idx[r+1]].key) {
			continue
		}
		d.members = append(d.members, d.members[k])
	}
	d.order = d.order[:o]
	return d.members[start:], n
}
func sortedUnique(ms []member) bool {
	for k := 1; k < len(ms); k++ {
		if bytes.Compare(ms[k-1].key, ms[k].key) >= 0 {
			return false
		}
	}
	return true
}
func (a *attrs) objects() []raw {
	if len(a.more) == 0 {
		return []raw{a.first}
	}
	return append([]raw{a.first}, a.more...)
}

// putAttrs copies an object of attributes into m, keys in order (so output is stable).
func (d *reader) putAttrs(m pcommon.Map, a *attrs) {
	if a.first == nil {
		return
	}
	var ms []member
	var n int
	if len(a.more) == 0 {
		ms, n = d.sortedMembers(a.first)
	} else {
		ms, n = d.sortedMembers(a.objects()...)
	}
	d.putMembers(m, ms)
	d.members = d.members[:n]
}
func (d *reader) putMembers(m pcommon.Map, ms []member) {
	m.EnsureCapacity(len(ms))
	for _, e := range ms {
		d.putValue(m.PutEmpty(d.keyString(e.key)), e.val)
	}
}

// putValue sets v from a JSON value (validated): strings, bools, ints, floats (Python
// tokens included), lists and maps; null leaves it empty.
func (d *reader) putValue(v pcommon.Value, x raw) {
	if len(x) == 0 {
		return
	}
	switch x[0] {
	case 'n':
	case 't':
		v.SetBool(true)
	case 'f':
		v.SetBool(false)
	case '"':
		v.SetStr(d.internString(stringText(x)))
	case '[':
		s := v.SetEmptySlice()
		r := reader{b: x}
		_, _, _ = r.array(0, 1, func(_, i int) (int, error) {
			end, _ := gymjson.Skip(x, i, 2)
			d.putValue(s.AppendEmpty(), x[i:end])
			return end, nil
		})
	case '{':
		ms, n := d.sortedMembers(x)
		d.putMembers(v.SetEmptyMap(), ms)
		d.members = d.members[:n]
	default:
		if n := parseNumber(x); n.isInt {
			v.SetInt(n.i)
		} else {
			v.SetDouble(n.f)
		}
	}
}

// stringText returns the text of a string value (validated), escapes resolved.
func stringText(x raw) []byte {
	s := x[1 : len(x)-1]
	if bytes.IndexByte(s, '\\') >= 0 {
		return gymjson.AppendUnescaped(nil, s)
	}
	return s
}
