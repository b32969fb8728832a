package bound

import (
	"context"

	"go.opentelemetry.io/otel/metric"
)

// The telemetry of the rules, the otelcol_processor_gymattrs_* metrics, is declared once, in
// this package's metadata.yaml (mdatagen: internal/metadata), and built by New from the
// TelemetrySettings of the component that runs the rules: each component's own attributes
// (its id, its pipeline) come with its settings.

// zero makes every series of the telemetry exist at 0 before the first batch (each counter,
// points_dropped for each reason, the state gauge): a dashboard or an alert then reads 0,
// "none yet", instead of no data, which looks like a broken pipeline.
func (p *Bounder) zero(ctx context.Context) {
	t := p.tel
	for _, ctr := range []metric.Int64Counter{
		t.ProcessorGymattrsAttributesRemoved, t.ProcessorGymattrsValuesNormalised,
		t.ProcessorGymattrsPointsMerged, t.ProcessorGymattrsPointsOverflowed,
		t.ProcessorGymattrsPointsMismatched, t.ProcessorGymattrsPointsUnmerged,
		t.ProcessorGymattrsResourceValuesCut, t.ProcessorGymattrsResourceAttributesRemoved,
		t.ProcessorGymattrsResourcesMerged,
	} {
		ctr.Add(ctx, 0)
	}
	for r := dropReason(1); r < numDropReasons; r++ {
		t.ProcessorGymattrsPointsDropped.Add(ctx, 0, p.reasonSets[r])
	}
	p.recordStateEntries(ctx, 0)
	p.zeroOther(ctx)
}

// record adds the counts of the batch to the telemetry: the one place where counts meet
// instruments. A count of zero is not added again (zero made every series at New).
func (p *Bounder) record(ctx context.Context) {
	c, t := &p.b.c, p.tel
	add := func(ctr metric.Int64Counter, n int64) {
		if n > 0 {
			ctr.Add(ctx, n)
		}
	}
	add(t.ProcessorGymattrsAttributesRemoved, c.removed)
	add(t.ProcessorGymattrsValuesNormalised, c.normalised)
	add(t.ProcessorGymattrsPointsMerged, c.merged)
	add(t.ProcessorGymattrsPointsOverflowed, c.overflowed)
	add(t.ProcessorGymattrsPointsMismatched, c.mismatched)
	add(t.ProcessorGymattrsPointsUnmerged, c.unmerged)
	add(t.ProcessorGymattrsResourceValuesCut, c.resCut)
	add(t.ProcessorGymattrsResourceAttributesRemoved, c.resRemoved)
	add(t.ProcessorGymattrsResourcesMerged, c.resMerged)
	for r := dropReason(1); r < numDropReasons; r++ {
		if n := c.dropped[r]; n > 0 {
			t.ProcessorGymattrsPointsDropped.Add(ctx, n, p.reasonSets[r])
		}
	}
	p.recordOther(ctx)
	p.recordStateEntries(ctx, int64(p.st.series+p.st.entries))
}

// Shutdown takes p's state out of the state entries and releases the telemetry's
// registrations: a Bounder is shut down with its component.
func (p *Bounder) Shutdown() {
	p.leaveStateTotal(context.Background())
	p.tel.Shutdown()
}
