package bound

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// worker is the resource of one worker process of a Gym server: every worker of a run shares
// service.name and service.instance.id (<run>-rank0) and only process.pid tells them apart.
func worker(pid any) attrs {
	a := gymResource("r1-rank0")
	a["process.pid"] = pid
	return a
}

// resourceIDs returns the service.instance.id of every resource of md, in order ("<none>"
// when absent).
func resourceIDs(md pmetric.Metrics) []string {
	var ids []string
	for _, rm := range md.ResourceMetrics().All() {
		v, ok := rm.Resource().Attributes().Get(attrServiceInstanceID)
		if !ok {
			ids = append(ids, "<none>")
			continue
		}
		ids = append(ids, v.AsString())
	}
	return ids
}

// Two workers of one server: each resource gets its own id, both totals stay (two series).
func TestInstancePerProcessTwoWorkers(t *testing.T) {
	tp := newTestProcessor(t, nil)
	out := tp.run(t, newBatch().
		resource(worker(101)).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60, i: 5}).
		resource(worker(102)).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60, i: 7}).md)
	assert.Equal(t, []string{"r1-rank0-pid101", "r1-rank0-pid102"}, resourceIDs(out))
	pts := points(out, completed)
	require.Len(t, pts, 2)
	assert.EqualValues(t, 12, pts[0].Int+pts[1].Int)
	assert.Len(t, tp.st.resources, 2)
}

// The suffix is the pid's decimal form whatever type the SDK sends; what is not a positive
// integer leaves the resource as it is.
func TestInstancePerProcessPidTypes(t *testing.T) {
	for _, c := range []struct {
		pid  any
		want string
	}{
		{4242, "r1-rank0-pid4242"},
		{"4242", "r1-rank0-pid4242"}, // OTEL_RESOURCE_ATTRIBUTES gives strings
		{4242.0, "r1-rank0-pid4242"},
		{int64(1) << 40, fmt.Sprintf("r1-rank0-pid%d", int64(1)<<40)},
		{0, "r1-rank0"},
		{-3, "r1-rank0"},
		{"", "r1-rank0"},
		{"12a", "r1-rank0"},
		{"-12", "r1-rank0"},
		{"+12", "r1-rank0"},
		{"99999999999999999999", "r1-rank0"},
		{4242.5, "r1-rank0"},
		{true, "r1-rank0"},
		{[]byte{1}, "r1-rank0"},
	} {
		t.Run(fmt.Sprintf("%T(%v)", c.pid, c.pid), func(t *testing.T) {
			tp := newTestProcessor(t, nil)
			out := tp.run(t, newBatch().resource(worker(c.pid)).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60, i: 5}).md)
			assert.Equal(t, []string{c.want}, resourceIDs(out))
			_, ok := out.ResourceMetrics().At(0).Resource().Attributes().Get(attrProcessPID)
			assert.True(t, ok, "process.pid stays")
		})
	}
}

// A second gymattrs (an agent's, then a gateway's) changes nothing; an id that already names
// its process is kept.
func TestInstancePerProcessIdempotent(t *testing.T) {
	build := func(a attrs) pmetric.Metrics {
		return newBatch().resource(a).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60, i: 5}).md
	}
	noID := worker(77)
	delete(noID, attrServiceInstanceID)
	noHost := worker(78)
	delete(noHost, attrServiceInstanceID)
	delete(noHost, attrHostName)
	for name, c := range map[string]struct {
		in   attrs
		want string
	}{
		"id":             {worker(4242), "r1-rank0-pid4242"},
		"suffixed":       {gymResource("r1-rank0-pid4242"), "r1-rank0-pid4242"},
		"other suffix":   {gymResource("r1-rank0-pid42"), "r1-rank0-pid42-pid4242"},
		"no id":          {noID, "node7-pid77"},
		"no id nor host": {noHost, "pid78"},
		"string pid":     {worker("4242"), "r1-rank0-pid4242"},
		"int id":         {withAttr(worker(4242), attrServiceInstanceID, 7), "7-pid4242"},
	} {
		t.Run(name, func(t *testing.T) {
			agent, gateway := newTestProcessor(t, nil), newTestProcessor(t, nil)
			once := agent.run(t, build(c.in))
			assert.Equal(t, []string{c.want}, resourceIDs(once))
			want := pmetric.NewMetrics()
			once.CopyTo(want)
			twice := gateway.run(t, once)
			assert.Equal(t, want.ResourceMetrics().At(0).Resource(), twice.ResourceMetrics().At(0).Resource())
		})
	}
}

// Without a pid, or with the rule off, the resource is untouched.
func TestInstancePerProcessUntouched(t *testing.T) {
	noPID := gymResource("r1-rank0")
	delete(noPID, attrProcessPID)
	tp := newTestProcessor(t, nil)
	out := tp.run(t, newBatch().resource(noPID).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60, i: 5}).md)
	assert.Equal(t, []string{"r1-rank0"}, resourceIDs(out))
	_, ok := out.ResourceMetrics().At(0).Resource().Attributes().Get(attrServiceInstanceID)
	assert.True(t, ok)

	off := newTestProcessor(t, func(cfg *Config) { cfg.InstancePerProcess = false })
	out = off.run(t, newBatch().
		resource(worker(101)).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60, i: 5}).
		resource(worker(102)).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60, i: 7}).md)
	assert.Equal(t, []string{"r1-rank0", "r1-rank0"}, resourceIDs(out))
}

// A process's resource is the same in every batch: one resource state, one series whose
// cumulative stream goes on (its start time kept); and after a restart of the collector.
func TestInstancePerProcessStableAcrossBatches(t *testing.T) {
	tp := newTestProcessor(t, nil)
	for i, v := range []int64{5, 9, 12} {
		out := tp.run(t, newBatch().
			resource(worker(101)).counter(completed, "1", pt{a: sc("math"), start: 1, t: 60 * (i + 1), i: v}).md)
		assert.Equal(t, []string{"r1-rank0-pid101"}, resourceIDs(out), "batch %d", i)
		p := only(t, out, completed)
		assert.Equal(t, v, p.Int)
		assert.Equal(t, ts(1), p.Start)
	}
	assert.Len(t, tp.st.resources, 1)
	assert.Len(t, tp.ids.ids, 1)

	// A restarted collector (a new engine, nothing remembered) gives the process the same id.
	restarted := newTestProcessor(t, nil)
	out := restarted.run(t, newBatch().
		resource(worker(101)).counter(completed, "1", pt{a: sc("math"), start: 1, t: 240, i: 13}).md)
	assert.Equal(t, []string{"r1-rank0-pid101"}, resourceIDs(out))
}

// The process stats carry process.pid per point, another process's: the resource's pid
// never replaces it.
func TestInstancePerProcessKeepsPointPid(t *testing.T) {
	tp := newTestProcessor(t, nil)
	out := tp.run(t, newBatch().resource(worker(4242)).
		gauge("gym.server.memory.usage", "By", pt{a: attrs{
			"nemo.gym.server.name": "math", "nemo.gym.server.type": "resources_servers",
			"process.pid": 4300, "memory.type": "rss",
		}, t: 10, i: 1 << 30}).md)
	assert.Equal(t, []string{"r1-rank0-pid4242"}, resourceIDs(out))
	p := only(t, out, "gym.server.memory.usage")
	assert.EqualValues(t, 4300, p.Attrs["process.pid"])
	pid, _ := out.ResourceMetrics().At(0).Resource().Attributes().Get(attrProcessPID)
	assert.EqualValues(t, 4242, pid.Int(), "the resource keeps its own pid")
}

// A known process's rewrite allocates nothing; the cache of ids stays bounded.
func TestInstancePerProcessAllocsAndBound(t *testing.T) {
	in := instances{on: true}
	res := pcommon.NewResource()
	res.Attributes().PutStr(attrServiceInstanceID, "r1-rank0")
	res.Attributes().PutInt(attrProcessPID, 4242)
	in.perProcess(res)
	allocs := testing.AllocsPerRun(100, func() {
		res.Attributes().PutStr(attrServiceInstanceID, "r1-rank0") // the next batch's resource
		in.perProcess(res)
	})
	v, _ := res.Attributes().Get(attrServiceInstanceID)
	assert.Equal(t, "r1-rank0-pid4242", v.Str())
	assert.Zero(t, allocs)

	for pid := range int64(3 * maxInstanceIDs) {
		r := pcommon.NewResource()
		r.Attributes().PutStr(attrServiceInstanceID, "r1-rank0")
		r.Attributes().PutInt(attrProcessPID, pid+1)
		in.perProcess(r)
		require.LessOrEqual(t, len(in.ids), maxInstanceIDs)
		v, _ := r.Attributes().Get(attrServiceInstanceID)
		require.Equal(t, fmt.Sprintf("r1-rank0-pid%d", pid+1), v.Str())
	}
}

// withAttr returns a copy of a with k set to v.
func withAttr(a attrs, k string, v any) attrs {
	b := attrs{}
	for kk, vv := range a {
		b[kk] = vv
	}
	b[k] = v
	return b
}
