package console

import (
	"bytes"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// Resources: read, put into pdata, and told apart for the grouping of spans and log records.

// resource is the SDK's Resource.to_json.
type resource struct {
	set        bool
	Attributes attrs
	SchemaURL  text
}

var resourceFields = []string{"attributes", "schema_url"}

// optResource reads a resource (null unsets it, as encoding/json's *resource).
func (d *reader) optResource(i, depth int, r *resource) (int, error) {
	return optObject(d, i, depth, "resource", r, &r.set, func(key []byte, i int) (int, error) {
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

// resourceSlice is a ResourceSpansSlice or a ResourceLogsSlice, of groups R.
type resourceSlice[R resourceOut] interface {
	Len() int
	At(i int) R
	AppendEmpty() R
}

// resourceOut is a ResourceSpans or a ResourceLogs.
type resourceOut interface {
	Resource() pcommon.Resource
	SetSchemaUrl(url string)
}

// groupOf returns the group of rs that a record of resource res goes under: the last one
// when res is its resource, else a new one (fresh: it has no scope yet) with res put in it.
func groupOf[S resourceSlice[R], R resourceOut](d *reader, last *resourceGroup, rs S, res *resource) (g R, fresh bool) {
	if last.joins(d, rs.Len(), res) {
		return rs.At(rs.Len() - 1), false
	}
	g = rs.AppendEmpty()
	d.putResource(res, g.Resource())
	g.SetSchemaUrl(res.SchemaURL.String())
	last.started()
	return g, true
}

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
