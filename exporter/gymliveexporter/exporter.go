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
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/live"
	"github.com/gym-telemetry/otelcol-gym/internal/transport"
)

type liveExporter struct {
	cfg   *Config
	set   exporter.Settings
	store *live.Store

	server *http.Server
	addr   string // where the page is served, once started
	stop   chan struct{}
	wg     sync.WaitGroup
}

func newLiveExporter(set exporter.Settings, cfg *Config) *liveExporter {
	return &liveExporter{cfg: cfg, set: set, store: live.NewStore(cfg.Limits, nil), stop: make(chan struct{})}
}

// Capabilities: the exporter reads the batch and keeps none of it.
func (e *liveExporter) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeMetrics copies what the page shows; it never fails and never waits on a client.
func (e *liveExporter) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	e.store.Consume(md)
	return nil
}

// Start serves the page and starts the charts' ticker.
func (e *liveExporter) Start(ctx context.Context, host component.Host) error {
	self := live.NewSelfMetrics(e.cfg.SelfMetrics, e.cfg.SelfMetricsTimeout)
	h := live.NewHandler(e.store, self, e.cfg.MaxConcurrentRequests)
	ln, err := e.cfg.ToListener(ctx)
	if err != nil {
		return err
	}
	srv, err := e.cfg.ToServer(ctx, host.GetExtensions(), e.set.TelemetrySettings, h)
	if err != nil {
		_ = ln.Close()
		return err
	}
	limit := transport.NewConnLimit(e.cfg.MaxConnections, nil)
	ln = limit.Listener(ln)
	srv.ConnState = limit.ConnState(srv.ConnState)
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
	return err
}
