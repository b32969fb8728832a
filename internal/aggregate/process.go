package aggregate

import (
	"sort"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Resource attribute keys of the OpenTelemetry process and host conventions that the process
// stats need (the schema's process instruments follow those conventions).
const (
	attrProcessPID            = "process.pid"
	attrProcessExecutableName = "process.executable.name"
	attrHostName              = "host.name"
)

// processes tracks which resource announced which pid on this host.
type processes struct {
	mu        sync.Mutex
	pids      map[int32]*Resource
	otherHost int64 // resource lines naming a pid on another host
	stream    *Stream
}

// announce records the pid of a resource line, when it names one on this host. The caller is
// the stream that applied the line.
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
	p := &a.procs
	p.mu.Lock()
	defer p.mu.Unlock()
	if !sameHost {
		p.otherHost++
		return
	}
	if p.pids[int32(pid)] != r {
		p.pids[int32(pid)] = r // the latest resource that named the pid
		r.pid = int32(pid)
	}
}

// unannounce forgets the pid of a dropped resource.
func (a *Aggregator) unannounce(r *Resource) {
	if r.pid == 0 {
		return
	}
	p := &a.procs
	p.mu.Lock()
	if p.pids[r.pid] == r {
		delete(p.pids, r.pid)
	}
	p.mu.Unlock()
}

// Announced returns the pids announced on this host, each with its resource's key.
func (a *Aggregator) Announced() []procstats.Target {
	p := &a.procs
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]procstats.Target, 0, len(p.pids))
	for pid, r := range p.pids {
		out = append(out, procstats.Target{PID: pid, Key: r.key})
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
	if p.stream == nil {
		p.stream = a.NewStream(events.DefaultMaxLineBytes, nil)
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
				p.pids[rd.PID] = r
				r.pid = rd.PID
			}
			r.mu.Lock()
		}
		r.setProcess(a, p.stream, rd)
		r.mu.Unlock()
	}
}

// processResource finds the resource of a reading; the caller holds procs.mu.
func (a *Aggregator) processResource(rd *procstats.Reading) *Resource {
	if rd.Key != "" {
		r := a.procs.pids[rd.PID]
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
func (r *Resource) setProcess(a *Aggregator, st *Stream, rd *procstats.Reading) {
	r.touched = true
	if rd.New {
		r.procDrop = false
		r.dropProcessSeries() // a new process under this resource: fresh series
	}
	k := &st.kb
	start := processStartTime(rd.CreateTime)
	set := func(s *series, v int64, d float64) {
		s.start = start
		s.val, s.dval, s.hasVal = v, d, true
	}
	if rd.HasCPU {
		set(r.series(a, st, k.begin(schema.ProcessCpuTime).str([]byte(cpuModes[0]))), 0, rd.CPU.User)
		set(r.series(a, st, k.begin(schema.ProcessCpuTime).str([]byte(cpuModes[1]))), 0, rd.CPU.System)
		if rd.CPU.HasWait {
			set(r.series(a, st, k.begin(schema.ProcessCpuTime).str([]byte(cpuModes[2]))), 0, rd.CPU.Wait)
		}
	}
	if rd.HasRSS {
		set(r.series(a, st, k.begin(schema.ProcessMemoryUsage)), rd.RSS, 0)
	}
	if rd.HasThreads {
		set(r.series(a, st, k.begin(schema.ProcessThreadCount)), rd.Threads, 0)
	}
	if rd.HasFDs {
		set(r.series(a, st, k.begin(schema.ProcessOpenFileDescriptorCount)), rd.FDs, 0)
	}
}

func (r *Resource) dropProcessSeries() {
	for _, id := range processInstIDs {
		r.insts[id] = nil
	}
}
