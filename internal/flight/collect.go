package flight

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// The instruments the recorder exports (declared in metadata.yaml, source spans).
const (
	MetricInFlight = "gym.rollout.in_flight"
	MetricStalled  = "gym.rollout.stalled"
	MetricStalls   = "gym.rollout.stalls_total"
	MetricOldest   = "gym.rollout.oldest_in_flight_age"
)

// maxStallSeries bounds the stall counters kept; a stall of a new series beyond them is
// counted in its run's overflow series (otel.metric.overflow, no other attribute).
const maxStallSeries = 2000

// maxPending bounds the log records waiting for the next collection.
const maxPending = 4096

type reason uint8

const (
	reasonEnded  reason = iota // its gym.rollout span arrived
	reasonSilent               // finished_after of silence
)

type kind uint8

const (
	kindStalled kind = iota
	kindResumed
	kindFinished
)

var kindNames = [...]string{"gym.rollout.stalled", "gym.rollout.resumed", "gym.rollout.finished"}

// event is one log record to write: a rollout that stalled, resumed or finished stalled.
type event struct {
	kind                      kind
	id, run, server, lastSpan string
	stage                     Stage
	calls, errors             uint32
	elapsed, idle             time.Duration
	silent                    bool
	trace                     pcommon.TraceID
	span                      pcommon.SpanID
}

// log queues a record of ro for the next collection; nil when maxPending wait (counted).
func (r *Recorder) log(k kind, ro *rollout, now, idle time.Duration) *event {
	if len(r.pending) >= maxPending {
		r.stats.LogsDropped++
		return nil
	}
	r.pending = append(r.pending, event{kind: k, id: ro.id, run: ro.run, server: ro.server,
		lastSpan: ro.lastSpan, stage: ro.stage, calls: ro.calls, errors: ro.errors,
		elapsed: now - ro.firstSeen, idle: idle, trace: ro.trace, span: ro.span})
	return &r.pending[len(r.pending)-1]
}

// seriesKey names one series: its run (the resource) and attributes.
type seriesKey struct {
	metric   string
	run      string
	server   string
	stage    Stage
	overflow bool
}

type counter struct {
	start pcommon.Timestamp
	n     int64
}

// Stats returns the recorder's counts since it started.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Collect sweeps the rollouts (stalls, silent ones finished, finished ones forgotten) and
// appends to md the recorder's metrics and to ld the log records since the last collection.
func (r *Recorder) Collect(md pmetric.Metrics, ld plog.Logs) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Elapsed()
	ts := pcommon.NewTimestampFromTime(r.stamps.Now())
	r.sweep(now)

	gauges := map[seriesKey]int64{}
	oldest := map[string]time.Duration{}
	for ro := r.inFlight.head; ro != nil; ro = ro.next {
		k := seriesKey{metric: MetricInFlight, run: ro.run, server: ro.server, stage: ro.stage}
		gauges[k]++
		if ro.stalled {
			k.metric = MetricStalled
			gauges[k]++
		}
		if _, ok := oldest[ro.run]; !ok { // the list is by first seen: the run's first is its oldest
			oldest[ro.run] = now - ro.firstSeen
			gauges[seriesKey{metric: MetricOldest, run: ro.run}] = 0
		}
	}
	// A series that drained is exported once more, at zero, so that a backend sees it end at
	// zero rather than at its last value.
	for k := range r.exported {
		if _, ok := gauges[k]; !ok {
			gauges[k] = 0
		}
	}
	clear(r.exported)
	for k, v := range gauges {
		if _, live := oldest[k.run]; v != 0 || k.metric == MetricOldest && live {
			r.exported[k] = struct{}{}
		}
	}
	r.dropStallsOfGoneRuns()

	out := newExport(md, ts)
	for _, k := range sorted(gauges) {
		out.gauge(k, gauges[k], oldest[k.run].Seconds())
	}
	for _, k := range sorted(r.stalls) {
		out.sum(k, r.stalls[k])
	}
	r.writeLogs(ld, ts)
	r.saved.headerDue = r.saved.store != nil // the time of this collection and the counters
	r.flush()
}

// sweep marks stalls, finishes silent rollouts and forgets finished ones.
func (r *Recorder) sweep(now time.Duration) {
	for ro := r.inFlight.head; ro != nil; {
		next := ro.next
		idle := now - ro.lastSeen
		switch {
		case idle > r.cfg.FinishedAfter:
			r.finish(ro, now, idle, reasonSilent)
		case idle > r.cfg.StallAfter && !ro.stalled:
			ro.stalled = true
			r.touch(ro)
			r.countStall(ro)
			r.log(kindStalled, ro, now, idle)
		}
		ro = next
	}
	// Finished ones are kept finished_after past their last span, so that a late span of a
	// finished rollout does not start it again.
	for ro := r.finished.head; ro != nil && now-ro.lastSeen > r.cfg.FinishedAfter; ro = r.finished.head {
		r.finished.remove(ro)
		r.forget(ro)
	}
}

func (r *Recorder) countStall(ro *rollout) {
	k := seriesKey{metric: MetricStalls, run: ro.run, server: ro.server, stage: ro.stage}
	c := r.stalls[k]
	if c == nil {
		if len(r.stalls) >= maxStallSeries {
			k = seriesKey{metric: MetricStalls, run: ro.run, overflow: true}
			c = r.stalls[k]
		}
		if c == nil {
			c = &counter{start: pcommon.NewTimestampFromTime(r.stamps.Now())}
			r.stalls[k] = c
		}
	}
	c.n++
}

// dropStallsOfGoneRuns forgets the stall counters of runs the recorder no longer keeps a
// rollout of: the runs, and so the counters, stay bounded by max_rollouts.
func (r *Recorder) dropStallsOfGoneRuns() {
	if len(r.stalls) == 0 {
		return
	}
	runs := make(map[string]struct{}, 8)
	for _, ro := range r.byID {
		runs[ro.run] = struct{}{}
	}
	for k := range r.stalls {
		if _, ok := runs[k.run]; !ok {
			delete(r.stalls, k)
		}
	}
}

func (r *Recorder) writeLogs(ld plog.Logs, ts pcommon.Timestamp) {
	if len(r.pending) == 0 {
		return
	}
	rl := ld.ResourceLogs().AppendEmpty()
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(ScopeName)
	for _, e := range r.pending {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(ts)
		lr.SetObservedTimestamp(ts)
		lr.SetEventName(kindNames[e.kind])
		lr.SetTraceID(e.trace) // the last span's: a backend links the record to the rollout's trace
		lr.SetSpanID(e.span)
		a := lr.Attributes()
		a.PutStr(KeyRolloutID, e.id)
		if e.run != "" {
			a.PutStr(KeyRun, e.run)
		}
		if e.server != "" {
			a.PutStr(KeyServer, e.server)
		}
		a.PutStr(KeyStage, e.stage.String())
		a.PutDouble("nemo.gym.rollout.elapsed_s", e.elapsed.Seconds())
		a.PutDouble("nemo.gym.rollout.idle_s", e.idle.Seconds())
		a.PutStr("nemo.gym.rollout.last_span", e.lastSpan)
		a.PutInt("nemo.gym.rollout.calls", int64(e.calls))
		a.PutInt("nemo.gym.rollout.errors", int64(e.errors))
		idle := e.idle.Round(time.Second)
		switch e.kind {
		case kindStalled:
			lr.SetSeverityNumber(plog.SeverityNumberWarn)
			lr.SetSeverityText("WARN")
			lr.Body().SetStr(fmt.Sprintf("rollout %s stalled: no span for %s (stage %s, last span %s, server %s)", e.id, idle, e.stage, e.lastSpan, e.server))
		case kindResumed:
			lr.SetSeverityNumber(plog.SeverityNumberInfo)
			lr.SetSeverityText("INFO")
			lr.Body().SetStr(fmt.Sprintf("rollout %s resumed after %s without a span (stage %s, span %s, server %s)", e.id, idle, e.stage, e.lastSpan, e.server))
		case kindFinished:
			lr.SetSeverityNumber(plog.SeverityNumberInfo)
			lr.SetSeverityText("INFO")
			how := "its gym.rollout span arrived"
			if e.silent {
				how = "taken as finished after its silence"
			}
			a.PutBool("nemo.gym.rollout.silent", e.silent)
			lr.Body().SetStr(fmt.Sprintf("stalled rollout %s finished: %s, %s after its last span (stage %s, server %s)", e.id, how, idle, e.stage, e.server))
		}
	}
	clear(r.pending)
	r.pending = r.pending[:0]
}

// Kept returns how many rollouts the recorder keeps, in flight and finished.
func (r *Recorder) Kept() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}
