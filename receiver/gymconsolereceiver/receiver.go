package gymconsolereceiver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/bound"
	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
	"github.com/gym-telemetry/otelcol-gym/internal/console"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
	"github.com/gym-telemetry/otelcol-gym/internal/transport"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymconsolereceiver/internal/metadata"
)

// Warnings of rejected records and refused data: at most warnBurst per warnPeriod.
const (
	warnBurst  = 10
	warnPeriod = 10 * time.Second
)

// consoleReceiver is the lifecycle: it owns the transports, and is the sink of the console
// streams: metrics through the gymattrs rules, traces and logs to their pipelines.
type consoleReceiver struct {
	cfg       *Config
	set       receiver.Settings
	telemetry *metadata.TelemetryBuilder
	obsrecv   *receiverhelper.ObsReport
	warn      *ratelog.Logger

	bounder *bound.Bounder // the gymattrs rules, in front of the metrics pipeline
	metrics consumer.Metrics
	traces  consumer.Traces
	logs    consumer.Logs
	files   *transport.FileTailer
	stream  *transport.StreamServer
	store   storage.Client
}

func newReceiver(set receiver.Settings, cfg *Config) (*consoleReceiver, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	// The receiver's standard accepted/refused counts (otelcol_receiver_accepted_spans, ...).
	obsrecv, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{ReceiverID: set.ID, Transport: "console", ReceiverCreateSettings: set})
	if err != nil {
		return nil, err
	}
	return &consoleReceiver{cfg: cfg, set: set, telemetry: tb, obsrecv: obsrecv, warn: ratelog.NewLogger(set.Logger, warnBurst, warnPeriod)}, nil
}

// setMetrics puts the gymattrs rules (internal/bound), with this receiver's gymattrs
// configuration, in front of the metrics pipeline: the same engine and state rules as the
// gymattrs processor's, reporting their otelcol_processor_gymattrs_* metrics (declared in
// internal/bound) through this receiver's telemetry settings.
func (r *consoleReceiver) setMetrics(next consumer.Metrics) error {
	b, err := bound.New(&r.cfg.Gymattrs, r.set.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("gymattrs: %w", err)
	}
	r.bounder, r.metrics = b, next
	return nil
}

// Start starts the sources. The shared component (factory.go) calls it once, whichever
// signal's pipeline starts first.
func (r *consoleReceiver) Start(ctx context.Context, host component.Host) error {
	max := r.cfg.MaxLineBytes
	if sc := r.cfg.Stream.Get(); sc != nil {
		mode, _ := sc.Mode() // validated
		network := string(sc.Transport)
		r.stream = transport.NewStreamServer(func(network string) transport.LineDecoder {
			return console.NewLineDecoder(network, max, r, r.warn)
		}, transport.StreamOptions{
			Network: network, Endpoint: sc.Endpoint, SocketMode: mode,
			MaxLineBytes: max, QuietTimeout: transport.StreamQuietTimeout, DrainTimeout: transport.DefaultDrainTimeout,
			MaxConnections: sc.MaxConnections, IdleTimeout: sc.IdleTimeout,
			OnRefused: func() {
				r.telemetry.ReceiverGymConsoleStreamConnectionsRefused.Add(context.Background(), 1)
			},
			OnIdleClosed: func() {
				r.telemetry.ReceiverGymConsoleStreamConnectionsIdleClosed.Add(context.Background(), 1)
			},
		}, r.record, r.set.Logger)
		if err := r.stream.Start(ctx); err != nil {
			return err
		}
		r.set.Logger.Info("gym_console receiver listening", zap.String("transport", network), zap.String("endpoint", r.stream.Addr().String()))
	}
	if fc := r.cfg.Files.Get(); fc != nil {
		var store transport.OffsetStore
		if fc.Storage != nil {
			client, err := checkpoint.Client(ctx, host, "files.storage", *fc.Storage, r.set.ID, "files")
			if err != nil {
				return err
			}
			r.store = client
			store = checkpoint.KeyStore{Client: client, Key: offsetsKey}
		}
		opts := fc.Options()
		opts.MaxLineBytes, opts.Store = max, store
		opts.Refused = func(_, reason string) {
			r.telemetry.ReceiverGymConsoleFilesRefused.Add(context.Background(), 1, metric.WithAttributes(attribute.String("reason", reason)))
		}
		r.files = transport.NewFileTailer(func(path string) transport.LineDecoder {
			return console.NewLineDecoder(path, max, r, r.warn)
		}, opts, r.record, r.set.Logger)
		if err := r.files.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown stops the sources, after they handed on what they had read. The shared component
// calls it once, and then forgets the receiver.
func (r *consoleReceiver) Shutdown(ctx context.Context) error {
	var err error
	if r.stream != nil {
		err = errors.Join(err, r.stream.Shutdown(ctx))
	}
	if r.files != nil {
		err = errors.Join(err, r.files.Shutdown(ctx))
	}
	if r.store != nil {
		err = errors.Join(err, r.store.Close(ctx))
	}
	if r.bounder != nil {
		r.bounder.Shutdown()
	}
	r.telemetry.Shutdown()
	return err
}

// Takes, Metrics, Traces and Logs are the console streams' sink: a signal that no pipeline
// uses is dropped before it is decoded, and counted nowhere. A pipeline that refuses data
// (memory_limiter, a full queue) loses it: a file is not read again.
func (r *consoleReceiver) Takes(k console.Kind) bool {
	switch k {
	case console.Metrics:
		return r.metrics != nil
	case console.Span:
		return r.traces != nil
	case console.Log:
		return r.logs != nil
	}
	return false
}

func (r *consoleReceiver) Metrics(md pmetric.Metrics) {
	if r.metrics == nil {
		return // no metrics pipeline uses this receiver
	}
	ctx := r.obsrecv.StartMetricsOp(context.Background())
	n := md.DataPointCount()
	md, err := r.bounder.Process(ctx, md)
	if err == nil {
		err = r.metrics.ConsumeMetrics(ctx, md)
	}
	r.obsrecv.EndMetricsOp(ctx, "console", n, err)
	if err != nil {
		r.warn.Warn("gym_console: the metrics pipeline refused a batch", zap.Error(err))
	}
}

func (r *consoleReceiver) Traces(td ptrace.Traces) {
	if r.traces != nil {
		deliver(r, td, td.SpanCount(), "spans", r.obsrecv.StartTracesOp, r.traces.ConsumeTraces, r.obsrecv.EndTracesOp)
	}
}

func (r *consoleReceiver) Logs(ld plog.Logs) {
	if r.logs != nil {
		deliver(r, ld, ld.LogRecordCount(), "records", r.obsrecv.StartLogsOp, r.logs.ConsumeLogs, r.obsrecv.EndLogsOp)
	}
}

// deliver hands n items (spans, records) to the next consumer inside the receiver's own
// telemetry's operation, and logs a refusal.
func deliver[T any](r *consoleReceiver, data T, n int, items string,
	start func(context.Context) context.Context,
	consume func(context.Context, T) error,
	end func(context.Context, string, int, error),
) {
	ctx := start(context.Background())
	err := consume(ctx, data)
	end(ctx, "console", n, err)
	if err != nil {
		r.warn.Warn("gym_console: the next pipeline refused "+items, zap.Int(items, n), zap.Error(err))
	}
}

// record adds a stream's counts to the receiver's own telemetry.
func (r *consoleReceiver) record(st *ingest.Stats) {
	ctx := context.Background()
	if st.Accepted > 0 {
		r.telemetry.ReceiverGymConsoleRecordsAccepted.Add(ctx, st.Accepted)
	}
	if st.Unknown > 0 {
		r.telemetry.ReceiverGymConsoleLinesSkipped.Add(ctx, st.Unknown)
	}
	for reason, n := range st.Rejected {
		if n > 0 {
			r.telemetry.ReceiverGymConsoleRecordsRejected.Add(ctx, n, metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason))))
		}
	}
}

// offsetsKey is where the files' offsets are kept in the storage client named "files".
const offsetsKey = "file_offsets"
