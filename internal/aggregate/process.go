package aggregate

import (
	"sort"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Resource attribute keys of the OpenTelemetry process and host conventions that the process
// stats need (the schema's process instruments follow those conventions).
const (
	attrProcessPID            = "process.pid"
	attrProcessExecutableName = "process.executable.name"
	attrHostName              = "host.name"
	// A process in a container names its container; its pid and host.name are the container's.
	attrContainerID = "container.id"
	attrK8sPodUID   = "k8s.pod.uid"
)

// processes tracks which resource announced which pid on this host.
type processes struct {
	mu        sync.Mutex
	pids      map[announcedPID]*Resource
	otherHost int64 // resource lines naming a pid on another host
	sink      *Sink
	// sinkStats is the process sink's: nothing records them (a process's series are few, its
	// resource's limit is the events').
	sinkStats ingest.Stats
}

// announcedPID is a pid as a resource announced it: the host's, or a container's.
type announcedPID struct {
	pid int32
	in  procstats.Container
}

// containerOf is the container a resource's attributes name (string container.id,
// k8s.pod.uid), the zero Container when none.
func containerOf(n int, attr func(i int) (key string, str []byte, isStr bool)) procstats.Container {
	var c procstats.Container
	for i := range n {
		key, str, isStr := attr(i)
		if !isStr {
			continue
		}
		switch key {
		case attrContainerID:
			c.ID = string(str)
		case attrK8sPodUID:
			c.PodUID = string(str)
		}
	}
	return c
}

// announce records the pid of a resource line, when it names one on this host: a pid in a
// container (container.id or k8s.pod.uid, whatever its host.name, which is the container's),
// or a host pid whose host.name is this host's (or absent). The caller is the sink that
// applied the line.
func (a *Aggregator) announce(r *Resource, attrs []events.ResourceAttr) {
	if !a.cfg.TrackPIDs {
		return
	}
	var pid int64 = -1
	sameHost := true
	for i := range attrs {
		at := &attrs[i]
		switch string(at.Key) {
		case attrProcessPID:
			if at.Kind == events.ValueInt {
				pid = at.Int
			}
		case attrHostName:
			sameHost = at.Kind == events.ValueString && string(at.Str) == a.cfg.Hostname
		}
	}
	if pid <= 0 || pid > 1<<31-1 {
		return
	}
	in := containerOf(len(attrs), func(i int) (string, []byte, bool) {
		return string(attrs[i].Key), attrs[i].Str, attrs[i].Kind == events.ValueString
	})
	p := &a.procs
	p.mu.Lock()
	defer p.mu.Unlock()
	if !sameHost && in.IsZero() {
		p.otherHost++
		return
	}
	id := announcedPID{int32(pid), in}
	if p.pids[id] != r {
		p.pids[id] = r // the latest resource that named the pid
		r.pid, r.pidIn = id.pid, id.in
	}
}

// unannounce forgets the pid of a dropped resource.
func (a *Aggregator) unannounce(r *Resource) {
	if r.pid == 0 {
		return
	}
	p := &a.procs
	p.mu.Lock()
	id := announcedPID{r.pid, r.pidIn}
	if p.pids[id] == r {
		delete(p.pids, id)
	}
	p.mu.Unlock()
}

// Announced returns the pids announced on this host, each with its resource's key and
// container.
func (a *Aggregator) Announced() []procstats.Target {
	p := &a.procs
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]procstats.Target, 0, len(p.pids))
	for id, r := range p.pids {
		out = append(out, procstats.Target{PID: id.pid, Key: r.key, In: id.in})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// TakeOtherHost returns how many resource lines named a pid on another host since the last call.
func (a *Aggregator) TakeOtherHost() int64 {
	p := &a.procs
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.otherHost
	p.otherHost = 0
	return n
}

var (
	cpuModes         = schema.Attr(schema.AttrCpuMode).Values // user, system, wait
	processInstIDs   []schema.InstrumentID
	processStartTime = func(ms int64) pcommon.Timestamp { return pcommon.Timestamp(uint64(ms) * 1e6) }
)

func init() {
	for i := range schema.Instruments {
		if schema.Instruments[i].Source == "process" {
			processInstIDs = append(processInstIDs, schema.InstrumentID(i))
		}
	}
}

// ApplyProcesses records one scrape: each reading under its resource (the announcing one, or
// a resource of its own for the collector itself and included processes); an ended process is
// exported once more, then its series are dropped.
func (a *Aggregator) ApplyProcesses(res *procstats.Result) {
	p := &a.procs
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sink == nil {
		p.sink = a.newSink(nil, &p.sinkStats)
	}
	for i := range res.Ended {
		if r := a.processResource(&res.Ended[i]); r != nil {
			r.mu.Lock()
			r.procDrop = true
			r.mu.Unlock()
		}
	}
	for i := range res.Readings {
		rd := &res.Readings[i]
		r := a.processResource(rd)
		if r == nil {
			continue
		}
		r.mu.Lock()
		for r.dropped {
			r.mu.Unlock()
			r = a.revive(r)
			if rd.Key != "" {
				p.pids[announcedPID{rd.PID, rd.In}] = r
				r.pid, r.pidIn = rd.PID, rd.In
			}
			r.mu.Lock()
		}
		r.setProcess(a, p.sink, rd)
		r.mu.Unlock()
	}
}

// processResource finds the resource of a reading; the caller holds procs.mu.
func (a *Aggregator) processResource(rd *procstats.Reading) *Resource {
	if rd.Key != "" {
		r := a.procs.pids[announcedPID{rd.PID, rd.In}]
		if r == nil || r.key != rd.Key {
			return nil // announced by another resource since
		}
		return r
	}
	attrs := []events.ResourceAttr{
		{Key: []byte(attrHostName), Kind: events.ValueString, Str: []byte(a.cfg.Hostname)},
		{Key: []byte(attrProcessExecutableName), Kind: events.ValueString, Str: []byte(rd.ExecutableName)},
		{Key: []byte(attrProcessPID), Kind: events.ValueInt, Int: int64(rd.PID)},
	}
	var order []int
	key := encodeResourceKey(nil, attrs, &order)
	return a.resource(key, func() []ResourceAttrValue { return ownResourceAttrs(attrs) })
}

// setProcess records a reading; the caller holds r.mu.
func (r *Resource) setProcess(a *Aggregator, sk *Sink, rd *procstats.Reading) {
	r.touched = true
	if rd.New {
		r.procDrop = false
		r.dropProcessSeries() // a new process under this resource: fresh series
	}
	k := &sk.kb
	start := processStartTime(rd.CreateTime)
	set := func(s *series, v int64, d float64) {
		s.start = start
		s.val, s.dval, s.hasVal = v, d, true
	}
	if rd.HasCPU {
		set(r.series(a, sk, k.begin(schema.ProcessCpuTime).str([]byte(cpuModes[0]))), 0, rd.CPU.User)
		set(r.series(a, sk, k.begin(schema.ProcessCpuTime).str([]byte(cpuModes[1]))), 0, rd.CPU.System)
		if rd.CPU.HasWait {
			set(r.series(a, sk, k.begin(schema.ProcessCpuTime).str([]byte(cpuModes[2]))), 0, rd.CPU.Wait)
		}
	}
	if rd.HasRSS {
		set(r.series(a, sk, k.begin(schema.ProcessMemoryUsage)), rd.RSS, 0)
	}
	if rd.HasThreads {
		set(r.series(a, sk, k.begin(schema.ProcessThreadCount)), rd.Threads, 0)
	}
	if rd.HasFDs {
		set(r.series(a, sk, k.begin(schema.ProcessOpenFileDescriptorCount)), rd.FDs, 0)
	}
}

func (r *Resource) dropProcessSeries() {
	for _, id := range processInstIDs {
		r.insts[id] = nil
	}
}
