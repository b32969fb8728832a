package aggregate

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Scope names the instrumentation scope of the metrics the aggregator emits.
type Scope struct {
	Name, Version string
}

// Collect returns the cumulative state of every resource as metrics stamped now. A resource
// that received nothing for ExpireAfter is in it one last time, then dropped.
//
// A retired resource (its process restarted) is exported alone of its service instance: its
// successor waits for the next collection, so a backend that knows only the service instance
// (Prometheus' job and instance) sees the old process's last totals before the new one's
// first, never both at one time.
func (a *Aggregator) Collect(scope Scope) pmetric.Metrics {
	return a.collect(scope, nil)
}

func (a *Aggregator) collect(scope Scope, state *[]byte) pmetric.Metrics {
	now := a.clock.Elapsed()
	ts := a.stamp()
	md := pmetric.NewMetrics()
	rs := a.retiredFirst(a.resources())
	// The resource of each service instance exported now: its oldest retired one, if any.
	first := map[string]uint64{}
	for _, r := range rs {
		r.mu.Lock()
		if r.retired && r.inst != "" {
			if c, ok := first[r.inst]; !ok || r.claim < c {
				first[r.inst] = r.claim
			}
		}
		r.mu.Unlock()
	}
	kept := 0
	if state != nil {
		*state = a.appendStateHeader((*state)[:0])
	}
	for _, r := range rs {
		r.mu.Lock()
		if c, ok := first[r.inst]; ok && r.inst != "" && r.claim != c {
			// Held back until its predecessor's last export has gone.
			if state != nil {
				*state = r.appendState(*state)
				kept++
			}
			r.mu.Unlock()
			continue
		}
		if r.touched {
			r.touched = false
			r.lastSeen = now
		}
		expired := r.retired || (a.cfg.ExpireAfter > 0 && now-r.lastSeen >= a.cfg.ExpireAfter)
		r.export(md, scope, ts)
		if r.procDrop {
			r.procDrop = false
			r.dropProcessSeries()
		}
		if expired {
			r.dropped = true
		} else if state != nil {
			*state = r.appendState(*state)
			kept++
		}
		r.mu.Unlock()
		if expired {
			a.forget(r)
			a.unannounce(r)
			a.releaseInstance(r)
		}
	}
	if state != nil {
		*state = appendStateTrailer(*state, kept)
	}
	return md
}

// retiredFirst puts retired resources first (keeping the order otherwise).
func (a *Aggregator) retiredFirst(rs []*Resource) []*Resource {
	out := make([]*Resource, 0, len(rs))
	for pass := range 2 {
		for _, r := range rs {
			r.mu.Lock()
			retired := r.retired
			r.mu.Unlock()
			if retired == (pass == 0) {
				out = append(out, r)
			}
		}
	}
	return out
}

// Len returns the number of live resources.
func (a *Aggregator) Len() int {
	n := 0
	for i := range a.shards {
		a.shards[i].mu.Lock()
		n += len(a.shards[i].m)
		a.shards[i].mu.Unlock()
	}
	return n
}

func (r *Resource) export(md pmetric.Metrics, scope Scope, ts pcommon.Timestamp) {
	n := 0
	for _, in := range r.insts {
		if in != nil && (len(in.order) > 0 || in.overflow != nil) {
			n++
		}
	}
	if n == 0 {
		return
	}
	rm := md.ResourceMetrics().AppendEmpty()
	ra := rm.Resource().Attributes()
	// Exactly the attributes the resource was created with: a resource's attributes are the
	// same in every export (nothing learnt later, such as a scraped executable name, is added).
	ra.EnsureCapacity(len(r.attrs))
	for _, a := range r.attrs {
		putResourceAttr(ra, a)
	}
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scope.Name)
	sm.Scope().SetVersion(scope.Version)
	ms := sm.Metrics()
	ms.EnsureCapacity(n)
	for _, in := range r.insts {
		if in == nil || (len(in.order) == 0 && in.overflow == nil) {
			continue
		}
		in.export(ms.AppendEmpty(), ts)
	}
}

func putResourceAttr(m pcommon.Map, a ResourceAttrValue) {
	switch a.Kind {
	case events.ValueString:
		m.PutStr(a.Key, a.Str)
	case events.ValueInt:
		m.PutInt(a.Key, a.Int)
	case events.ValueBool:
		m.PutBool(a.Key, a.Bool)
	}
}

func (in *instrument) export(m pmetric.Metric, ts pcommon.Timestamp) {
	def := schema.Get(in.id)
	m.SetName(def.Name)
	m.SetDescription(def.Description)
	m.SetUnit(def.Unit)
	n := len(in.order)
	if in.overflow != nil {
		n++
	}
	each := func(f func(s *series)) {
		for _, s := range in.order {
			f(s)
		}
		if in.overflow != nil {
			f(in.overflow)
		}
	}
	switch def.Kind {
	case schema.KindCounter, schema.KindUpDown:
		sum := m.SetEmptySum()
		sum.SetIsMonotonic(def.Monotonic())
		sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dps := sum.DataPoints()
		dps.EnsureCapacity(n)
		each(func(s *series) { numberPoint(dps.AppendEmpty(), def, s, ts) })
	case schema.KindGauge:
		dps := m.SetEmptyGauge().DataPoints()
		dps.EnsureCapacity(n)
		each(func(s *series) { numberPoint(dps.AppendEmpty(), def, s, ts) })
	case schema.KindHistogram:
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dps := h.DataPoints()
		dps.EnsureCapacity(n)
		each(func(s *series) {
			dp := dps.AppendEmpty()
			putAttrs(dp.Attributes(), s)
			dp.SetStartTimestamp(s.start)
			dp.SetTimestamp(ts)
			dp.SetCount(s.count)
			dp.SetSum(s.sum)
			if s.count > 0 {
				dp.SetMin(s.min)
				dp.SetMax(s.max)
			}
			dp.ExplicitBounds().FromRaw(def.Bounds)
			dp.BucketCounts().FromRaw(s.buckets)
		})
	}
}

func numberPoint(dp pmetric.NumberDataPoint, def *schema.Instrument, s *series, ts pcommon.Timestamp) {
	putAttrs(dp.Attributes(), s)
	if def.Kind != schema.KindGauge {
		dp.SetStartTimestamp(s.start)
	}
	dp.SetTimestamp(ts)
	if def.ValueType == schema.ValueDouble {
		dp.SetDoubleValue(s.dval)
	} else {
		dp.SetIntValue(s.val)
	}
}

func putAttrs(m pcommon.Map, s *series) {
	if s.overflow {
		m.PutBool(schema.OverflowAttribute, true)
		return
	}
	m.EnsureCapacity(len(s.attrs))
	for _, a := range s.attrs {
		def := schema.Attr(a.id)
		switch def.Type {
		case schema.AttrString:
			m.PutStr(def.Key, a.str)
		case schema.AttrInt:
			m.PutInt(def.Key, a.i)
		case schema.AttrBool:
			m.PutBool(def.Key, a.b)
		}
	}
}
