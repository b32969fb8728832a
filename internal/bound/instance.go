package bound

import (
	"math"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The instance_per_process rule. Gym names every server process of a run
// service.instance.id=<run>-rank0, so two workers of one server share service.name and
// service.instance.id and differ only by process.pid. Prometheus (a scrape of the prometheus
// exporter, remote write) identifies a series by job and instance, which come from those two,
// plus the few resource_constant_labels: the two workers' series got the same labels and one
// overwrote the other. process.pid cannot be a constant label (gym.server.memory.* and
// gym.server.processes carry process.pid per point, another process's, which a resource label
// would overwrite), so the pid goes into the instance id instead: <id>-pid<pid>.
//
// The rewrite depends on the resource's own attributes only, so it gives a process the same id
// in every batch, after a collector restart, and on the agent and the gateway alike; an id
// that already ends with the suffix is left alone, so a second gymattrs (an agent's, then a
// gateway's) changes nothing.

// Resource attribute keys of the OpenTelemetry service, process and host conventions.
const (
	attrServiceInstanceID = "service.instance.id"
	attrProcessPID        = "process.pid"
	attrHostName          = "host.name"
)

// pidSuffix is what separates an instance id from the process's pid.
const pidSuffix = "pid"

// maxInstanceIDs bounds the cache of rewritten ids: past it the cache starts again (a
// collector sees far fewer live processes; a churn of short-lived ones cannot grow it).
const maxInstanceIDs = 4096

// instanceKey is a resource's (id, pid): its rewritten id is cached under it, so the rewrite
// of a known process allocates nothing.
type instanceKey struct {
	id   string
	host string // only for a resource without an id
	noID bool
	pid  int64
}

// instanceID is a rewritten id; cut: its base was cut to keep it within
// schema.DefaultStringMaxBytes.
type instanceID struct {
	id  string
	cut bool
}

// instances is the rule's state: the rewritten ids, by resource.
type instances struct {
	on  bool
	ids map[instanceKey]instanceID
	buf []byte
}

// perProcess makes the service.instance.id of a resource that carries a process.pid unique
// to the process (docs/processor.md, instance_per_process). A resource without a usable pid
// (absent, not a positive integer, or a string that is not one) is left as it is. cut: the
// id was cut before its suffix, to stay within schema.DefaultStringMaxBytes.
func (in *instances) perProcess(res pcommon.Resource) (cut bool) {
	if !in.on {
		return false
	}
	attrs := res.Attributes()
	pv, ok := attrs.Get(attrProcessPID)
	if !ok {
		return false
	}
	pid, ok := pidOf(pv)
	if !ok {
		return false
	}
	k := instanceKey{pid: pid}
	if v, ok := attrs.Get(attrServiceInstanceID); ok {
		k.id = v.AsString() // another type than a string: its text, as the exporters write it
	} else {
		// No id: the host and the pid name the process.
		k.noID = true
		if h, ok := attrs.Get(attrHostName); ok {
			k.host = h.AsString()
		}
	}
	id, ok := in.ids[k]
	if !ok {
		id = in.rewrite(k)
		if in.ids == nil || len(in.ids) >= maxInstanceIDs {
			in.ids = make(map[instanceKey]instanceID, 64)
		}
		in.ids[k] = id
	}
	if v, _ := attrs.Get(attrServiceInstanceID); k.noID || v.Type() != pcommon.ValueTypeStr || id.id != k.id {
		attrs.PutStr(attrServiceInstanceID, id.id)
	}
	return id.cut
}

// rewrite returns the id of k's process: <id>-pid<pid>, or <host.name>-pid<pid> (pid<pid>
// without a host name) for a resource with no id; an id already ending in -pid<pid> (or
// equal to pid<pid>) is kept. The id or host name is cut at a rune boundary so that the
// whole stays within schema.DefaultStringMaxBytes, as every resource value (resource.go): the
// suffix, which tells the processes apart, is never the part cut.
func (in *instances) rewrite(k instanceKey) instanceID {
	b := append(in.buf[:0], pidSuffix...)
	b = strconv.AppendInt(b, k.pid, 10)
	in.buf = b
	suffix := string(b)
	base := k.id
	if k.noID {
		base = k.host
	} else if k.id == suffix || strings.HasSuffix(k.id, "-"+suffix) {
		return instanceID{id: k.id}
	}
	if base == "" {
		return instanceID{id: suffix}
	}
	cut := false
	if room := schema.DefaultStringMaxBytes - 1 - len(suffix); len(base) > room {
		base, cut = string(normalize.Cap(bytesOf(base), room)), true
	}
	return instanceID{id: base + "-" + suffix, cut: cut}
}

// pidOf reads a process.pid: an int, a string of decimal digits (OTEL_RESOURCE_ATTRIBUTES
// gives strings), or a whole double; positive. The same process gets the same suffix
// whichever type its SDK sends.
func pidOf(v pcommon.Value) (int64, bool) {
	var pid int64
	switch v.Type() {
	case pcommon.ValueTypeInt:
		pid = v.Int()
	case pcommon.ValueTypeStr:
		s := v.Str()
		if s == "" || len(s) > 19 {
			return 0, false
		}
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, false
		}
		pid = n
	case pcommon.ValueTypeDouble:
		f := v.Double()
		if f != math.Trunc(f) || f < 1 || f > 1<<53 {
			return 0, false
		}
		pid = int64(f)
	default:
		return 0, false
	}
	return pid, pid > 0
}
