package gymreceiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/prices"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/rollouts"
	"github.com/gym-telemetry/otelcol-gym/internal/transport"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadata"
)

// gymReceiver is the lifecycle: it owns the aggregator, the transports and the collection loop.
type gymReceiver struct {
	cfg       *Config
	set       receiver.Settings
	next      consumer.Metrics // nil: no metrics pipeline has the receiver
	traces    consumer.Traces  // nil: no traces pipeline has it
	agg       *aggregate.Aggregator
	telemetry *metadata.TelemetryBuilder
	self      *ownTelemetry // the receiver's own metrics, with its identity (owntelemetry.go)
	scope     aggregate.Scope

	procs      *procstats.Scraper
	procWarned map[procstats.ErrorKind]bool
	server     *http.Server
	handler    *transport.HTTPHandler
	stream     *transport.StreamServer
	files      *transport.FileTailer
	rollouts   *rollouts.Source
	prices     *prices.Series // nil: no price table configured
	store      storage.Client
	ckpt       *checkpoint.Checkpointer // nil without storage
	outage     *checkpointOutage        // reports the saves of ckpt that fail
	stop       chan struct{}
	wg         sync.WaitGroup
}

func newGymReceiver(set receiver.Settings, cfg *Config, next consumer.Metrics) (*gymReceiver, error) {
	reg, err := normalize.NewRegistry(cfg.FailureKinds, cfg.HealthChecks, cfg.IgnoredHealthChecks)
	if err != nil {
		return nil, err
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	self, err := newOwnTelemetry(set, cfg, tb)
	if err != nil {
		return nil, err
	}
	var scraper *procstats.Scraper
	var hostname string
	if cfg.Process.Enabled {
		src := newProcessSource()
		if hostname, err = src.Hostname(); err != nil {
			return nil, fmt.Errorf("process: reading this host's name: %w", err)
		}
		scraper, err = procstats.NewScraper(src, procstats.Options{
			Include:      cfg.Process.Include,
			IncludeSelf:  cfg.Process.IncludeSelf,
			MaxProcesses: cfg.Process.MaxProcesses,
		})
		if err != nil {
			return nil, err
		}
	}
	var series *prices.Series
	if cfg.Prices != "" {
		table, err := prices.Load(cfg.Prices)
		if err != nil {
			return nil, err
		}
		series = prices.NewSeries(table, cfg.Prices, set.Resource, metadata.ScopeName, set.BuildInfo.Version)
		set.Logger.Info("gym receiver: exporting the price table", zap.String("prices", cfg.Prices), zap.Int("models", len(table.Models())))
	}
	return &gymReceiver{
		prices:     series,
		procs:      scraper,
		procWarned: map[procstats.ErrorKind]bool{},
		cfg:        cfg,
		set:        set,
		next:       next,
		telemetry:  tb,
		self:       self,
		outage:     newCheckpointOutage(set.Logger, self.checkpointFailed, time.Now),
		scope:      aggregate.Scope{Name: metadata.ScopeName, Version: set.BuildInfo.Version},
		agg: aggregate.NewAggregator(aggregate.AggregatorConfig{
			CardinalityLimit: cfg.CardinalityLimit,
			ExpireAfter:      cfg.ExpireAfter,
			Registry:         reg,
			MaxResources:     cfg.MaxResources,
			TrackPIDs:        cfg.Process.Enabled,
			Hostname:         hostname,
		}),
	}, nil
}

func (r *gymReceiver) Start(ctx context.Context, host component.Host) error {
	r.stop = make(chan struct{})
	if err := r.startCheckpoints(ctx, host); err != nil {
		return err
	}
	r.outage.start(host)
	// Before any transport runs: the series are there, at 0 (or restored), from the start.
	r.self.zero(ctx, r.cfg, r.ckpt != nil)
	r.self.resources(ctx, int64(r.agg.Len()))
	if hc := r.cfg.HTTP.Get(); hc != nil {
		opts := transport.HTTPOptions{
			MaxLineBytes:  r.cfg.MaxLineBytes,
			MaxConcurrent: 4 * runtime.GOMAXPROCS(0),
			Wait:          time.Second,
			MaxBodyBytes:  hc.MaxRequestBodySize,
			MinBodyRate:   transport.DefaultMinBodyRate,
			BodyGrace:     transport.DefaultBodyGrace,
			ReadTimeout:   hc.ReadTimeout,
			OnTooSlow:     func() { r.self.httpBodyTooSlow(context.Background()) },
			Logger:        r.set.Logger,
		}
		if r.cfg.CheckpointBeforeAnswer && r.ckpt != nil {
			opts.Durable = r.syncCheckpoint
		}
		h := transport.NewHTTPHandler(r.bodyDecoders(), opts, r.recordStream)
		ln, err := hc.ToListener(ctx)
		if err != nil {
			return err
		}
		srv, err := hc.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings, h, confighttp.WithErrorHandler(jsonError))
		if err != nil {
			_ = ln.Close()
			return err
		}
		limit := transport.NewConnLimit(hc.MaxConnections, func() { r.self.httpMaxConnectionsReached(context.Background()) })
		ln = limit.Listener(ln)
		srv.ConnState = limit.ConnState(srv.ConnState)
		r.server = srv
		r.handler = h
		r.set.Logger.Info("gym receiver listening", zap.String("transport", "http"), zap.String("endpoint", ln.Addr().String()+transport.EventsPath))
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
			}
		}()
	}
	if sc := r.cfg.Stream.Get(); sc != nil {
		mode, _ := sc.Mode() // validated
		network := string(sc.Transport)
		r.stream = transport.NewStreamServer(r.connDecoders(), transport.StreamOptions{
			Network:        network,
			Endpoint:       sc.Endpoint,
			SocketMode:     mode,
			MaxLineBytes:   r.cfg.MaxLineBytes,
			QuietTimeout:   transport.StreamQuietTimeout,
			DrainTimeout:   r.cfg.DrainTimeout,
			MaxConnections: sc.MaxConnections,
			IdleTimeout:    sc.IdleTimeout,
			OnRefused:      func() { r.self.streamRefused(context.Background()) },
			OnIdleClosed:   func() { r.self.streamIdleClosed(context.Background()) },
		}, r.recordStream, r.set.Logger)
		if err := r.stream.Start(ctx); err != nil {
			return err
		}
		r.set.Logger.Info("gym receiver listening", zap.String("transport", network), zap.String("endpoint", r.stream.Addr().String()))
	}
	if fc := r.cfg.Files.Get(); fc != nil {
		opts := fc.Options()
		opts.MaxLineBytes, opts.Store = r.cfg.MaxLineBytes, r.offsets(filesSection)
		opts.Refused, opts.Waiting = r.self.fileRefused("files"), r.self.filesWaiting("files")
		r.files = transport.NewFileTailer(r.fileDecoders(), opts, r.recordStream, r.set.Logger)
		if err := r.files.Start(ctx); err != nil {
			return err
		}
	}
	if rc := r.cfg.Rollouts.Get(); rc != nil {
		r.rollouts = rollouts.NewSource(r.agg.NewSink, rollouts.SourceOptions{
			Include:          rc.Include,
			Exclude:          rc.Exclude,
			StartAtBeginning: rc.Beginning(),
			PollInterval:     rc.PollInterval,
			MaxLineBytes:     rc.MaxLineBytes,
			Store:            r.offsets(rolloutsSection),
			Refused:          r.self.fileRefused("rollouts"),
			Waiting:          r.self.filesWaiting("rollouts"),
			Traces:           r.tracesOptions(rc),
		}, r.recordRows, r.set.Logger)
		if err := r.rollouts.Start(ctx); err != nil {
			return err
		}
	}
	r.wg.Add(1)
	go r.collectLoop()
	if r.procs != nil {
		r.wg.Add(1)
		go r.processLoop()
	}
	return nil
}

// The gym events decoder, injected into each transport: one events.LineDecoder per request
// body (pooled), connection or file, on the default resource of its source, whose events go
// to an aggregator sink.

func (r *gymReceiver) bodyDecoders() transport.NewBodyDecoder {
	return func(source string) transport.BodyDecoder {
		return events.NewLineDecoder(r.cfg.MaxLineBytes, r.agg.NewSink, events.DefaultResource(source, ""))
	}
}

func (r *gymReceiver) connDecoders() transport.NewDecoder {
	return func(network string) transport.LineDecoder {
		return events.NewLineDecoder(r.cfg.MaxLineBytes, r.agg.NewSink, events.DefaultResource(network, ""))
	}
}

// fileDecoders: a file's decoder keeps its resource line, which the file's offsets keep so
// that a resumed file goes on under its resource.
func (r *gymReceiver) fileDecoders() transport.NewDecoder {
	return func(path string) transport.LineDecoder {
		d := events.NewLineDecoder(r.cfg.MaxLineBytes, r.agg.NewSink, events.DefaultResource("file", path))
		d.KeepResourceLine()
		return d
	}
}

// jsonError answers the errors confighttp raises before our handler runs (a broken gzip body,
// an unsupported Content-Encoding) in the same JSON shape as the handler's own errors.
func jsonError(w http.ResponseWriter, _ *http.Request, msg string, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"error": msg})
	_, _ = w.Write(append(b, '\n'))
}

// newProcessSource is where process stats come from (a fake in tests).
var newProcessSource = procstats.NewHostSource

func (r *gymReceiver) processLoop() {
	defer r.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-r.stop
		cancel()
	}()
	t := time.NewTicker(r.cfg.Process.CollectionInterval)
	defer t.Stop()
	for {
		r.scrapeProcesses(ctx)
		select {
		case <-t.C:
		case <-r.stop:
			return
		}
	}
}

// scrapeProcesses reads the announced (and included) processes once. Errors name the process
// and are counted; none stops the others.
func (r *gymReceiver) scrapeProcesses(ctx context.Context) {
	res, err := r.procs.Scrape(ctx, r.agg.Announced())
	if err != nil {
		return // cancelled: shutting down
	}
	r.agg.ApplyProcesses(&res)
	for _, kind := range procstats.Kinds {
		if n := res.Counts.Of(kind); n > 0 {
			r.self.processErrors(ctx, string(kind), int64(n))
		}
	}
	for _, e := range res.Errors {
		kind := procstats.Classify(e)
		if !r.procWarned[kind] {
			r.procWarned[kind] = true // once per kind, then at debug level: the counter tells the rest
			r.set.Logger.Warn("process stats: cannot read a process (further errors of this kind are logged at debug level)", zap.Error(e))
			continue
		}
		r.set.Logger.Debug("process stats: cannot read a process", zap.Error(e))
	}
	if n := r.agg.TakeOtherHost(); n > 0 {
		r.self.processOtherHost(ctx, n)
	}
}

// offsets is the store of a source's offsets: its section of the checkpoint (nil without
// storage). The source joins it when it is made: each checkpoint pulls the offsets of what the
// source applied, under its lock.
func (r *gymReceiver) offsets(section string) transport.OffsetStore {
	if r.ckpt == nil {
		return nil
	}
	return r.ckpt.Section(section)
}

// filesSection and rolloutsSection name the offsets of the files and rollouts sources in the
// checkpoint.
const (
	filesSection    = "files"
	rolloutsSection = "rollouts"
)

// legacyFiles is where the files transport kept its offsets alone before checkpoints: read
// once, when there is no checkpoint yet.
var legacyFiles = checkpoint.Legacy{Section: filesSection, Client: "files", Key: "file_offsets"}

// startCheckpoints opens the storage and restores the last checkpoint, before any transport
// runs.
func (r *gymReceiver) startCheckpoints(ctx context.Context, host component.Host) error {
	id, key := r.cfg.storageKey()
	if id == nil {
		return nil
	}
	client, err := checkpoint.Client(ctx, host, key, *id, r.set.ID, "")
	if err != nil {
		return err
	}
	r.store = client
	r.ckpt = checkpoint.New(client, r.agg)
	restored, err := r.ckpt.Restore(ctx)
	if err != nil {
		// Starting empty beats not starting (a crash loop under an orchestrator): the series
		// start afresh, files follow start_at; the next checkpoint saved replaces the record.
		r.self.checkpointDiscarded(ctx)
		r.set.Logger.Error("gym receiver: the stored checkpoint cannot be read and is discarded; the series start afresh and the files are read from start_at",
			zap.String("storage", id.String()), zap.Error(err))
		return nil
	}
	if restored {
		r.set.Logger.Info("gym receiver: restored the checkpoint", zap.Int("resources", r.agg.Len()))
		return nil
	}
	if r.cfg.Files.HasValue() {
		return r.ckpt.RestoreLegacy(ctx, host, key, *id, r.set.ID, legacyFiles, r.set.Logger)
	}
	return nil
}

// syncCheckpoint is the HTTP transport's per-request durability (checkpoint_before_answer).
func (r *gymReceiver) syncCheckpoint(ctx context.Context) {
	if err := r.ckpt.Sync(ctx); err != nil {
		// The body is applied and answered: it may not survive a crash.
		r.outage.failed(context.Background(), "before_answer", err)
	} else {
		r.outage.saved()
	}
}

func (r *gymReceiver) collectLoop() {
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.CollectionInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.collect(context.Background())
		case <-r.stop:
			return
		}
	}
}

// collect sends the cumulative state on. An export that fails loses nothing: the next
// collection carries the same totals.
//
// With storage, the state of the collection is checkpointed first, in the same pass as the
// export is built: a crash after the export restores at least what was exported.
func (r *gymReceiver) collect(ctx context.Context) {
	var md pmetric.Metrics
	if r.ckpt != nil {
		var err error
		var size int
		start := time.Now()
		size, err = r.ckpt.Collect(ctx, func(state *[]byte) { md = r.agg.CollectWithState(r.scope, state) })
		if err != nil {
			r.outage.failed(ctx, "collection", err)
		} else {
			r.outage.saved()
			r.self.checkpointSize(ctx, size)
			r.set.Logger.Debug("gym receiver: checkpoint saved", zap.Int("bytes", size), zap.Duration("took", time.Since(start)))
		}
	} else {
		md = r.agg.Collect(r.scope)
	}
	r.self.resources(ctx, int64(r.agg.Len()))
	if r.prices != nil {
		r.prices.AppendTo(md, pcommon.NewTimestampFromTime(time.Now()))
	}
	if md.ResourceMetrics().Len() == 0 || r.next == nil {
		return
	}
	if err := r.self.consume(ctx, r.next, md); err != nil {
		r.set.Logger.Warn("sending gym metrics failed; the next collection carries them", zap.Error(err))
	}
}

func (r *gymReceiver) recordStream(st *ingest.Stats) {
	r.self.recordStream(context.Background(), st)
}

// recordRows counts the rows of Gym's run files.
func (r *gymReceiver) recordRows(st *ingest.Stats) {
	r.self.recordRows(context.Background(), st)
}

// Shutdown stops accepting, lets the bodies in flight finish and reads what the stream
// connections had sent, both for at most drain_timeout, and sends what was aggregated once
// more, so a graceful stop loses nothing that was accepted, and ends in bounded time.
func (r *gymReceiver) Shutdown(ctx context.Context) error {
	var errs []error
	var drain sync.WaitGroup
	var httpErr, streamErr error
	if r.server != nil {
		drain.Go(func() { httpErr = r.shutdownHTTP(ctx) })
	}
	if r.stream != nil {
		drain.Go(func() { streamErr = r.stream.Shutdown(ctx) })
	}
	drain.Wait()
	errs = append(errs, httpErr, streamErr)
	if r.files != nil {
		errs = append(errs, r.files.Shutdown(ctx))
	}
	if r.rollouts != nil {
		errs = append(errs, r.rollouts.Shutdown(ctx))
	}
	if r.stop != nil {
		close(r.stop)
		r.wg.Wait()
		r.collect(ctx) // checkpoint (everything read), then the last export
	}
	if r.store != nil {
		errs = append(errs, r.store.Close(ctx))
	}
	r.telemetry.Shutdown()
	return errors.Join(errs...)
}

// shutdownHTTP lets the bodies in flight finish for at most drain_timeout, then closes their
// connections (a body cut short is not applied: its sender retries it whole) and waits for
// the handlers to return.
func (r *gymReceiver) shutdownHTTP(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, r.cfg.DrainTimeout)
	defer cancel()
	err := r.server.Shutdown(dctx)
	if err == nil {
		return nil
	}
	err = r.server.Close()
	r.handler.Wait()
	return err
}
