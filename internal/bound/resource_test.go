package bound

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// mib is a 1 MiB string whose first bytes tell it apart (tag) from another.
func mib(tag string) string { return tag + strings.Repeat("x", 1<<20-len(tag)) }

// resourceOf returns the resource attributes of md's resource i.
func resourceAttrs(md pmetric.Metrics, i int) pcommon.Map {
	return md.ResourceMetrics().At(i).Resource().Attributes()
}

// Every string value of a resource is cut at 256 bytes of valid UTF-8, a rune never split; a
// large bytes, slice or map value becomes its string form, cut alike; small ones, numbers
// and bools stay. Each cut is counted, and the points keep their own attributes.
func TestResourceValuesCut(t *testing.T) {
	tp := newTestProcessor(t, nil)
	longSlice := make([]any, 100)
	for i := range longSlice {
		longSlice[i] = fmt.Sprintf("--flag-%03d", i)
	}
	res := attrs{
		"service.name":         mib("svc"),
		"nemo.run.id":          mib("run"),
		"host.name":            strings.Repeat("é", 200), // 400 bytes, 2 per rune
		"os.description":       "ok\xffbad",              // invalid UTF-8
		"process.command_args": []any{"python", "-m", "nemo_gym"},
		"process.args.long":    longSlice,
		"blob":                 make([]byte, 1024),
		"process.pid":          4242,
	}
	out := tp.run(t, newBatch().resource(res).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60, i: 3}).md)

	ra := resourceAttrs(out, 0)
	for k, v := range ra.All() {
		if v.Type() == pcommon.ValueTypeStr {
			assert.LessOrEqual(t, len(v.Str()), schema.DefaultStringMaxBytes, k)
			assert.True(t, utf8.ValidString(v.Str()), k)
		}
	}
	str := func(k string) string { v, ok := ra.Get(k); require.True(t, ok, k); return v.Str() }
	assert.Equal(t, mib("svc")[:256], str("service.name"))
	assert.Equal(t, mib("run")[:256], str("nemo.run.id"))
	assert.Equal(t, strings.Repeat("é", 128), str("host.name"), "cut at a rune boundary")
	assert.Equal(t, "ok", str("os.description"), "cut before the first invalid byte")
	args, _ := ra.Get("process.command_args")
	assert.Equal(t, pcommon.ValueTypeSlice, args.Type(), "a small slice stays a slice")
	assert.Len(t, str("process.args.long"), 256)
	assert.True(t, strings.HasPrefix(str("process.args.long"), `["--flag-000","--flag-001"`))
	assert.Len(t, str("blob"), 256, "base64, cut")
	pid, _ := ra.Get("process.pid")
	assert.EqualValues(t, 4242, pid.Int())
	// Six values, and the service.instance.id instance_per_process makes of the cut host.name
	// (no id sent): cut before its -pid4242.
	id := str("service.instance.id")
	assert.Equal(t, strings.Repeat("é", 124)+"-pid4242", id)
	assert.EqualValues(t, 7, tp.counter(t, "resource_values_cut"))
	assert.Zero(t, tp.counter(t, "resource_attributes_removed"))
	assert.Equal(t, map[string]any{outcome: "scored", dispatch: "math"}, only(t, out, completed).Attrs)

	// The same resource again: the same cut values, counted again; one resource in the state.
	out = tp.run(t, newBatch().resource(res).counter(completed, "1", pt{a: sc("math"), start: 1, t: 120, i: 5}).md)
	assert.Equal(t, mib("svc")[:256], resourceAttrs(out, 0).AsRaw()["service.name"])
	assert.EqualValues(t, 5, only(t, out, completed).Int)
	assert.EqualValues(t, 14, tp.counter(t, "resource_values_cut"))
	assert.Len(t, tp.st.resources, 1)
	assert.Zero(t, tp.counter(t, "resources_merged"), "one resource as received, twice")
}

// A value cut from a long string is a copy: it must not keep the 1 MiB it was cut from alive.
func TestResourceCutIsACopy(t *testing.T) {
	long := mib("svc")
	s, ok := cutString(long)
	require.True(t, ok)
	assert.Len(t, s, schema.DefaultStringMaxBytes)
	assert.NotSame(t, unsafeData(long), unsafeData(s))
	_, ok = cutString("nemo-gym/math")
	assert.False(t, ok)
}

// A point's value cut from a long string is a copy too, by the schema's rules and by the
// generic ones: the exporters keep a series' attributes, and a prefix would keep the 1 MiB.
// A value cut from a string of at most 1 KiB shares it (no allocation at every batch).
func TestLongPointValueCutIsACopy(t *testing.T) {
	tp := newTestProcessor(t, nil)
	md := newBatch().resource(gymResource("r1-rank0")).
		counter(completed, "1", pt{a: attrs{outcome: "scored", dispatch: mib("d")}, start: 1, t: 60, i: 3}).
		gauge("gym.agent.queue_depth", "{item}", pt{a: attrs{"note": mib("n"), "short": strings.Repeat("s", 300)}, t: 60, i: 1}).md
	in := map[string]*byte{}
	for _, name := range []string{completed, "gym.agent.queue_depth"} {
		for k, v := range metricPointAttrs(md, name).All() {
			in[k] = unsafeData(v.Str())
		}
	}
	out := tp.run(t, md)
	for _, name := range []string{completed, "gym.agent.queue_depth"} {
		for k, v := range metricPointAttrs(out, name).All() {
			switch k {
			case dispatch, "note":
				assert.Len(t, v.Str(), schema.DefaultStringMaxBytes, k)
				assert.NotSame(t, in[k], unsafeData(v.Str()), "%s: a copy", k)
			case "short":
				assert.Len(t, v.Str(), schema.DefaultStringMaxBytes, k)
				assert.Same(t, in[k], unsafeData(v.Str()), "%s: shared", k)
			}
		}
	}
}

// metricPointAttrs returns the attributes of the first point of the named Sum or Gauge.
func metricPointAttrs(md pmetric.Metrics, name string) pcommon.Map {
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				switch {
				case m.Name() != name:
				case m.Type() == pmetric.MetricTypeSum:
					return m.Sum().DataPoints().At(0).Attributes()
				default:
					return m.Gauge().DataPoints().At(0).Attributes()
				}
			}
		}
	}
	return pcommon.NewMap()
}

// Keys over 128 bytes are removed; past 32 attributes, those after the first 32 in key
// order (whatever order they were sent in). Each removal is counted.
func TestResourceKeysAndCount(t *testing.T) {
	tp := newTestProcessor(t, nil)
	res := attrs{"service.name": "nemo-gym/math", strings.Repeat("k", schema.ResourceMaxKeyBytes+1): "v"}
	for i := range 40 {
		res[fmt.Sprintf("extra.%02d", i)] = i
	}
	out := tp.run(t, newBatch().resource(res).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60, i: 3}).md)
	ra := resourceAttrs(out, 0)
	assert.Equal(t, schema.ResourceMaxAttributes, ra.Len())
	for i := range 32 {
		_, ok := ra.Get(fmt.Sprintf("extra.%02d", i))
		assert.True(t, ok, "extra.%02d, among the first 32 keys", i)
	}
	_, ok := ra.Get("service.name")
	assert.False(t, ok, "service.name sorts after extra.*: past the 32nd")
	assert.EqualValues(t, 1+8+1, tp.counter(t, "resource_attributes_removed"), "the long key, extra.32..39, service.name")
	assert.Zero(t, tp.counter(t, "resource_values_cut"))
	assert.EqualValues(t, 3, only(t, out, completed).Int)
}

// Two processes whose service.name differs only past the cut become one resource, and their
// series one series: a counter's value is the sum of both processes' totals, never one taken
// for a restart of the other. The merge is counted once.
func TestResourceMergeCumulative(t *testing.T) {
	tp := newTestProcessor(t, nil)
	a, b := gymResource("r1-a"), gymResource("r1-a")
	a["service.name"] = strings.Repeat("s", 300) + "A"
	b["service.name"] = strings.Repeat("s", 300) + "B"
	send := func(res attrs, t0, v int) pmetric.Metrics {
		return tp.run(t, newBatch().resource(res).counter(completed, "1", pt{a: sc("math"), start: 1, t: t0, i: int64(v)}).md)
	}
	send(a, 60, 100)
	assert.EqualValues(t, 105, only(t, send(b, 61, 5), completed).Int, "100 + 5")
	assert.EqualValues(t, 115, only(t, send(a, 120, 110), completed).Int, "110 + 5")
	assert.EqualValues(t, 116, only(t, send(b, 121, 6), completed).Int, "110 + 6")
	assert.Len(t, tp.st.resources, 1)
	assert.EqualValues(t, 1, tp.counter(t, "resources_merged"))
	assert.EqualValues(t, 4, tp.counter(t, "resource_values_cut"))

	// A third, sent as is (exactly the cut value): merged too, counted too.
	c := gymResource("r1-a")
	c["service.name"] = strings.Repeat("s", 256)
	assert.EqualValues(t, 123, only(t, send(c, 122, 7), completed).Int, "110 + 6 + 7")
	assert.EqualValues(t, 2, tp.counter(t, "resources_merged"))
}

// instance_per_process keeps a long id within 256 bytes by cutting it before its suffix:
// two processes keep two ids.
func TestResourceInstanceIDCut(t *testing.T) {
	tp := newTestProcessor(t, nil)
	long := mib("r1-rank0")
	w1, w2 := worker(101), worker(102)
	w1["service.instance.id"], w2["service.instance.id"] = long, long
	out := tp.run(t, newBatch().
		resource(w1).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60, i: 3}).
		resource(w2).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60, i: 4}).md)
	ids := resourceIDs(out)
	require.Len(t, ids, 2)
	for i, pid := range []string{"-pid101", "-pid102"} {
		assert.Len(t, ids[i], schema.DefaultStringMaxBytes)
		assert.True(t, strings.HasSuffix(ids[i], pid), ids[i])
		assert.True(t, strings.HasPrefix(ids[i], "r1-rank0xxx"), ids[i])
	}
	// service.name, nemo.run.id are short: the two cuts of the id and the two rewrites.
	assert.EqualValues(t, 4, tp.counter(t, "resource_values_cut"))

	// A second gymattrs (a gateway's) leaves the rewritten id alone.
	again := newTestProcessor(t, nil).run(t, out)
	assert.Equal(t, ids, resourceIDs(again))
}

// A resource within the bounds is walked, never copied: no allocation.
func TestResourceWithinBoundsAllocsNothing(t *testing.T) {
	tp := newTestProcessor(t, nil)
	res := pcommon.NewResource()
	putAttrs(res.Attributes(), gymResource("r1-rank0"))
	_ = res.Attributes().PutEmptySlice("process.command_args").FromRaw([]any{"python", "-m", "nemo_gym"})
	allocs := testing.AllocsPerRun(100, func() {
		if tp.boundResource(res) != 0 {
			t.Fatal("changed")
		}
	})
	assert.Zero(t, allocs)
}

// The estimate of a string form's length is an upper bound.
func TestStringFormBound(t *testing.T) {
	for _, raw := range []any{
		[]any{"a", 1, 2.5, true, nil, []any{"<>&\"\\"}, map[string]any{"k": "é\u2028"}},
		map[string]any{"x": []any{int64(-1 << 62), 1e-300}, "y": strings.Repeat("\x01", 40)},
		[]byte{0, 1, 2, 3, 4},
	} {
		v := pcommon.NewValueEmpty()
		require.NoError(t, v.FromRaw(raw))
		assert.GreaterOrEqual(t, stringFormBound(v, 1<<20), len(v.AsString()), "%v", raw)
	}
}

func unsafeData(s string) *byte { return unsafe.StringData(s) }

// resources_merged counts each merged resource once while remembered: 65 received resources
// per resource (the first and 64 more), the later ones at every batch.
func TestResourcesMergedBounded(t *testing.T) {
	tp := newTestProcessor(t, nil)
	const senders = maxReceivedPerResource + 6
	for round := range 2 {
		for i := range senders {
			res := attrs{"service.name": strings.Repeat("s", 256) + fmt.Sprint(i)}
			tp.run(t, newBatch().resource(res).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60 + round, i: 1}).md)
		}
	}
	r := tp.st.resources
	require.Len(t, r, 1)
	for _, rs := range r {
		assert.Len(t, rs.received, maxReceivedPerResource)
	}
	assert.EqualValues(t, senders-1+5, tp.counter(t, "resources_merged"), "69 in the first round, the 5 not remembered again in the second")
}
