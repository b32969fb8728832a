package gymrollouts

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/connector/gymrollouts/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
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
	id     component.ID
	store  storage.Client // nil without storage
	cancel context.CancelFunc
	done   chan struct{}
}

func newRecorder(set connector.Settings, cfg *Config) (*recorder, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &recorder{cfg: cfg, rec: flight.New(cfg.Config, clock.System()), tel: tel, logger: set.Logger, id: set.ID}, nil
}

func (r *recorder) setMetrics(next consumer.Metrics) { r.mu.Lock(); r.metrics = next; r.mu.Unlock() }
func (r *recorder) setLogs(next consumer.Logs)       { r.mu.Lock(); r.logs = next; r.mu.Unlock() }

func (r *recorder) hasMetrics() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.metrics != nil
}

func (r *recorder) Start(ctx context.Context, host component.Host) error {
	if err := r.restore(ctx, host); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go r.loop(ctx)
	return nil
}

func (r *recorder) Shutdown(ctx context.Context) error {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
	r.tel.Shutdown()
	if r.store != nil {
		r.rec.Detach() // the time of the stop: the next process counts silence from it
		return r.store.Close(ctx)
	}
	return nil
}

// restore starts the recorder from the state its storage kept, and keeps it there. A state
// that cannot be read is reported and left behind: the recorder starts empty, as without
// storage, rather than not at all.
func (r *recorder) restore(ctx context.Context, host component.Host) error {
	if r.cfg.Storage == nil {
		return nil
	}
	client, err := checkpoint.Client(ctx, host, "storage", *r.cfg.Storage, r.id, "", component.KindConnector)
	if err != nil {
		return err
	}
	r.store = client
	got, err := r.rec.Restore(ctx, client)
	if err != nil {
		r.logger.Warn("gymrollouts: the saved rollouts cannot be read; starting without them", zap.Error(err))
		return nil
	}
	if got.Damaged > 0 || got.Dropped > 0 {
		r.logger.Warn("gymrollouts: some saved rollouts were left out", zap.Int("damaged", got.Damaged), zap.Int("over_max_rollouts", got.Dropped))
	}
	r.logger.Info("gymrollouts: restored the rollouts kept before the restart", zap.Int("rollouts", got.Rollouts))
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
	if n := s.SaveFailed - r.last.SaveFailed; n > 0 {
		r.logger.Warn("gymrollouts: the rollouts could not be saved to storage; a restart may lose them", zap.Int64("failed_writes", n), zap.Error(r.rec.SaveError()))
	}
	r.last = s
}
