package gymrollouts

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/connector/gymrollouts/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/flight"
)

// recorder is the one instance of a configuration: the flight recorder, its outputs and the
// loop that collects every collection_interval.
type recorder struct {
	cfg    *Config
	rec    *flight.Recorder
	tel    *metadata.TelemetryBuilder
	logger *zap.Logger

	mu      sync.Mutex
	metrics consumer.Metrics
	logs    consumer.Logs

	last   flight.Stats // the counts already added to the telemetry
	cancel context.CancelFunc
	done   chan struct{}
}

func newRecorder(set connector.Settings, cfg *Config) (*recorder, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &recorder{cfg: cfg, rec: flight.New(cfg.Config, clock.System()), tel: tel, logger: set.Logger}, nil
}

func (r *recorder) setMetrics(next consumer.Metrics) { r.mu.Lock(); r.metrics = next; r.mu.Unlock() }
func (r *recorder) setLogs(next consumer.Logs)       { r.mu.Lock(); r.logs = next; r.mu.Unlock() }

func (r *recorder) hasMetrics() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.metrics != nil
}

func (r *recorder) Start(context.Context, component.Host) error {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go r.loop(ctx)
	return nil
}

func (r *recorder) Shutdown(context.Context) error {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
	r.tel.Shutdown()
	return nil
}

func (r *recorder) loop(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.cfg.CollectionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.collect(ctx)
		}
	}
}

// collect writes the recorder's metrics and log records to the pipelines and its counts to
// the connector's telemetry.
func (r *recorder) collect(ctx context.Context) {
	md, ld := pmetric.NewMetrics(), plog.NewLogs()
	r.rec.Collect(md, ld)
	r.mu.Lock()
	metrics, logs := r.metrics, r.logs
	r.mu.Unlock()
	if metrics != nil && md.DataPointCount() > 0 {
		if err := metrics.ConsumeMetrics(ctx, md); err != nil {
			r.tel.ConnectorGymrolloutsPointsRefused.Add(ctx, int64(md.DataPointCount()))
			r.logger.Warn("gymrollouts: the metrics pipeline refused a collection", zap.Error(err), zap.Int("points", md.DataPointCount()))
		}
	}
	if logs != nil && ld.LogRecordCount() > 0 {
		if err := logs.ConsumeLogs(ctx, ld); err != nil {
			r.tel.ConnectorGymrolloutsLogRecordsRefused.Add(ctx, int64(ld.LogRecordCount()))
			r.logger.Warn("gymrollouts: the logs pipeline refused the records of a collection", zap.Error(err), zap.Int("records", ld.LogRecordCount()))
		}
	}
	s := r.rec.Stats()
	r.tel.ConnectorGymrolloutsRolloutsEvicted.Add(ctx, s.Evicted-r.last.Evicted)
	r.tel.ConnectorGymrolloutsRolloutsExpired.Add(ctx, s.Expired-r.last.Expired)
	r.tel.ConnectorGymrolloutsSpansLate.Add(ctx, s.LateSpans-r.last.LateSpans)
	r.tel.ConnectorGymrolloutsSpansInvalid.Add(ctx, s.InvalidSpans-r.last.InvalidSpans)
	r.tel.ConnectorGymrolloutsLogRecordsDropped.Add(ctx, s.LogsDropped-r.last.LogsDropped)
	r.last = s
}
