package aggregate

import (
	"sync"
	"sync/atomic"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
)

// A Gym process that restarts announces a new resource: the same service.name and
// service.instance.id, a new process.pid. Both are distinct resources (typed equality of the
// attribute set), but a backend that identifies series by service and instance (Prometheus'
// job and instance) would see the dead process's totals alternate with the new ones for as
// long as the old resource lives. So a new resource of a service instance retires the old
// one: it is exported once more, ahead of the new one, and dropped.

// Resource attribute keys of the OpenTelemetry service conventions.
const (
	attrServiceName       = "service.name"
	attrServiceInstanceID = "service.instance.id"
)

type instances struct {
	mu     sync.Mutex
	m      map[string]*Resource
	claims atomic.Uint64 // resources created: each resource's claim
}

// instanceKey returns the service instance a resource belongs to; false when the resource
// does not name a service.instance.id.
func instanceKey(attrs []ResourceAttrValue) (string, bool) {
	var name, id string
	var hasID bool
	for _, a := range attrs {
		switch a.Key {
		case attrServiceName:
			if a.Kind == events.ValueString {
				name = a.Str
			}
		case attrServiceInstanceID:
			if a.Kind == events.ValueString {
				id, hasID = a.Str, true
			}
		}
	}
	if !hasID {
		return "", false
	}
	return name + "\x00" + id, true
}

// claimInstance makes a new resource the live one of its service instance, retiring the
// previous one.
func (a *Aggregator) claimInstance(r *Resource) {
	key := r.inst
	if key == "" {
		return
	}
	a.insts.mu.Lock()
	if a.insts.m == nil {
		a.insts.m = map[string]*Resource{}
	}
	old := a.insts.m[key]
	a.insts.m[key] = r
	a.insts.mu.Unlock()
	if old != nil && old != r {
		old.mu.Lock()
		old.retired = true
		old.mu.Unlock()
	}
}

// releaseInstance forgets a dropped resource's claim.
func (a *Aggregator) releaseInstance(r *Resource) {
	key := r.inst
	if key == "" {
		return
	}
	a.insts.mu.Lock()
	if a.insts.m[key] == r {
		delete(a.insts.m, key)
	}
	a.insts.mu.Unlock()
}
