package oldjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// Python's json.dumps writes NaN, Infinity and -Infinity as bare tokens (allow_nan is on by
// default), which encoding/json does not know (gymjson.PythonToken is the one definition of
// them). pyTokens rewrites them, outside strings, into strings that start with a NUL byte
// (pyMark): no string the SDK writes can start with one unescaped, and the decoders below
// read them back as the float values.
const pyMark = '\x00'

// pyTokens returns line with the Python tokens rewritten, into buf (reused; changed=true),
// or line itself when it has none.
func pyTokens(line, buf []byte) (out []byte, changed bool) {
	if bytes.IndexByte(line, 'N') < 0 && bytes.IndexByte(line, 'I') < 0 {
		return line, false
	}
	out = buf[:0]
	inStr, esc := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			out = append(out, c)
			continue
		}
		if c == '"' {
			inStr = true
		} else if c == 'N' || c == 'I' || c == '-' {
			// A token gymjson takes for a number: rewritten when it is one of Python's.
			if e, err := gymjson.ScanNumber(line, i); err == nil {
				if _, ok := gymjson.PythonToken(line[i:e]); ok {
					out = append(append(append(out, `"\u0000`...), line[i:e]...), '"')
					i = e - 1
					changed = true
					continue
				}
			}
		}
		out = append(out, c)
	}
	if !changed {
		return line, false
	}
	return out, true
}

// pyFloat reads back a token pyTokens rewrote.
func pyFloat(s string) (float64, bool) {
	if len(s) < 2 || s[0] != pyMark {
		return 0, false
	}
	return gymjson.PythonToken([]byte(s[1:]))
}

// errTrailing: a record followed by more than white space on its line is not valid JSON.
var errTrailing = errors.New("data after the JSON object")

// decodeJSON decodes b into v with numbers kept as json.Number.
func decodeJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errTrailing
	}
	return nil
}

// number is a JSON number as Python writes it: an int (any size), a float, or a Python
// token. An int literal stays an int.
type number struct {
	set   bool
	isInt bool
	i     int64
	f     float64
}

func (n *number) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = number{}
		return nil
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		f, ok := pyFloat(s)
		if !ok {
			return fmt.Errorf("a string %q where a number belongs", s)
		}
		*n = number{set: true, f: f}
		return nil
	}
	v, err := parseNumber(json.Number(b))
	if err != nil {
		return err
	}
	*n = v
	return nil
}

func parseNumber(s json.Number) (number, error) {
	if !strings.ContainsAny(string(s), ".eE") {
		if i, err := strconv.ParseInt(string(s), 10, 64); err == nil {
			return number{set: true, isInt: true, i: i}, nil
		}
	}
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return number{}, fmt.Errorf("bad number %s", s)
	}
	return number{set: true, f: f}, nil
}

func (n number) float() float64 {
	if n.isInt {
		return float64(n.i)
	}
	return n.f
}

// uint reads a count or a time: a non-negative integer.
func (n number) uint(field string) (uint64, error) {
	if !n.set {
		return 0, fmt.Errorf("%s: missing", field)
	}
	if !n.isInt || n.i < 0 {
		return 0, fmt.Errorf("%s: %v is not a non-negative integer", field, n.float())
	}
	return uint64(n.i), nil
}

// bigID reads an id that Python writes as a decimal int (an exemplar's span_id and
// trace_id) into size bytes, big-endian.
func bigID(s json.Number, size int) ([]byte, error) {
	var z big.Int
	if _, ok := z.SetString(string(s), 10); !ok || z.Sign() < 0 || z.BitLen() > 8*size {
		return nil, fmt.Errorf("%s is not a %d-bit id", s, 8*size)
	}
	return z.FillBytes(make([]byte, size)), nil
}

// hexID reads an id the SDK writes as "0x" and lower-case hex digits into out ("" and an
// all-zero id leave it empty).
func hexID(s string, out []byte) (bool, error) {
	if s == "" {
		return false, nil
	}
	h, ok := strings.CutPrefix(s, "0x")
	if !ok || len(h) != 2*len(out) {
		return false, fmt.Errorf("%q is not 0x and %d hex digits", s, 2*len(out))
	}
	for i := range out {
		v, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		if err != nil {
			return false, fmt.Errorf("%q is not 0x and %d hex digits", s, 2*len(out))
		}
		out[i] = byte(v)
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
func isoTime(s *string, field string) (pcommon.Timestamp, error) {
	if s == nil || *s == "" {
		return 0, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an ISO 8601 time", field, *s)
	}
	return pcommon.NewTimestampFromTime(t), nil
}

// putAttrs copies a JSON object of attributes into m, keys in order (so output is stable).
func putAttrs(m pcommon.Map, attrs map[string]any) error {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	m.EnsureCapacity(len(keys))
	for _, k := range keys {
		if err := putValue(m.PutEmpty(k), attrs[k]); err != nil {
			return fmt.Errorf("attribute %q: %w", k, err)
		}
	}
	return nil
}

// putValue sets v from a decoded JSON value: strings, bools, ints, floats (Python tokens
// included), lists and (in log records) maps; null leaves it empty.
func putValue(v pcommon.Value, x any) error {
	switch x := x.(type) {
	case nil:
	case string:
		if f, ok := pyFloat(x); ok {
			v.SetDouble(f)
		} else {
			v.SetStr(x)
		}
	case bool:
		v.SetBool(x)
	case json.Number:
		n, err := parseNumber(x)
		if err != nil {
			return err
		}
		if n.isInt {
			v.SetInt(n.i)
		} else {
			v.SetDouble(n.f)
		}
	case []any:
		s := v.SetEmptySlice()
		s.EnsureCapacity(len(x))
		for _, e := range x {
			if err := putValue(s.AppendEmpty(), e); err != nil {
				return err
			}
		}
	case map[string]any:
		return putAttrs(v.SetEmptyMap(), x)
	default:
		return fmt.Errorf("unexpected value %T", x)
	}
	return nil
}

// resource is the SDK's Resource.to_json.
type resource struct {
	Attributes map[string]any `json:"attributes"`
	SchemaURL  string         `json:"schema_url"`
}

func (r *resource) put(res pcommon.Resource) error {
	if err := putAttrs(res.Attributes(), r.Attributes); err != nil {
		return fmt.Errorf("resource: %w", err)
	}
	return nil
}

// resourceGroup groups consecutive spans (or log records) of one resource under one
// ResourceSpans (ResourceLogs): key is the resource of the last group, next the one last
// looked at. The traces and logs decoders share it.
type resourceGroup struct{ key, next []byte }

// joins reports whether r is the resource of the last of the groups.
func (g *resourceGroup) joins(groups int, r *resource) bool {
	g.next = appendResourceKey(g.next[:0], r)
	return groups > 0 && bytes.Equal(g.key, g.next)
}

// started records that a group was appended for the resource that joins looked at last.
func (g *resourceGroup) started() { g.key, g.next = g.next, g.key }

// reset forgets the last group (a new batch has none).
func (g *resourceGroup) reset() { g.key = g.key[:0] }

// appendResourceKey appends a resource's identity: its attributes in key order, each value
// with its type (so "process.pid": 42 and "42" are two resources, never merged under the
// first one's attributes), and its schema URL. The same resource, compact or pretty-printed,
// gives the same key.
func appendResourceKey(b []byte, r *resource) []byte {
	b = appendValueKey(b, r.Attributes)
	return strconv.AppendQuote(b, r.SchemaURL)
}

func appendValueKey(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, 'z')
	case bool:
		if v {
			return append(b, 't')
		}
		return append(b, 'f')
	case json.Number:
		return append(append(append(b, 'n'), v...), ';') // the literal: 42 and 42.0 differ in pdata too
	case string:
		return strconv.AppendQuote(append(b, 's'), v)
	case []any:
		b = append(b, '[')
		for _, e := range v {
			b = appendValueKey(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for _, k := range keys {
			b = appendValueKey(strconv.AppendQuote(b, k), v[k])
		}
		return append(b, '}')
	}
	return fmt.Appendf(b, "?%T%v", v, v) // not produced by decodeJSON
}
