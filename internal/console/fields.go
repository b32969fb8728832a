package console

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// The fields of the SDK's records: strings, numbers, literals, and the arrays and optional
// objects that hold them, read as encoding/json reads them into Go values.

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
	end, tok, err := numberToken(d, i, name, n)
	if tok == nil {
		return end, err
	}
	v, ok := intLiteral(tok)
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
	if c := d.b[i]; c == '-' || c-'0' <= 9 {
		// Nearly every number is plain: scanned and converted in one pass, to what
		// parseNumber makes of its token (the same conversions, from the same digits).
		if end, v, ok := plainInt(d.b, i); ok {
			*n = number{set: true, isInt: true, i: v}
			return end, nil
		}
		if end, mant, pn := gymjson.ScanPlainNumber(d.b, i); end >= 0 {
			if v, ok := gymjson.PlainInt(mant, pn); ok {
				*n = number{set: true, isInt: true, i: v}
				return end, nil
			}
			if f, ok := gymjson.PlainFloat(mant, pn); ok {
				*n = number{set: true, f: f}
				return end, nil
			}
		}
	}
	end, tok, err := numberToken(d, i, name, n)
	if tok != nil {
		*n = parseNumber(tok)
	}
	return end, err
}

// numberToken reads the token of the number field *n at b[i]: null unsets the field (and
// gives no token); a value of any other type is a mismatch.
func numberToken[T any](d *reader, i int, name string, n *T) (end int, tok []byte, err error) {
	if end, ok, err := d.null(i); ok || err != nil {
		*n = *new(T)
		return end, nil, err
	}
	if !gymjson.StartsNumber(d.b[i]) {
		end, err = d.mismatch(i, name)
		return end, nil, err
	}
	if end, err = gymjson.ScanNumber(d.b, i); err != nil {
		return end, nil, err
	}
	return end, d.b[i:end], nil
}

// plainInt reads the integer token -?(0|[1-9][0-9]*) at b[i] when it has at most 19 digits
// (a time in nanoseconds has 19, past ScanPlainNumber's 18) and fits in int64: what
// intLiteral gives it. ok is false for any other token, left to the general path.
func plainInt(b []byte, i int) (end int, v int64, ok bool) {
	j := i
	neg := b[j] == '-'
	if neg {
		j++
	}
	ds := j
	var u uint64
	for ; j < len(b) && j-ds < 20; j++ {
		c := b[j] - '0'
		if c > 9 {
			break
		}
		u = u*10 + uint64(c)
	}
	nd := j - ds
	if nd == 0 || nd > 19 || (nd > 1 && b[ds] == '0') {
		return i, 0, false
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j]-'0' <= 9) {
		return i, 0, false
	}
	switch {
	case !neg && u <= math.MaxInt64:
		return j, int64(u), true
	case neg && u <= 1<<63:
		return j, int64(-u), true //nolint:gosec // -2^63 wraps to itself, as wanted
	}
	return i, 0, false
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

// optObject reads an object into *v, a struct whose field set tells whether it is there
// (encoding/json's pointer to a struct): null unsets it; an object is read into what a
// duplicate key left (member reads each of its keys, as object's field).
func optObject[T any](d *reader, i, depth int, name string, v *T, set *bool, member func(key []byte, i int) (int, error)) (int, error) {
	if end, ok, err := d.null(i); ok || err != nil {
		*v = *new(T)
		return end, err
	}
	if d.b[i] != '{' {
		return d.mismatch(i, name)
	}
	if !*set {
		*v = *new(T)
		*set = true
	}
	return d.object(i, depth, member)
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
