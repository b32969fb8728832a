// Package flight is the flight recorder: from Gym's spans it keeps, per rollout (its run and
// its id: Gym reuses rollout ids in every run), when the
// collector first and last received a span of the rollout, what the rollout was doing (the kind
// of its last span), its calls and errors, its run and server, and whether it finished; every
// collection it tells which rollouts are in flight and which are stalled (metrics), and logs a
// rollout that stalls and one that then resumes or finishes.
//
// Idle time is measured on the collector's monotonic clock, from when the collector received a
// rollout's last span: a rollout's spans come from several processes (agent, model, resources
// servers), on hosts whose clocks may disagree with each other and with the collector's, so the
// spans' own timestamps are never compared with the collector's clock, nor with another
// sender's. The recorder keeps nothing across a restart: its set is rebuilt from the next spans.
package flight

import (
	"errors"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The attribute keys the recorder reads (spans and resources) and writes (metrics and logs).
const (
	KeyRolloutID = "nemo.gym.rollout.id"
	KeyServer    = "nemo.gym.server.name"
	KeyRun       = "nemo.run.id"
	KeyStage     = "nemo.gym.rollout.stage"
)

// maxStringBytes caps every string a rollout keeps (id, run, server, span name).
const maxStringBytes = schema.DefaultStringMaxBytes

// Config is the recorder's part of the connector's configuration.
type Config struct {
	// MaxRollouts bounds the rollouts kept; the oldest is forgotten first (a finished one
	// before one in flight), an in-flight one counted as evicted.
	MaxRollouts int `mapstructure:"max_rollouts"`
	// StallAfter: a rollout in flight whose last span the collector received longer ago than
	// this is stalled.
	StallAfter time.Duration `mapstructure:"stall_after"`
	// FinishedAfter: a rollout silent for longer than this is taken as finished (its
	// gym.rollout span was lost, or its process died); a finished rollout is forgotten as long
	// after its last span.
	FinishedAfter time.Duration `mapstructure:"finished_after"`
}

// DefaultConfig is the configuration the docs describe.
func DefaultConfig() Config {
	return Config{MaxRollouts: 10000, StallAfter: 5 * time.Minute, FinishedAfter: 30 * time.Minute}
}

// Validate names the key of a bad setting.
func (c Config) Validate() error {
	var errs []error
	if c.MaxRollouts < 1 {
		errs = append(errs, errors.New("max_rollouts must be at least 1"))
	}
	if c.StallAfter <= 0 {
		errs = append(errs, errors.New("stall_after must be positive"))
	}
	if c.FinishedAfter <= c.StallAfter {
		errs = append(errs, errors.New("finished_after must be longer than stall_after"))
	}
	return errors.Join(errs...)
}

// Stats are the recorder's own counts since it started.
type Stats struct {
	Evicted      int64 // rollouts in flight forgotten because max_rollouts were kept
	Expired      int64 // rollouts taken as finished after finished_after of silence
	LateSpans    int64 // spans of a rollout that had finished (kept out of its state)
	InvalidSpans int64 // spans whose rollout id is not a non-empty string
	LogsDropped  int64 // log records not kept because maxPending were waiting
	SaveFailed   int64 // writes of the state to its Store that failed
}

// rolloutKey names a rollout: its run (the resource's nemo.run.id, "" for spans whose resource
// has none) and its id. Gym names a rollout <task>-<rollout> in every run, so an id alone would
// merge the rollouts of two runs.
type rolloutKey struct{ run, id string }

// rollout is one rollout's state. Times are the collector's elapsed time (clock.Elapsed).
type rollout struct {
	rolloutKey
	server, lastSpan    string
	stage               Stage
	finished, stalled   bool
	calls, errors       uint32
	firstSeen, lastSeen time.Duration
	trace               pcommon.TraceID // of the last span: its log records link to it
	span                pcommon.SpanID
	prev, next          *rollout // in flight: by first seen; finished: by finish
	slot                int32    // its record in the store (-1: none)
	dirty               bool     // changed since its record was written
}

// list is an intrusive doubly linked list of rollouts, oldest first.
type list struct{ head, tail *rollout }

func (l *list) push(r *rollout) {
	r.prev, r.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = r
	} else {
		l.head = r
	}
	l.tail = r
}

func (l *list) remove(r *rollout) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		l.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		l.tail = r.prev
	}
	r.prev, r.next = nil, nil
}

// Recorder is the flight recorder. Safe for concurrent use.
type Recorder struct {
	cfg    Config
	clock  clock.Clock
	stamps *clock.Stamps

	mu          sync.Mutex
	byID        map[rolloutKey]*rollout
	inFlight    list
	finished    list
	stats       Stats
	pending     []event                // log records waiting for the next collection
	stalls      map[seriesKey]*counter // gym.rollout.stalls_total
	exported    map[seriesKey]struct{} // gauge series exported non-zero at the last collection
	saved       persistence            // where the state is kept across restarts (none by default)
	lastSaveErr error
}

// SaveError is the error of the last write of the state that failed (nil when none has).
func (r *Recorder) SaveError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastSaveErr
}

// New returns a recorder of cfg (valid) reading time from c.
func New(cfg Config, c clock.Clock) *Recorder {
	return &Recorder{
		cfg: cfg, clock: c, stamps: clock.NewStamps(c),
		byID:     make(map[rolloutKey]*rollout),
		stalls:   make(map[seriesKey]*counter),
		exported: make(map[seriesKey]struct{}),
	}
}

// keep returns s as a rollout keeps it: within maxStringBytes. A string that fits is kept as
// it is (pdata's strings are copies of the request, never views of it); a longer one is cut
// and copied, so that it holds no more than the cap.
func keep(s string) string {
	if len(s) <= maxStringBytes {
		return s
	}
	return string(normalize.Cap([]byte(s), maxStringBytes))
}

// str returns the string value of key, "" when absent or not a string.
func str(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// ConsumeTraces records the spans of td that carry a rollout id.
func (r *Recorder) ConsumeTraces(td ptrace.Traces) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Elapsed()
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := rs.Resource().Attributes()
		run, resServer := keep(str(res, KeyRun)), str(res, KeyServer)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			if sss.At(j).Scope().Name() == schema.EvidenceScopeName {
				continue // a finished rollout's history from its run file: nothing in flight
			}
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				r.span(spans.At(k), run, resServer, now)
			}
		}
	}
	r.flush()
}

func (r *Recorder) span(s ptrace.Span, run, resServer string, now time.Duration) {
	attrs := s.Attributes()
	v, ok := attrs.Get(KeyRolloutID)
	if !ok {
		return // not a rollout's span (gym.job, a server span)
	}
	if v.Type() != pcommon.ValueTypeStr || v.Str() == "" {
		r.stats.InvalidSpans++
		return
	}
	id := v.Str()
	if len(id) > maxStringBytes {
		id = keep(id) // ids that share their first bytes are one rollout: bounded, never dropped
	}
	name := s.Name()
	stage, isRollout := classify(name)
	server := str(attrs, KeyServer)
	if server == "" {
		server = resServer
	}
	ro := r.byID[rolloutKey{run, id}]
	if ro == nil {
		ro = r.admit(id, run, now)
	} else if ro.finished {
		r.stats.LateSpans++
		return
	}
	idle := now - ro.lastSeen
	ro.lastSeen = now
	ro.trace, ro.span = s.TraceID(), s.SpanID()
	r.touch(ro)
	if ro.lastSpan != name {
		ro.lastSpan = keep(name)
	}
	if server != "" && ro.server != server {
		ro.server = keep(server)
	}
	if isRollout {
		r.finish(ro, now, idle, reasonEnded)
		return
	}
	ro.stage = stage
	ro.calls++
	if s.Status().Code() == ptrace.StatusCodeError {
		ro.errors++
	}
	if ro.stalled {
		ro.stalled = false
		r.log(kindResumed, ro, now, idle)
	}
}

// admit starts keeping a rollout, forgetting the oldest when max_rollouts are kept.
func (r *Recorder) admit(id, run string, now time.Duration) *rollout {
	if len(r.byID) >= r.cfg.MaxRollouts {
		old := r.finished.head
		if old != nil {
			r.finished.remove(old)
		} else {
			old = r.inFlight.head
			r.inFlight.remove(old)
			r.stats.Evicted++
		}
		r.forget(old)
	}
	ro := &rollout{rolloutKey: rolloutKey{run: strings.Clone(run), id: strings.Clone(id)}, firstSeen: now, lastSeen: now, slot: -1}
	r.byID[ro.rolloutKey] = ro
	r.inFlight.push(ro)
	r.saved.place(ro)
	return ro
}

// forget drops a rollout that left both lists.
func (r *Recorder) forget(ro *rollout) {
	delete(r.byID, ro.rolloutKey)
	r.saved.free(ro)
}

// touch marks ro as changed since its record was written.
func (r *Recorder) touch(ro *rollout) {
	if !ro.dirty && r.saved.store != nil {
		ro.dirty = true
		r.saved.dirty = append(r.saved.dirty, ro)
	}
}

// finish ends a rollout in flight; a stalled one is logged. One whose gym.rollout span came is
// kept finished (a late span of it changes nothing) until finished_after past its last span;
// one taken as finished after finished_after of silence is forgotten at once, its silence
// having lasted as long: a span of it after that starts it again.
func (r *Recorder) finish(ro *rollout, now, idle time.Duration, why reason) {
	r.inFlight.remove(ro)
	if ro.stalled {
		if e := r.log(kindFinished, ro, now, idle); e != nil {
			e.silent = why == reasonSilent
		}
	}
	ro.stalled = false
	if why == reasonSilent {
		r.stats.Expired++
		r.forget(ro)
		return
	}
	r.finished.push(ro)
	ro.finished = true
	r.touch(ro)
}
