package rollouts

import (
	stdcontext "context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The rows' traces (evidence_spans.go) leave the process: they cannot be checkpointed with the
// metrics. So the source hands them on synchronously, a batch at a time, and keeps per main
// output how far its rows' spans were handed on (the traced offset), in a store of its own
// saved after each hand-off; a row read again below it (after a restart, whose checkpoint is
// older) makes no span. A batch is handed on before a waiting checkpoint comes in (so no
// checkpoint holds a row whose spans were not handed on), when it holds MaxSpanBatch spans, and
// at the end of every poll. docs/receiver.md, "Traces from the run files", tells the window
// left: a crash between a hand-off and the save of its traced offset sends those spans again
// (with the same ids).

// MaxSpanBatch is the most spans a batch holds before it is handed on.
const MaxSpanBatch = 4096

// TracedStore keeps the traced offsets across restarts.
type TracedStore interface {
	Load(ctx stdcontext.Context) ([]byte, error)
	Save(ctx stdcontext.Context, data []byte) error
}

// TracesOptions turn the source's traces on (SourceOptions.Traces).
type TracesOptions struct {
	// Consume hands a batch on, synchronously. A batch refused (an error) is dropped: pdata
	// handed to a pipeline may be shared or read-only afterwards, and spans already delivered
	// after it would be sent again if its rows were read again.
	Consume func(ctx stdcontext.Context, td ptrace.Traces) error
	// Store keeps the traced offsets (nil: not kept; a restart reads from start_at and sends
	// the spans again, with the same ids).
	Store TracedStore
	// ScopeVersion is the version of the spans' scope (schema.EvidenceScopeName).
	ScopeVersion string
	// Record counts the spans of each hand-off: sent, or dropped (refused).
	Record func(sent, dropped int64)
	// Now is the time a row with no timestamp is placed at (nil: time.Now).
	Now func() time.Time
}

type tracedEntry struct {
	Head   string `json:"head,omitempty"`
	Offset int64  `json:"offset"`
}

// tracer is the source's traces state.
type tracer struct {
	opts    TracesOptions
	b       SpanBuilder
	batch   ptrace.Traces
	spans   int
	byRun   map[*run]ptrace.SpanSlice
	ends    map[*run]int64 // the end of each run's last row in the batch
	stored  map[string]tracedEntry
	changed bool
}

func newTracer(opts TracesOptions) *tracer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &tracer{opts: opts, batch: ptrace.NewTraces(), byRun: map[*run]ptrace.SpanSlice{}, ends: map[*run]int64{}, stored: map[string]tracedEntry{}}
}

// Start loads the traced offsets, then starts following.
func (t *Source) Start(ctx stdcontext.Context) error {
	if tr := t.tr; tr != nil && tr.opts.Store != nil {
		data, err := tr.opts.Store.Load(ctx)
		if err != nil {
			return err
		}
		if len(data) > 0 {
			if err := json.Unmarshal(data, &tr.stored); err != nil {
				t.logger.Warn("rollouts: the stored traced offsets are unreadable; spans of rows read again are sent again (with the same ids)", zap.Error(err))
				tr.stored = map[string]tracedEntry{}
			}
		}
	}
	return t.Follower.Start(ctx)
}

// restoreTraced takes a run's traced offset from the store.
func (tr *tracer) restore(r *run) {
	if e, ok := tr.stored[r.path]; ok {
		delete(tr.stored, r.path)
		r.traced, r.tracedHead = e.Offset, e.Head
	}
}

// opened checks a main output just opened against its traced offset: another file at the path
// (or one rewritten) starts again from 0.
func (tr *tracer) opened(r *run, head []byte, other bool) {
	h := hex.EncodeToString(head)
	if other || r.tracedHead != "" && !strings.HasPrefix(h, r.tracedHead) && !strings.HasPrefix(r.tracedHead, h) {
		r.traced = 0
	}
	if len(h) > len(r.tracedHead) || r.traced == 0 {
		r.tracedHead = h
	}
}

// trace adds the row just applied to the batch (unless its spans were handed on before).
func (t *Source) trace(r *run, f *rowFile) {
	tr, e := t.tr, t.row.Evidence
	end := t.rd.Offset()
	if f.kind != Main || e == nil || !e.HasSpans() || end <= r.traced {
		return
	}
	ss, ok := tr.byRun[r]
	if !ok {
		rs := tr.batch.ResourceSpans().AppendEmpty()
		res, _ := Resource(r.path, r.runID)
		putResource(rs.Resource().Attributes(), res)
		sc := rs.ScopeSpans().AppendEmpty()
		sc.Scope().SetName(schema.EvidenceScopeName)
		sc.Scope().SetVersion(tr.opts.ScopeVersion)
		ss = sc.Spans()
		tr.byRun[r] = ss
	}
	tr.spans += tr.b.Append(ss, &t.row, RowSpans{RunID: r.runID, RowStart: f.f.Offset, Now: tr.opts.Now()})
	tr.ends[r] = end
}

func putResource(m pcommon.Map, attrs []events.ResourceAttr) {
	for _, a := range attrs {
		switch a.Kind {
		case events.ValueInt:
			m.PutInt(string(a.Key), a.Int)
		case events.ValueBool:
			m.PutBool(string(a.Key), a.Bool)
		default:
			m.PutStr(string(a.Key), string(a.Str))
		}
	}
}

// beforeYield hands the batch on when a checkpoint waits (its offsets then hold no row whose
// spans were not handed on) or when it is full.
func (t *Source) beforeYield() {
	if tr := t.tr; tr != nil && tr.spans > 0 && (tr.spans >= MaxSpanBatch || t.mu.Waiting()) {
		t.handOn()
	}
}

// handOn hands the batch on and saves the traced offsets.
func (t *Source) handOn() {
	tr := t.tr
	if tr == nil {
		return
	}
	if tr.spans > 0 {
		ctx := stdcontext.Background()
		n := int64(tr.spans)
		err := tr.opts.Consume(ctx, tr.batch)
		if tr.opts.Record != nil {
			if err != nil {
				tr.opts.Record(0, n)
			} else {
				tr.opts.Record(n, 0)
			}
		}
		if err != nil {
			t.logs.Warn("rollouts: the traces pipeline refused a batch of the run files' spans; they are dropped (their rows' metrics count)",
				zap.Int64("spans", n), zap.Error(err))
		}
		for r, end := range tr.ends {
			r.traced = end
			delete(tr.ends, r)
		}
		clear(tr.byRun)
		tr.batch, tr.spans, tr.changed = ptrace.NewTraces(), 0, true
	}
	if tr.changed && tr.opts.Store != nil {
		tr.changed = false
		if err := tr.opts.Store.Save(stdcontext.Background(), t.encodeTraced()); err != nil {
			t.logs.Warn("rollouts: cannot save the traced offsets; a restart may send some spans again (with the same ids)", zap.Error(err))
		}
	}
}

// encodeTraced is the store's record: the runs followed and the stored ones not followed yet.
func (t *Source) encodeTraced() []byte {
	out := make(map[string]tracedEntry, len(t.runs)+len(t.tr.stored))
	for p, e := range t.tr.stored {
		out[p] = e
	}
	for _, r := range t.runs {
		if !r.report && r.traced > 0 {
			out[r.path] = tracedEntry{Head: r.tracedHead, Offset: r.traced}
		}
	}
	data, _ := json.Marshal(out)
	return data
}
