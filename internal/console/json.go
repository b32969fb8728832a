package console

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// A record is read with gymjson into the structs of metrics.go, traces.go and logs.go, by
// the rules encoding/json had when it read them (the decoding corpus, corpus_test.go, pins
// them):
//   - a key names the field it equals, else the first one it equals under Unicode simple
//     folding (bytes.EqualFold: encoding/json's foldName); other keys are skipped;
//   - a duplicate key's value is read into what the first one left: the last scalar wins,
//     an object is merged into the struct or map already there, an array reuses the
//     slice's elements; null empties a pointer, a map or a slice and leaves a string or a
//     number field as it is;
//   - a value of a JSON type its field does not take is a typeError (invalid_record),
//     unless the record is not JSON further on (invalid_json: the whole record is
//     validated first, as encoding/json does);
//   - after the object, white space, or what encoding/json's Decoder.More does not take for
//     another value ('}' or ']', and whatever follows it);
//   - a string's bytes that are not UTF-8 are each read as U+FFFD.
// Values whose use comes later (attributes, a log body, data points) are kept as their JSON
// text, validated, and read when they are put into pdata.

// errTrailing: a record followed by more than white space on its line is not valid JSON.
var errTrailing = errors.New("data after the JSON object")

// typeError is a value of a JSON type its field does not take.
type typeError struct {
	field string
	got   gymjson.Kind
}

func (e *typeError) Error() string { return fmt.Sprintf("%s: %v does not belong here", e.field, e.got) }

// reasonOf tells a record that is not JSON from one that is not the SDK's shape.
func reasonOf(err error) string {
	var je *gymjson.Error
	if errors.As(err, &je) || errors.Is(err, errTrailing) {
		return ReasonInvalidJSON
	}
	return ReasonInvalidRecord
}

// reader reads one record. Its scratch is reused from record to record.
type reader struct {
	b       []byte
	key     []byte            // a key with escapes, resolved
	members []member          // putAttrs' and appendAttrsKey's, as a stack
	order   []int32           // sortedMembers', as a stack
	valid   []byte            // a record whose bytes are not all UTF-8, with U+FFFD for each bad one
	keys    map[string]string // attribute keys already made strings (see key)
}

// maxKeys bounds a reader's attribute keys kept as strings: the SDK writes a few dozen
// names, again and again; a stream of ever new ones only stops being helped.
const maxKeys = 512

// keyString returns k as a string, one kept from an earlier record when there is one (an
// attribute's key is a string in pdata: made once, not once per record).
func (d *reader) keyString(k []byte) string {
	if s, ok := d.keys[string(k)]; ok {
		return s
	}
	s := string(k)
	if d.keys == nil {
		d.keys = make(map[string]string)
	}
	if len(d.keys) < maxKeys {
		d.keys[s] = s
	}
	return s
}

// decode reads the record b into v: read does the reading (the object at b[0]). A record
// with a string that is not UTF-8 is read again with each bad byte replaced by U+FFFD (no
// other place in JSON can hold such a byte: it stays a syntax error there).
func (d *reader) decode(b []byte, read func(d *reader) (int, error)) error {
	d.b = b
	err := d.decodeOnce(read)
	if err == gymjson.ErrInvalidUTF8 { //nolint:errorlint // gymjson's errors are never wrapped
		d.valid = gymjson.AppendValidUTF8(d.valid[:0], b)
		d.b = d.valid
		err = d.decodeOnce(read)
	}
	return err
}

func (d *reader) decodeOnce(read func(d *reader) (int, error)) error {
	end, err := read(d)
	if err != nil {
		if _, ok := err.(*gymjson.Error); !ok { //nolint:errorlint // gymjson's errors are never wrapped
			// encoding/json validates the whole value before it reads it: a syntax error
			// anywhere after a value of the wrong type makes the record invalid_json.
			if _, serr := gymjson.Skip(d.b, 0, 1); serr != nil {
				return serr
			}
		}
		return err
	}
	if i := gymjson.SkipSpace(d.b, end); i < len(d.b) && d.b[i] != '}' && d.b[i] != ']' {
		return errTrailing
	}
	return nil
}

// object reads the object at b[i] (a '{'; depth as gymjson's, 1 for the record), calling
// field with each key (escapes resolved; valid only during the call) and the index of its
// value; field returns the index just past the value.
func (d *reader) object(i, depth int, field func(key []byte, i int) (int, error)) (int, error) {
	b := d.b
	if depth > gymjson.MaxDepth {
		return i, gymjson.ErrTooDeep
	}
	i = gymjson.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, gymjson.SyntaxError(b, i, "want a string key")
		}
		end, esc, err := gymjson.ScanString(b, i)
		if err != nil {
			return end, err
		}
		key := b[i+1 : end-1]
		if esc {
			d.key = gymjson.AppendUnescaped(d.key[:0], key)
			key = d.key
		}
		i = gymjson.SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, gymjson.SyntaxError(b, i, "want ':' after an object key")
		}
		i = gymjson.SkipSpace(b, i+1)
		if i >= len(b) {
			return i, gymjson.SyntaxError(b, i, "want a value")
		}
		if i, err = field(key, i); err != nil {
			return i, err
		}
		i = gymjson.SkipSpace(b, i)
		if i < len(b) {
			if b[i] == ',' {
				i = gymjson.SkipSpace(b, i+1)
				continue
			}
			if b[i] == '}' {
				return i + 1, nil
			}
		}
		return i, gymjson.SyntaxError(b, i, "want ',' or '}' after an object member")
	}
}

// array reads the array at b[i] (a '['), calling elem with the index of each element (k
// counts them); elem returns the index just past it. It returns the count too.
func (d *reader) array(i, depth int, elem func(k, i int) (int, error)) (int, int, error) {
	b := d.b
	if depth > gymjson.MaxDepth {
		return i, 0, gymjson.ErrTooDeep
	}
	i = gymjson.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, 0, nil
	}
	for k := 0; ; k++ {
		if i >= len(b) {
			return i, k, gymjson.SyntaxError(b, i, "want a value")
		}
		var err error
		if i, err = elem(k, i); err != nil {
			return i, k, err
		}
		i = gymjson.SkipSpace(b, i)
		if i < len(b) {
			if b[i] == ',' {
				i = gymjson.SkipSpace(b, i+1)
				continue
			}
			if b[i] == ']' {
				return i + 1, k + 1, nil
			}
		}
		return i, k + 1, gymjson.SyntaxError(b, i, "want ',' or ']' after an array element")
	}
}

// field returns which of names key is: the one it equals, else the first it equals under
// Unicode simple folding, as encoding/json matches a key to a struct field; -1 for none.
func field(key []byte, names []string) int {
	for f, n := range names {
		if string(key) == n {
			return f
		}
	}
	for f, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return f
		}
	}
	return -1
}

// kindAt is the kind of the value at b[i] by its first byte (a value that is not JSON is
// found when it is read or skipped).
func kindAt(b []byte, i int) gymjson.Kind {
	switch c := b[i]; {
	case c == '"':
		return gymjson.String
	case c == '{':
		return gymjson.Object
	case c == '[':
		return gymjson.Array
	case c == 't':
		return gymjson.True
	case c == 'f':
		return gymjson.False
	case c == 'n':
		return gymjson.Null
	case gymjson.StartsNumber(c):
		return gymjson.Number
	}
	return gymjson.None
}

// mismatch is the error of a value of the wrong type for name (decodeOnce then looks for a
// syntax error, which comes first).
func (d *reader) mismatch(i int, name string) (int, error) {
	return i, &typeError{field: name, got: kindAt(d.b, i)}
}

// skip passes over a value no field takes.
func (d *reader) skip(i, depth int) (int, error) { return gymjson.Skip(d.b, i, depth) }

// null reads the null at b[i] when there is one (ok), or reports none.
func (d *reader) null(i int) (end int, ok bool, err error) {
	if d.b[i] != 'n' {
		return i, false, nil
	}
	end, err = gymjson.ScanLiteral(d.b, i, "null")
	return end, true, err
}

// text is a string field: its text, escapes resolved (a slice of the record when it has
// none), and whether it was there and not null (for the fields the SDK may write as null).
type text struct {
	b   []byte
	set bool
}

func (t text) String() string { return string(t.b) }

// str reads a string field: null leaves it as it is (encoding/json's string fields).
func (d *reader) str(i int, name string, t *text) (int, error) {
	if end, ok, err := d.null(i); ok || err != nil {
		return end, err
	}
	return d.strValue(i, name, t)
}

// optStr reads a field the SDK may write as null (encoding/json's *string): null unsets it.
func (d *reader) optStr(i int, name string, t *text) (int, error) {
	if end, ok, err := d.null(i); ok || err != nil {
		*t = text{}
		return end, err
	}
	return d.strValue(i, name, t)
}

func (d *reader) strValue(i int, name string, t *text) (int, error) {
	if d.b[i] != '"' {
		return d.mismatch(i, name)
	}
	end, esc, err := gymjson.ScanString(d.b, i)
	if err != nil {
		return end, err
	}
	t.b, t.set = d.b[i+1:end-1], true
	if esc {
		t.b = gymjson.AppendUnescaped(nil, t.b) // the record's bytes stay as they are
	}
	return end, nil
}

// optInt reads an int field the SDK may write as null (encoding/json's *int): an integer
// literal in int64.
type optInt struct {
	v   int64
	set bool
}

func (d *reader) optInt(i int, name string, n *optInt) (int, error) {
	if end, ok, err := d.null(i); ok || err != nil {
		*n = optInt{}
		return end, err
	}
	if !gymjson.StartsNumber(d.b[i]) {
		return d.mismatch(i, name)
	}
	end, err := gymjson.ScanNumber(d.b, i)
	if err != nil {
		return end, err
	}
	v, ok := intLiteral(d.b[i:end])
	if !ok {
		return i, &typeError{field: name, got: gymjson.Number}
	}
	*n = optInt{v: v, set: true}
	return end, nil
}

// optBool reads a bool field the SDK may write as null (encoding/json's *bool).
type optBool struct{ v, set bool }

func (d *reader) optBool(i int, name string, v *optBool) (int, error) {
	switch d.b[i] {
	case 'n':
		*v = optBool{}
		return gymjson.ScanLiteral(d.b, i, "null")
	case 't':
		*v = optBool{v: true, set: true}
		return gymjson.ScanLiteral(d.b, i, "true")
	case 'f':
		*v = optBool{set: true}
		return gymjson.ScanLiteral(d.b, i, "false")
	}
	return d.mismatch(i, name)
}

// literal is a number kept as its text (encoding/json's *json.Number): a Python int of any
// size stays exact. As json.Number does, it takes a string that holds a JSON number.
type literal struct {
	b   []byte
	set bool
}

func (d *reader) literal(i int, name string, l *literal) (int, error) {
	if end, ok, err := d.null(i); ok || err != nil {
		*l = literal{}
		return end, err
	}
	switch {
	case d.b[i] == '"':
		var t text
		end, err := d.strValue(i, name, &t)
		if err != nil {
			return end, err
		}
		if _, py := gymjson.PythonToken(t.b); py || !gymjson.IsNumber(t.b) {
			return i, fmt.Errorf("%s: %q is not a number", name, t.b)
		}
		*l = literal{b: t.b, set: true}
		return end, nil
	case gymjson.StartsNumber(d.b[i]):
		end, err := gymjson.ScanNumber(d.b, i)
		if err != nil {
			return end, err
		}
		if _, py := gymjson.PythonToken(d.b[i:end]); py {
			// Python's tokens were never encoding/json numbers.
			return i, &typeError{field: name, got: gymjson.Number}
		}
		*l = literal{b: d.b[i:end], set: true}
		return end, nil
	}
	return d.mismatch(i, name)
}

// intLiteral reads an integer literal (no fraction, no exponent) that fits in int64: the
// ints of encoding/json's int fields and of Python's ints as the decoders keep them.
func intLiteral(t []byte) (int64, bool) {
	if end, mant, n := gymjson.ScanPlainNumber(t, 0); end == len(t) {
		return gymjson.PlainInt(mant, n)
	}
	if bytes.ContainsAny(t, ".eE") {
		return 0, false
	}
	v, err := strconv.ParseInt(string(t), 10, 64)
	return v, err == nil
}

// number is a JSON number as Python writes it: an int (any size), a float, or a Python
// token. An int literal in int64 stays an int.
type number struct {
	set   bool
	isInt bool
	i     int64
	f     float64
}

// number reads a number field: null unsets it; a string or any other type is an error.
func (d *reader) number(i int, name string, n *number) (int, error) {
	if end, ok, err := d.null(i); ok || err != nil {
		*n = number{}
		return end, err
	}
	if !gymjson.StartsNumber(d.b[i]) {
		return d.mismatch(i, name)
	}
	end, err := gymjson.ScanNumber(d.b, i)
	if err != nil {
		return end, err
	}
	*n = parseNumber(d.b[i:end])
	return end, nil
}

// parseNumber converts a number token (validated).
func parseNumber(t []byte) number {
	if v, ok := intLiteral(t); ok {
		return number{set: true, isInt: true, i: v}
	}
	return number{set: true, f: gymjson.ParseFloat(t)}
}

// numbers reads an array of numbers (null empties it).
func (d *reader) numbers(i, depth int, name string, ns *[]number) (int, error) {
	if end, ok, err := d.null(i); ok || err != nil {
		*ns = nil
		return end, err
	}
	return elems(d, i, depth, name, ns, func(n *number, i int) (int, error) { return d.number(i, name, n) })
}

// elems reads an array into *s as encoding/json reads one into a slice: each element into
// the one already at its index (a duplicate key's array reuses the slice), the slice cut
// to the array's length; an empty array makes an empty slice, null (the caller's) nil.
func elems[T any](d *reader, i, depth int, name string, s *[]T, elem func(e *T, i int) (int, error)) (int, error) {
	if d.b[i] != '[' {
		return d.mismatch(i, name)
	}
	v := *s
	end, n, err := d.array(i, depth, func(k, i int) (int, error) {
		if k == cap(v) {
			v = slices.Grow(v, 1)
		}
		if k >= len(v) {
			v = v[:k+1]
		}
		return elem(&v[k], i)
	})
	if n == 0 {
		v = []T{}
	} else if n < len(v) {
		v = v[:n]
	}
	*s = v
	return end, err
}

// structs reads an array of objects into *s (elems): null elements leave theirs as they are.
func structs[T any](d *reader, i, depth int, name string, s *[]T, read func(e *T, i int) (int, error)) (int, error) {
	if end, ok, err := d.null(i); ok || err != nil {
		*s = nil
		return end, err
	}
	return elems(d, i, depth, name, s, func(e *T, i int) (int, error) {
		if end, ok, err := d.null(i); ok || err != nil {
			return end, err
		}
		if d.b[i] != '{' {
			return d.mismatch(i, name)
		}
		return read(e, i)
	})
}

// raw is a value kept as its JSON text (validated) to be read later.
type raw []byte

// rawValue reads any value (encoding/json's any, or json.RawMessage).
func (d *reader) rawValue(i, depth int, r *raw) (int, error) {
	end, err := gymjson.Skip(d.b, i, depth)
	if err == nil {
		*r = raw(d.b[i:end])
	}
	return end, err
}

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
		v.SetStr(string(stringText(x)))
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

// bigID reads an id that Python writes as a decimal int (an exemplar's span_id and
// trace_id) into size bytes, big-endian.
func bigID(s []byte, size int) ([]byte, error) {
	var z big.Int
	if _, ok := z.SetString(string(s), 10); !ok || z.Sign() < 0 || z.BitLen() > 8*size {
		return nil, fmt.Errorf("%s is not a %d-bit id", s, 8*size)
	}
	return z.FillBytes(make([]byte, size)), nil
}

// hexID reads an id the SDK writes as "0x" and lower-case hex digits into out ("" and an
// all-zero id leave it empty).
func hexID(s []byte, out []byte) (bool, error) {
	if len(s) == 0 {
		return false, nil
	}
	h, ok := bytes.CutPrefix(s, []byte("0x"))
	if !ok || len(h) != 2*len(out) {
		return false, fmt.Errorf("%q is not 0x and %d hex digits", s, 2*len(out))
	}
	for i := range out {
		hi, lo := gymjson.HexVal(h[2*i]), gymjson.HexVal(h[2*i+1])
		if hi == 0xff || lo == 0xff {
			return false, fmt.Errorf("%q is not 0x and %d hex digits", s, 2*len(out))
		}
		out[i] = hi<<4 | lo
	}
	for _, c := range out {
		if c != 0 {
			return true, nil
		}
	}
	return false, nil
}

// isoTime reads the SDK's util.ns_to_iso_str: "2026-12-01T19:23:32.123456Z" (microseconds,
// UTC). null and "" are no time.
func isoTime(s text, field string) (pcommon.Timestamp, error) {
	if len(s.b) == 0 {
		return 0, nil
	}
	t, err := time.Parse(time.RFC3339Nano, string(s.b))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an ISO 8601 time", field, s.b)
	}
	return pcommon.NewTimestampFromTime(t), nil
}

// resource is the SDK's Resource.to_json.
type resource struct {
	set        bool
	Attributes attrs
	SchemaURL  text
}

var resourceFields = []string{"attributes", "schema_url"}

// optResource reads a resource (null unsets it, as encoding/json's *resource).
func (d *reader) optResource(i, depth int, r *resource) (int, error) {
	if end, ok, err := d.null(i); ok || err != nil {
		*r = resource{}
		return end, err
	}
	if d.b[i] != '{' {
		return d.mismatch(i, "resource")
	}
	if !r.set {
		*r = resource{set: true}
	}
	return d.object(i, depth, func(key []byte, i int) (int, error) {
		switch field(key, resourceFields) {
		case 0:
			return d.attrs(i, depth+1, "resource.attributes", &r.Attributes)
		case 1:
			return d.str(i, "resource.schema_url", &r.SchemaURL)
		}
		return d.skip(i, depth+1)
	})
}

func (d *reader) putResource(r *resource, res pcommon.Resource) {
	d.putAttrs(res.Attributes(), &r.Attributes)
}

// resourceGroup groups consecutive spans (or log records) of one resource under one
// ResourceSpans (ResourceLogs): key is the resource of the last group, next the one last
// looked at; text and nextText are theirs as written (the same text is the same resource,
// and is told without sorting its attributes). The traces and logs decoders share it.
type resourceGroup struct{ key, next, text, nextText []byte }

// joins reports whether r is the resource of the last of the groups.
func (g *resourceGroup) joins(d *reader, groups int, r *resource) bool {
	g.nextText = appendResourceText(g.nextText[:0], r)
	if groups > 0 && bytes.Equal(g.text, g.nextText) {
		return true
	}
	g.next = d.appendResourceKey(g.next[:0], r)
	return groups > 0 && bytes.Equal(g.key, g.next)
}

// started records that a group was appended for the resource that joins looked at last.
func (g *resourceGroup) started() {
	g.key, g.next = g.next, g.key
	g.text, g.nextText = g.nextText, g.text
}

// reset forgets the last group (a new batch has none).
func (g *resourceGroup) reset() { g.key, g.text = g.key[:0], g.text[:0] }

// appendResourceText appends a resource as it was written: its objects of attributes and
// its schema URL.
func appendResourceText(b []byte, r *resource) []byte {
	b = appendText(b, r.Attributes.first)
	for _, o := range r.Attributes.more {
		b = appendText(b, o)
	}
	return appendText(b, r.SchemaURL.b)
}

// appendResourceKey appends a resource's identity: its attributes in key order, each value
// with its type (so "process.pid": 42 and "42" are two resources, never merged under the
// first one's attributes), and its schema URL. The same resource, compact or pretty-printed,
// gives the same key.
func (d *reader) appendResourceKey(b []byte, r *resource) []byte {
	if r.Attributes.first == nil {
		b = append(b, "{}"...)
	} else {
		b = d.appendObjectKey(b, r.Attributes.objects()...)
	}
	return appendText(b, r.SchemaURL.b)
}

// appendText appends s to a key, its length first (so that no two texts run together).
func appendText(b, s []byte) []byte {
	return append(append(strconv.AppendInt(b, int64(len(s)), 10), ':'), s...)
}

func (d *reader) appendObjectKey(b []byte, objs ...raw) []byte {
	ms, n := d.sortedMembers(objs...)
	b = append(b, '{')
	for _, e := range ms {
		b = d.appendValueKey(appendText(b, e.key), e.val)
	}
	d.members = d.members[:n]
	return append(b, '}')
}

func (d *reader) appendValueKey(b []byte, x raw) []byte {
	switch x[0] {
	case 'n':
		return append(b, 'z')
	case 't':
		return append(b, 't')
	case 'f':
		return append(b, 'f')
	case '"':
		return appendText(append(b, 's'), stringText(x))
	case '[':
		b = append(b, '[')
		r := reader{b: x}
		_, _, _ = r.array(0, 1, func(_, i int) (int, error) {
			end, _ := gymjson.Skip(x, i, 2)
			b = d.appendValueKey(b, x[i:end])
			return end, nil
		})
		return append(b, ']')
	case '{':
		return d.appendObjectKey(b, x)
	}
	return append(append(append(b, 'n'), x...), ';') // the literal: 42 and 42.0 differ in pdata too
}
