package gymreceiver

import (
	"context"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/rollouts"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadata"
)

// receiverKey is the attribute that names the component on the collector's own receiver
// metrics (otelcol_receiver_accepted_metric_points{receiver="gym/a"}); the gym receiver's own
// metrics carry it too, so two gym receivers in one collector stay apart.
const receiverKey = "receiver"

// ownTelemetry is what the receiver reports about itself: the collector's standard receiver
// metrics (accepted and refused metric points, through receiverhelper's ObsReport) and its own
// otelcol_receiver_gym_* line counters, each measurement with the receiver's identity.
type ownTelemetry struct {
	tb  *metadata.TelemetryBuilder
	obs *receiverhelper.ObsReport
	id  attribute.KeyValue
	set metric.MeasurementOption // receiver=<id>

	mu      sync.Mutex
	reasons map[string]metric.MeasurementOption // rejected: receiver=<id>, reason=<reason>
	kinds   map[string]metric.MeasurementOption // process errors: receiver=<id>, kind=<kind>
}

func newOwnTelemetry(set receiver.Settings, cfg *Config, tb *metadata.TelemetryBuilder) (*ownTelemetry, error) {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              transportsOf(cfg),
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	id := attribute.String(receiverKey, set.ID.String())
	return &ownTelemetry{
		tb:      tb,
		obs:     obs,
		id:      id,
		set:     metric.WithAttributeSet(attribute.NewSet(id)),
		reasons: map[string]metric.MeasurementOption{},
		kinds:   map[string]metric.MeasurementOption{},
	}, nil
}

// transportsOf names the enabled transports (http, tcp, unix, file), joined by commas in that
// order: the receiver aggregates every transport into the same cumulative state, so the points
// it sends on come from all of them at once.
func transportsOf(cfg *Config) string {
	var ts []string
	if cfg.HTTP.Get() != nil {
		ts = append(ts, "http")
	}
	if sc := cfg.Stream.Get(); sc != nil {
		ts = append(ts, string(sc.Transport))
	}
	if cfg.Files.Get() != nil {
		ts = append(ts, "file")
	}
	if cfg.Rollouts.Get() != nil {
		ts = append(ts, "rollout_files")
	}
	return strings.Join(ts, ",")
}

// lineReasons are every reason a line is rejected for: the decoder's, the transports'
// partial_line and the aggregator's too_many_resources (docs/receiver.md, Bad input).
var lineReasons = append(append([]string{}, events.Reasons...), ingest.ReasonPartialLine, aggregate.ReasonTooManyResources)

// rowReasons are every reason a row of Gym's run files is rejected for.
var rowReasons = append(append([]string{}, rollouts.Reasons...), ingest.ReasonPartialLine)

// zero makes every series of the receiver's own metrics that its configuration can move
// exist at 0 from the start, each reason and kind included: a dashboard or an alert then
// reads 0 ("no rejections") instead of no data. The standard accepted/refused metric points
// come from an empty operation of receiverhelper's ObsReport (0 points, no error), the only
// way to reach its instruments.
func (s *ownTelemetry) zero(ctx context.Context, cfg *Config, checkpoints bool) {
	lines := cfg.HTTP.Get() != nil || cfg.Stream.Get() != nil || cfg.Files.Get() != nil
	if lines {
		s.tb.ReceiverGymLinesAccepted.Add(ctx, 0, s.set)
		s.tb.ReceiverGymLinesUnknown.Add(ctx, 0, s.set)
		for _, reason := range lineReasons {
			s.tb.ReceiverGymLinesRejected.Add(ctx, 0, s.with(s.reasons, "reason", reason))
		}
	}
	if cfg.Rollouts.Get() != nil {
		s.tb.ReceiverGymRolloutRowsAccepted.Add(ctx, 0, s.set)
		for _, reason := range rowReasons {
			s.tb.ReceiverGymRolloutRowsRejected.Add(ctx, 0, s.with(s.reasons, "reason", reason))
		}
	}
	s.tb.ReceiverGymMeasurementsOverflowed.Add(ctx, 0, s.set)
	s.tb.ReceiverGymResourceValuesCut.Add(ctx, 0, s.set)
	if cfg.HTTP.Get() != nil {
		s.tb.ReceiverGymHTTPBodiesTooSlow.Add(ctx, 0, s.set)
		s.tb.ReceiverGymHTTPMaxConnectionsReached.Add(ctx, 0, s.set)
	}
	if cfg.Stream.Get() != nil {
		s.tb.ReceiverGymStreamConnectionsRefused.Add(ctx, 0, s.set)
		s.tb.ReceiverGymStreamConnectionsIdleClosed.Add(ctx, 0, s.set)
	}
	if checkpoints {
		s.tb.ReceiverGymCheckpointFailures.Add(ctx, 0, s.set)
		s.tb.ReceiverGymCheckpointDiscards.Add(ctx, 0, s.set)
	}
	if cfg.Process.Enabled {
		for _, kind := range procstats.Kinds {
			s.tb.ReceiverGymProcessErrors.Add(ctx, 0, s.with(s.kinds, "kind", string(kind)))
		}
		s.tb.ReceiverGymProcessOtherHost.Add(ctx, 0, s.set)
	}
	s.obs.EndMetricsOp(s.obs.StartMetricsOp(ctx), metadata.Type.String(), 0, nil)
}

// with returns the measurement option of receiver=<id> plus key=value, built once per value.
func (s *ownTelemetry) with(cache map[string]metric.MeasurementOption, key, value string) metric.MeasurementOption {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := cache[value]
	if !ok {
		o = metric.WithAttributeSet(attribute.NewSet(s.id, attribute.String(key, value)))
		cache[value] = o
	}
	return o
}

// consume sends one collection on and counts its data points as accepted, or as refused when
// the next consumer fails (the next collection carries the same cumulative totals).
func (s *ownTelemetry) consume(ctx context.Context, next consumer.Metrics, md pmetric.Metrics) error {
	ctx = s.obs.StartMetricsOp(ctx)
	points := md.DataPointCount()
	err := next.ConsumeMetrics(ctx, md)
	s.obs.EndMetricsOp(ctx, metadata.Type.String(), points, err)
	return err
}

func (s *ownTelemetry) recordStream(ctx context.Context, st *ingest.Stats) {
	s.record(ctx, st, s.tb.ReceiverGymLinesAccepted, s.tb.ReceiverGymLinesUnknown, s.tb.ReceiverGymLinesRejected)
}

// spans counts the spans of the run files' rollout evidence handed on, and dropped.
func (s *ownTelemetry) spans(ctx context.Context, sent, dropped int64) {
	if sent > 0 {
		s.tb.ReceiverGymRolloutSpansSent.Add(ctx, sent, s.set)
	}
	if dropped > 0 {
		s.tb.ReceiverGymRolloutSpansDropped.Add(ctx, dropped, s.set)
	}
}

// recordRows counts the rows of Gym's run files (the rollouts source): a row is never unknown.
func (s *ownTelemetry) recordRows(ctx context.Context, st *ingest.Stats) {
	s.record(ctx, st, s.tb.ReceiverGymRolloutRowsAccepted, nil, s.tb.ReceiverGymRolloutRowsRejected)
}

// record adds a source's counts to its counters (of lines or of rows; unknown nil: none) and
// its measurements folded into overflow series to the receiver's one counter of them.
func (s *ownTelemetry) record(ctx context.Context, st *ingest.Stats, accepted, unknown, rejected metric.Int64Counter) {
	if st.Accepted > 0 {
		accepted.Add(ctx, st.Accepted, s.set)
	}
	if unknown != nil && st.Unknown > 0 {
		unknown.Add(ctx, st.Unknown, s.set)
	}
	for reason, n := range st.Rejected {
		if n > 0 {
			rejected.Add(ctx, n, s.with(s.reasons, "reason", reason))
		}
	}
	if st.Overflowed > 0 {
		s.tb.ReceiverGymMeasurementsOverflowed.Add(ctx, st.Overflowed, s.set)
	}
	if st.ResourceValuesCut > 0 {
		s.tb.ReceiverGymResourceValuesCut.Add(ctx, st.ResourceValuesCut, s.set)
	}
}

func (s *ownTelemetry) httpBodyTooSlow(ctx context.Context) {
	s.tb.ReceiverGymHTTPBodiesTooSlow.Add(ctx, 1, s.set)
}

// fileRefused counts a path a source's globs match that it does not follow.
func (s *ownTelemetry) fileRefused(source string) func(path, reason string) {
	return func(_, reason string) {
		s.tb.ReceiverGymFilesRefused.Add(context.Background(), 1, s.withSource(source, reason))
	}
}

// withSource is the measurement option of receiver=<id>, source and reason.
func (s *ownTelemetry) withSource(source, reason string) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(s.id, attribute.String("source", source), attribute.String("reason", reason)))
}

func (s *ownTelemetry) checkpointDiscarded(ctx context.Context) {
	s.tb.ReceiverGymCheckpointDiscards.Add(ctx, 1, s.set)
}

func (s *ownTelemetry) checkpointFailed(ctx context.Context) {
	s.tb.ReceiverGymCheckpointFailures.Add(ctx, 1, s.set)
}

func (s *ownTelemetry) checkpointSize(ctx context.Context, bytes int) {
	s.tb.ReceiverGymCheckpointSize.Record(ctx, int64(bytes), s.set)
}

func (s *ownTelemetry) httpMaxConnectionsReached(ctx context.Context) {
	s.tb.ReceiverGymHTTPMaxConnectionsReached.Add(ctx, 1, s.set)
}

func (s *ownTelemetry) streamRefused(ctx context.Context) {
	s.tb.ReceiverGymStreamConnectionsRefused.Add(ctx, 1, s.set)
}

func (s *ownTelemetry) streamIdleClosed(ctx context.Context) {
	s.tb.ReceiverGymStreamConnectionsIdleClosed.Add(ctx, 1, s.set)
}

func (s *ownTelemetry) processErrors(ctx context.Context, kind string, n int64) {
	s.tb.ReceiverGymProcessErrors.Add(ctx, n, s.with(s.kinds, "kind", kind))
}

func (s *ownTelemetry) processOtherHost(ctx context.Context, n int64) {
	s.tb.ReceiverGymProcessOtherHost.Add(ctx, n, s.set)
}

// filesWaiting records what waits past files.max_files (source files) or the runs followed at
// once (rollouts) at the source's last poll.
func (s *ownTelemetry) filesWaiting(source string) func(n int) {
	o := metric.WithAttributeSet(attribute.NewSet(s.id, attribute.String("source", source)))
	return func(n int) { s.tb.ReceiverGymFilesWaiting.Record(context.Background(), int64(n), o) }
}

func (s *ownTelemetry) resources(ctx context.Context, n int64) {
	s.tb.ReceiverGymResources.Record(ctx, n, s.set)
}
