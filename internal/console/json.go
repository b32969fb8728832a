package console

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// A record is read with gymjson into the structs of records.go, by
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
//
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
	values  map[string]string // short strings already made strings (see internString)
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

// maxValues bounds the short strings a reader keeps (internString); maxValueBytes is the
// longest kept: names, units and the values of attributes the SDK writes again and again.
const (
	maxValues     = 512
	maxValueBytes = 128
)

// internString returns b as a string, one kept from an earlier record when there is one: a
// metric's name, description and unit, a span's name, an attribute's value are mostly the
// same from batch to batch (kept strings are immutable: pdata may hold them as long as it
// likes). A stream of ever new ones only stops being helped.
func (d *reader) internString(b []byte) string {
	if len(b) == 0 || len(b) > maxValueBytes {
		return string(b)
	}
	if s, ok := d.values[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.values == nil {
		d.values = make(map[string]string)
	}
	if len(d.values) < maxValues {
		d.values[s] = s
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
	i, empty, err := gymjson.Open(b, i, depth, '}')
	for more := !empty && err == nil; more; {
		if i >= len(b) || b[i] != '"' {
			return i, gymjson.SyntaxError(b, i, "want a string key")
		}
		end, esc, serr := gymjson.ScanString(b, i)
		if serr != nil {
			return end, serr
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
		i, more, err = gymjson.Next(b, i, '}', "want ',' or '}' after an object member")
	}
	return i, err
}

// array reads the array at b[i] (a '['), calling elem with the index of each element (k
// counts them); elem returns the index just past it. It returns the count too.
func (d *reader) array(i, depth int, elem func(k, i int) (int, error)) (int, int, error) {
	b := d.b
	i, empty, err := gymjson.Open(b, i, depth, ']')
	k := 0
	for more := !empty && err == nil; more; k++ {
		if i >= len(b) {
			return i, k, gymjson.SyntaxError(b, i, "want a value")
		}
		if i, err = elem(k, i); err != nil {
			return i, k, err
		}
		i, more, err = gymjson.Next(b, i, ']', "want ',' or ']' after an array element")
	}
	return i, k, err
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

// mismatch is the error of a value of the wrong type for name (decodeOnce then looks for a
// syntax error, which comes first).
func (d *reader) mismatch(i int, name string) (int, error) {
	return i, &typeError{field: name, got: gymjson.KindOf(d.b[i])}
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
