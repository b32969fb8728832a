package gymliveexporter

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/exporter/gymliveexporter/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/internal/live"
)

type liveExporter struct {
	cfg   *Config
	set   exporter.Settings
	store *live.Store
	tel   *metadata.TelemetryBuilder

	server *http.Server
	addr   string // where the page is served, once started
	stop   chan struct{}
	wg     sync.WaitGroup
}

func newLiveExporter(set exporter.Settings, cfg *Config) (*liveExporter, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &liveExporter{cfg: cfg, set: set, store: live.NewStore(cfg.Limits, nil), tel: tel, stop: make(chan struct{})}, nil
}

var (
	reasonNonFinite  = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "non_finite")))
	reasonOutOfRange = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "out_of_range")))
)

// Capabilities: the exporter reads the batch and keeps none of it.
func (e *liveExporter) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeMetrics copies what the page shows; it never fails and never waits on a client. The
// points it rejects (not finite, out of range) are counted.
func (e *liveExporter) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	r := e.store.Consume(md)
	if r.NonFinite > 0 {
		e.tel.ExporterGymlivePointsRejected.Add(ctx, int64(r.NonFinite), reasonNonFinite)
	}
	if r.OutOfRange > 0 {
		e.tel.ExporterGymlivePointsRejected.Add(ctx, int64(r.OutOfRange), reasonOutOfRange)
	}
	return nil
}

// Start serves the page and starts the charts' ticker.
func (e *liveExporter) Start(ctx context.Context, host component.Host) error {
	self := live.NewSelfMetrics(e.cfg.SelfMetrics, e.cfg.SelfMetricsTimeout)
	// The component cannot learn where service.telemetry serves the collector's metrics: a
	// failed read names the key to set.
	self.Setting = "exporters::" + e.set.ID.String() + "::self_metrics"
	guard := newConnGuard(e.cfg.MaxConnections, e.cfg.ReadHeaderTimeout, e.tel)
	h := guard.Handler(live.NewHandler(e.store, self, e.cfg.MaxConcurrentRequests))
	ln, err := e.cfg.ToListener(ctx)
	if err != nil {
		return err
	}
	srv, err := e.cfg.ToServer(ctx, host.GetExtensions(), e.set.TelemetrySettings, h)
	if err != nil {
		_ = ln.Close()
		return err
	}
	ln = guard.Listener(ln)
	srv.ConnState = guard.ConnState(srv.ConnState)
	srv.ConnContext = guard.ConnContext(srv.ConnContext)
	e.server, e.addr = srv, ln.Addr().String()
	e.set.Logger.Info("gymlive: the live page", zap.String("endpoint", e.addr))
	e.wg.Add(2)
	go func() {
		defer e.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	}()
	go func() {
		defer e.wg.Done()
		t := time.NewTicker(e.cfg.Resolution)
		defer t.Stop()
		for {
			select {
			case <-e.stop:
				return
			case <-t.C:
				e.store.Tick()
			}
		}
	}()
	return nil
}

// Shutdown stops serving (requests in progress finish, within ctx) and the ticker.
func (e *liveExporter) Shutdown(ctx context.Context) error {
	if e.server == nil {
		return nil
	}
	close(e.stop)
	err := e.server.Shutdown(ctx)
	e.wg.Wait()
	e.server = nil // a second Shutdown is a no-op
	e.tel.Shutdown()
	return err
}
