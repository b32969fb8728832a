package bound

import "go.opentelemetry.io/collector/pdata/pmetric"

// cursor is pass 1's position in a batch: the resource and scope whose metrics it walks, with
// their state and stream hash found when a metric first needs them (a resource or scope whose
// metrics all pass untouched costs nothing).
type cursor struct {
	rm    pmetric.ResourceMetrics
	sm    pmetric.ScopeMetrics
	res   *resourceState
	scope uint64
	raw   uint64 // the resource as received, when the resource rule changed it (resource.go)
}

func (p *Bounder) resourceOf(c *cursor, now int64) *resourceState {
	if c.res == nil {
		c.res = p.st.resource(p.resourceKey(c.rm.Resource().Attributes()), now)
		if c.res.receivedAs(c.raw, now) {
			p.b.c.resMerged++
		}
	}
	return c.res
}

func (p *Bounder) scopeOf(c *cursor) uint64 {
	if c.scope == 0 {
		c.scope = p.scopeHash(c.sm.Scope())
		if c.raw != 0 {
			// Cumulative streams of two received resources that bound to one stay two streams,
			// whose totals add up in their series (resource.go).
			c.scope = mix64(c.scope+c.raw) | 1
		}
	}
	return c.scope
}
