package bound

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

// Telemetry is where a Bounder reports what it did: the instruments of the
// otelcol_processor_gymattrs_* metrics, made by the component that runs the Bounder (from its
// mdatagen TelemetryBuilder, whose metadata.yaml declares them), and its logger. Every
// instrument is required; a nil Logger logs nothing.
type Telemetry struct {
	AttributesRemoved metric.Int64Counter // otelcol_processor_gymattrs_attributes_removed
	ValuesNormalised  metric.Int64Counter // otelcol_processor_gymattrs_values_normalised
	PointsMerged      metric.Int64Counter // otelcol_processor_gymattrs_points_merged
	PointsOverflowed  metric.Int64Counter // otelcol_processor_gymattrs_points_overflowed
	PointsMismatched  metric.Int64Counter // otelcol_processor_gymattrs_points_mismatched
	PointsUnmerged    metric.Int64Counter // otelcol_processor_gymattrs_points_unmerged
	PointsDropped     metric.Int64Counter // otelcol_processor_gymattrs_points_dropped, by reason
	StateEntries      metric.Int64Gauge   // otelcol_processor_gymattrs_state_entries

	UnknownPoints         metric.Int64Counter // otelcol_processor_gymattrs_unknown_points, by instrument
	HistogramBoundsDiffer metric.Int64Counter // otelcol_processor_gymattrs_histogram_bounds_differ, by instrument

	Logger *zap.Logger
}

func (t *Telemetry) check() error {
	var errs []error
	for _, f := range []struct {
		name string
		nil  bool
	}{
		{"AttributesRemoved", t.AttributesRemoved == nil},
		{"ValuesNormalised", t.ValuesNormalised == nil},
		{"PointsMerged", t.PointsMerged == nil},
		{"PointsOverflowed", t.PointsOverflowed == nil},
		{"PointsMismatched", t.PointsMismatched == nil},
		{"PointsUnmerged", t.PointsUnmerged == nil},
		{"PointsDropped", t.PointsDropped == nil},
		{"StateEntries", t.StateEntries == nil},
		{"UnknownPoints", t.UnknownPoints == nil},
		{"HistogramBoundsDiffer", t.HistogramBoundsDiffer == nil},
	} {
		if f.nil {
			errs = append(errs, errors.New("bound: telemetry: no "+f.name+" instrument"))
		}
	}
	return errors.Join(errs...)
}

// zero makes every series of the telemetry exist at 0 before the first batch (each counter,
// points_dropped for each reason, the state gauge): a dashboard or an alert then reads 0,
// "none yet", instead of no data, which looks like a broken pipeline.
func (p *Bounder) zero(ctx context.Context) {
	t := &p.tel
	for _, ctr := range []metric.Int64Counter{
		t.AttributesRemoved, t.ValuesNormalised, t.PointsMerged, t.PointsOverflowed,
		t.PointsMismatched, t.PointsUnmerged,
	} {
		ctr.Add(ctx, 0)
	}
	for r := dropReason(1); r < numDropReasons; r++ {
		t.PointsDropped.Add(ctx, 0, p.reasonSets[r])
	}
	t.StateEntries.Record(ctx, 0)
	p.zeroOther(ctx)
}

// record adds the counts of the batch to the telemetry: the one place where counts meet
// instruments. A count of zero is not added again (zero made every series at New).
func (p *Bounder) record(ctx context.Context) {
	c, t := &p.b.c, &p.tel
	add := func(ctr metric.Int64Counter, n int64) {
		if n > 0 {
			ctr.Add(ctx, n)
		}
	}
	add(t.AttributesRemoved, c.removed)
	add(t.ValuesNormalised, c.normalised)
	add(t.PointsMerged, c.merged)
	add(t.PointsOverflowed, c.overflowed)
	add(t.PointsMismatched, c.mismatched)
	add(t.PointsUnmerged, c.unmerged)
	for r := dropReason(1); r < numDropReasons; r++ {
		if n := c.dropped[r]; n > 0 {
			t.PointsDropped.Add(ctx, n, p.reasonSets[r])
		}
	}
	p.recordOther(ctx)
	t.StateEntries.Record(ctx, int64(p.st.series+p.st.entries))
}
