package gymreceiver

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.uber.org/zap"
)

// outageReminder is how often a checkpoint outage is logged again while it lasts: a full or
// read-only disk fails every save (each collection, and each request with
// checkpoint_before_answer), and one log line per save would flood the log the operator reads.
const outageReminder = time.Minute

// checkpointOutage reports the saves of the checkpoint that fail: the first failure of an
// outage is logged as an error and reported as the receiver's recoverable-error status, then a
// reminder at most every outageReminder with the count and the time since the last save, and
// the first save that works again is logged with the outage's length and reports the receiver
// OK. Every failure is counted (otelcol_receiver_gym_checkpoint_failures). Collection and export
// go on throughout: what a failed save risks is only what a crash would lose before the next
// one (docs/receiver.md, Faults).
type checkpointOutage struct {
	logger *zap.Logger
	count  func(context.Context)
	now    func() time.Time

	mu        sync.Mutex
	host      component.Host // nil before Start
	failures  int            // since the last save that worked; 0: no outage
	lastSaved time.Time      // the last save that worked (or Start)
	since     time.Time      // the outage's first failure
	reminded  time.Time      // the last log line of the outage
}

func newCheckpointOutage(logger *zap.Logger, count func(context.Context), now func() time.Time) *checkpointOutage {
	return &checkpointOutage{logger: logger, count: count, now: now}
}

func (o *checkpointOutage) start(host component.Host) {
	o.mu.Lock()
	o.host = host
	o.lastSaved = o.now()
	o.mu.Unlock()
}

// failed records a save that failed; what says which save (the collection's, a request's).
func (o *checkpointOutage) failed(ctx context.Context, what string, err error) {
	o.count(ctx)
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	o.failures++
	if o.failures == 1 {
		o.since, o.reminded = now, now
		o.logger.Error("gym receiver: saving the checkpoint failed; collecting and exporting go on, and a crash before a save works again loses what was received since the last saved checkpoint (files are read again from its offsets)",
			zap.String("save", what), zap.Time("last_saved", o.lastSaved), zap.Error(err))
		o.report(componentstatus.NewRecoverableErrorEvent(err))
		return
	}
	if now.Sub(o.reminded) >= outageReminder || now.Before(o.reminded) {
		o.reminded = now
		o.logger.Warn("gym receiver: saving the checkpoint still fails",
			zap.Int("failures", o.failures), zap.Duration("failing_for", nonNegative(now.Sub(o.since))),
			zap.Time("last_saved", o.lastSaved), zap.Error(err))
	}
}

// saved records a save that worked, ending an outage if there was one.
func (o *checkpointOutage) saved() {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	if o.failures > 0 {
		o.logger.Info("gym receiver: the checkpoint is saved again",
			zap.Int("failures", o.failures), zap.Duration("failed_for", nonNegative(now.Sub(o.since))))
		o.report(componentstatus.NewEvent(componentstatus.StatusOK))
		o.failures = 0
	}
	o.lastSaved = now
}

func (o *checkpointOutage) report(ev *componentstatus.Event) {
	if o.host != nil {
		componentstatus.ReportStatus(o.host, ev)
	}
}

// nonNegative: a wall clock stepped back makes an elapsed time negative; it is then 0.
func nonNegative(d time.Duration) time.Duration {
	return max(d, 0)
}
