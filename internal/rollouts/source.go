package rollouts

import (
	stdcontext "context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/follow"
	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

// SourceOptions configure the rollout files source.
type SourceOptions struct {
	// Include and Exclude are globs of main output files (STEM.jsonl).
	Include, Exclude []string
	StartAtBeginning bool
	PollInterval     time.Duration
	// MaxLineBytes is the longest row, without its newline (0: no limit).
	MaxLineBytes int64
	// Refused counts a matched path that is not followed (follow.Refusal* reasons).
	Refused func(path, reason string)
	// Waiting, when set, is told at the end of every poll how many runs wait past MaxRuns
	// (0: none); they are logged at most once a minute.
	Waiting func(n int)
	// Store keeps the offsets (nil: not kept across restarts). They are read at Start. A
	// checkpoint section (follow.PulledStore) asks for them under Locker at each checkpoint
	// (Offsets) and is saved into at Shutdown; another store is saved into at every poll.
	Store follow.OffsetStore
	// Traces, when set, makes each main row with rollout evidence one trace too
	// (source_traces.go).
	Traces *TracesOptions
}

// Names of a run's files beside its main output DIR/STEM.jsonl.
const (
	failuresSuffix = "_failures.jsonl"
	manifestSuffix = "_manifest.json"
	verdictsName   = "rollout_verdicts.jsonl"
	// MaxRuns bounds the runs followed at once; more wait for a run to be forgotten.
	MaxRuns = 4096
	// maxManifestBytes bounds the read of STEM_manifest.json.
	maxManifestBytes = 1 << 20
)

// gymSuffixes are the other STEM_*.jsonl files Gym writes beside a main output: never main
// outputs themselves, even when no STEM.jsonl is beside them (yet).
var gymSuffixes = []string{failuresSuffix, "_attempts.jsonl", "_materialized_inputs.jsonl", "_reward_profiling.jsonl", "_items.jsonl", "_task.jsonl"}

// Source is the rollouts source: it follows the files of Gym rollout collections: for each main
// output the globs match, the main output, its failures sidecar and the health report beside
// it, as they are written. Its files are followed by follow.Follower, the loop of every source
// that follows files, with the run files' rules injected: its targets (the files of its runs,
// at most MaxRuns), their identity (by path), the store's format, and a row reader. Each row is
// decoded by RowDecoder and applied as the events of the Gym event stream, under one resource
// per run. Rows are applied in order and the offsets advance row by row, so the offsets always
// say exactly which rows the aggregator holds.
type Source struct {
	*follow.Follower
	opts    SourceOptions
	newSink events.NewSink
	record  func(*ingest.Stats)
	logger  *zap.Logger
	now     func() time.Time // for the wait log

	runs       map[string]*run // by the run's path (log.file.path)
	owner      map[string]string
	storedRuns map[string]storedRun // from the store, each entry consumed as its run is made
	polls      int
	waiting    int             // runs of this poll waiting past MaxRuns
	firstWait  string          // the first of them, for the log
	waitLog    ratelog.Limiter // a line a minute while runs wait
	targets    []string        // a poll's, reused

	rd    *RowDecoder
	row   Row
	evs   [MaxRowEvents]events.Event
	stats ingest.Stats
	logs  *ratelog.Logger

	// mu: a poll, a checkpoint and shutdown exclude each other. A poll lets a waiting
	// checkpoint in between two rows (the follower's yield), so a checkpoint never waits for a
	// long file to be read to its end.
	mu checkpoint.Gate

	tr *tracer // nil: no traces
}

// run is one rollout collection's files: the main output, its sidecar, and the health report
// when it belongs to this run (or only the health report, for a report of its own).
type run struct {
	path   string // the main output (or the report of its own): the resource's log.file.path
	report bool   // a report of its own: no main output, no sidecar
	fixed  bool   // the resource is fixed (runID, stream)
	runID  string
	sink   events.Sink // nil until its first row: its resource is fixed then
	seen   int
	// traced: the main output's rows before it had their spans handed on (source_traces.go);
	// tracedHead is the hex of its first bytes, which tells another file at the path.
	traced     int64
	tracedHead string
}

// rowFile is the follower's Reader of a run's file: the follower's File.Offset is through the
// last complete row applied (or rejected).
type rowFile struct {
	t       *Source
	f       *follow.File
	run     *run
	kind    Kind
	lines   int64 // complete lines before Offset
	noLines bool  // started at the end of a file: line numbers unknown, rows logged by offset
	scanned int64 // after an incomplete row: no newline lies in [offset, scanned)
	partial bool  // the last read ended before a row's newline
}

// rolloutState is what the store keeps: for each file (by path) its head and where to resume,
// and for each run whose resource is fixed, its run id.
type rolloutState struct {
	Files map[string]storedRowFile `json:"files"`
	Runs  map[string]storedRun     `json:"runs"`
}

type storedRowFile struct {
	Head   string `json:"head"` // hex of the first bytes
	Offset int64  `json:"offset"`
	Lines  int64  `json:"lines"`
}

type storedRun struct {
	RunID string `json:"run_id,omitempty"`
}

// NewSource returns the rollout files source, which hands the rows' events to the sinks newSink
// makes (one per run) and gives record
// the counts of each poll; Start begins polling. A checkpoint section as opts.Store is joined
// here: each checkpoint pulls the offsets of the rows applied (Offsets, under Locker).
func NewSource(newSink events.NewSink, opts SourceOptions, record func(*ingest.Stats), logger *zap.Logger) *Source {
	t := &Source{
		opts: opts, newSink: newSink, record: record, logger: logger, now: time.Now,
		waitLog: ratelog.Limiter{Burst: 1, Every: time.Minute},
		runs:    map[string]*run{}, owner: map[string]string{},
		rd:    NewRowDecoder(0),
		stats: ingest.NewStats(),
		logs:  ratelog.NewLogger(logger, 10, 10*time.Second),
	}
	t.Follower = follow.NewFollower(t.newReader, follow.Options{
		Name:             "rollouts",
		Lines:            "rows",
		Include:          opts.Include,
		Exclude:          opts.Exclude,
		StartAtBeginning: opts.StartAtBeginning,
		PollInterval:     opts.PollInterval,
		MaxLineBytes:     0, // start_at end: after the last newline (0 when there is none): rows can be of any size
		Store:            opts.Store,
		Identity:         follow.ByPath,
		Codec:            rolloutCodec{t},
		Lock:             &t.mu,
		Targets:          t.findRuns,
		EndPoll:          t.endPoll,
		Refused:          opts.Refused,
	}, logger)
	if opts.Traces != nil && opts.Traces.Consume != nil {
		t.tr = newTracer(*opts.Traces)
		t.rd.KeepSpans(true)
	}
	return t
}

// poll is one poll of the follower (the loop's; a test's by hand).
func (t *Source) poll(ctx stdcontext.Context) { t.Poll(ctx) }

// findRuns finds the runs (admitting new ones up to MaxRuns) and returns their files, run by run:
// main output, sidecar, report. The files of a run gone (its main output deleted or no longer
// matched) are not among them: the follower reads them to their end and lets them go, and
// endPoll forgets the run.
func (t *Source) findRuns(bool) []string {
	t.polls++
	t.waiting = 0
	mains := t.matchMains()
	perDir := map[string]int{}
	for _, p := range mains {
		perDir[filepath.Dir(p)]++
	}
	for _, p := range mains {
		r := t.runs[p]
		if r == nil {
			if len(t.runs) >= MaxRuns {
				t.skipRun(p)
				continue
			}
			r = &run{path: p}
			t.restoreRun(r)
			t.runs[p] = r
		}
		r.seen = t.polls
	}
	// The health report of a DIR belongs to its one main output; in a DIR with several, it is
	// a run of its own. The owner is chosen when the report is first seen and kept.
	for dir, n := range perDir {
		vp := filepath.Join(dir, verdictsName)
		owner, ok := t.owner[dir]
		if !ok {
			if _, err := os.Stat(vp); err != nil {
				continue
			}
			owner = vp
			if n == 1 {
				for _, p := range mains {
					if filepath.Dir(p) == dir {
						owner = p
					}
				}
			}
			t.owner[dir] = owner
		}
		if owner == vp {
			r := t.runs[vp]
			switch {
			case r == nil && len(t.runs) >= MaxRuns:
				t.skipRun(vp)
			case r == nil:
				r = &run{path: vp, report: true}
				t.restoreRun(r)
				t.runs[vp] = r
			}
			if r != nil {
				r.seen = t.polls
			}
		}
	}
	t.targets = t.targets[:0]
	for _, key := range sortedKeys(t.runs) {
		r := t.runs[key]
		if r.seen != t.polls {
			continue
		}
		for _, p := range t.paths(r) {
			if p != "" {
				t.targets = append(t.targets, p)
			}
		}
	}
	return t.targets
}

// endPoll forgets the runs gone (their files were read to their end and let go), and the stored
// runs gone at the first poll, and records the poll's counts.
func (t *Source) endPoll(first bool) {
	for key, r := range t.runs {
		if r.seen != t.polls {
			delete(t.runs, key)
			if t.owner[filepath.Dir(key)] == key {
				delete(t.owner, filepath.Dir(key))
			}
		}
	}
	if first {
		t.dropGone()
	}
	if t.waiting > 0 && t.waitLog.Allow(t.now()) {
		t.logger.Warn("rollouts: more runs than the receiver follows at once; the rest wait until followed runs go",
			zap.Int("max_runs", MaxRuns), zap.Int("waiting", t.waiting), zap.String("first_waiting", t.firstWait))
	}
	if t.opts.Waiting != nil {
		t.opts.Waiting(t.waiting)
	}
	t.handOn()
	t.flush()
}

// dropGone forgets the stored runs whose main output is gone at the first poll (deleted while
// the collector was down), as the follower forgets the offsets of files gone, so that the runs
// carried over (waiting past MaxRuns, or not matched now) cannot pile up across restarts.
func (t *Source) dropGone() {
	for p := range t.storedRuns {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			delete(t.storedRuns, p)
		}
	}
	if t.tr != nil {
		for p := range t.tr.stored {
			if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
				delete(t.tr.stored, p)
				t.tr.changed = true
			}
		}
	}
}

// skipRun counts a run (a main output or a report of its own) left waiting past MaxRuns.
func (t *Source) skipRun(path string) {
	if t.waiting == 0 {
		t.firstWait = path
	}
	t.waiting++
}

func sortedKeys(m map[string]*run) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// matchMains returns the main outputs the globs match: never the health report, a Gym
// STEM_*.jsonl file, nor any S_*.jsonl beside an S.jsonl.
func (t *Source) matchMains() []string {
	t.CheckGlobDirs(t.opts.Include)
	return follow.Match(t.opts.Include, t.opts.Exclude, func(path string) bool {
		if !isMainOutput(path) {
			return false
		}
		_, ok := t.Regular(path)
		return ok
	})
}

// isMainOutput tells a main output STEM.jsonl from the other files of a run.
func isMainOutput(path string) bool {
	name := filepath.Base(path)
	if name == verdictsName || !strings.HasSuffix(name, ".jsonl") {
		return false
	}
	for _, s := range gymSuffixes {
		if strings.HasSuffix(name, s) && len(name) > len(s) {
			return false
		}
	}
	// S_x.jsonl beside S.jsonl is a file of the run S (for every S that is a prefix at '_').
	stem := strings.TrimSuffix(name, ".jsonl")
	for i := strings.IndexByte(stem, '_'); i > 0; i = nextUnderscore(stem, i) {
		if fi, err := os.Stat(filepath.Join(filepath.Dir(path), stem[:i]+".jsonl")); err == nil && fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

func nextUnderscore(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '_')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// restoreRun takes a run's resource from the store, so that a restarted collector goes on
// with the same series.
func (t *Source) restoreRun(r *run) {
	if t.tr != nil {
		t.tr.restore(r)
	}
	if sr, ok := t.storedRuns[r.path]; ok {
		delete(t.storedRuns, r.path) // used once, as a file's offset
		r.fixed, r.runID = true, sr.RunID
	}
}

// newRun forgets the run's resource: the next row chooses it again.
func (r *run) newRun() {
	r.fixed, r.runID, r.sink = false, "", nil
}

// paths returns the files of a run: main output, sidecar, report ("" where the run has none).
func (t *Source) paths(r *run) [3]string {
	if r.report {
		return [3]string{"", "", r.path}
	}
	var out [3]string
	out[Main] = r.path
	out[Failures] = FailuresPath(r.path)
	if t.owner[filepath.Dir(r.path)] == r.path {
		out[Verdicts] = filepath.Join(filepath.Dir(r.path), verdictsName)
	}
	return out
}

// newReader makes the reader of a run's file just opened. Another main output at a run's path
// (the store's entry for the path had another head, or the run had a resource already) is a
// new run: its resource is chosen anew.
func (t *Source) newReader(f *follow.File, opened follow.Opened) follow.Reader {
	r, kind := t.member(f.Path)
	rf := &rowFile{t: t, f: f, run: r, kind: kind, noLines: opened.Start == follow.AtEnd} // at the end: rows are logged by offset
	if kind == Main && (opened.Other || r.sink != nil) {
		r.newRun()
	}
	if kind == Main && t.tr != nil {
		t.tr.opened(r, f.Head, opened.Other)
	}
	return rf
}

// member returns the run a target path is a file of, and which file it is.
func (t *Source) member(path string) (*run, Kind) {
	if r := t.runs[path]; r != nil {
		if r.report {
			return r, Verdicts
		}
		return r, Main
	}
	dir := filepath.Dir(path)
	if filepath.Base(path) == verdictsName {
		return t.runs[t.owner[dir]], Verdicts
	}
	return t.runs[strings.TrimSuffix(path, failuresSuffix)+".jsonl"], Failures
}

// partial counts a last row that its file was let go before its newline.
func (t *Source) partial(f *rowFile) {
	t.stats.Rejected[ingest.ReasonPartialLine]++
	t.logs.Warn("rollouts: the file was let go with a row not complete", zap.String("path", f.f.Path), zap.Int64("offset", f.f.Offset))
}

// apply fixes the run's resource before its first row, then applies the row's events.
func (t *Source) apply(r *run, f *rowFile) {
	if r.sink == nil {
		if !r.fixed {
			r.runID = ""
			if !r.report {
				r.runID = manifestRunID(strings.TrimSuffix(r.path, ".jsonl") + manifestSuffix)
			}
			if r.runID == "" {
				r.runID = string(t.row.RunID)
			}
			r.fixed = true
		}
		res, cut := Resource(r.path, r.runID)
		t.stats.ResourceValuesCut += int64(cut)
		r.sink = t.newSink(res, &t.stats)
	}
	n := t.row.Events(f.kind, &t.evs)
	for i := range n {
		r.sink.Apply(&t.evs[i])
	}
	if e := t.row.Evidence; e != nil {
		for i := range e.Len() {
			r.sink.Apply(e.Event(i))
		}
		if e.Problems() > 0 {
			t.evidenceWarning(f, e)
		}
		if t.tr != nil {
			t.trace(r, f)
		}
	}
	t.stats.Accepted++
}

// evidenceWarning names a row's evidence problems (counted in gym.evidence.problems_total):
// the row itself was applied.
func (t *Source) evidenceWarning(f *rowFile, e *Evidence) {
	line, offset := t.rd.Lines(), f.f.Offset
	t.logs.WarnWith("rollouts: a row's rollout evidence has problems; what is at fault is left out, the rest of the row counts", func() []zap.Field {
		kind, detail := e.FirstProblem()
		fields := []zap.Field{zap.String("path", f.f.Path), zap.String("problem", kind), zap.String("error", detail), zap.Int64("problems", e.Problems())}
		if !f.noLines {
			return append(fields, zap.Int64("line", line))
		}
		return append(fields, zap.Int64("offset", offset))
	})
}

// manifestRunID is the run_id of STEM_manifest.json, "" when it is not there, is not a JSON
// object (by gymjson's rules, Python's NaN included), or gives no string run_id (the last
// run_id wins, as for a row's keys).
func manifestRunID(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes))
	if err != nil {
		return ""
	}
	start := gymjson.SkipSpace(data, 0)
	end, kind, _, err := gymjson.ScanValue(data, start, 1)
	if err != nil || kind != gymjson.Object || gymjson.SkipSpace(data, end) != len(data) {
		return ""
	}
	// The document is valid: its top-level members are walked without checks.
	var runID string
	for i := gymjson.SkipSpace(data, start+1); i < end && data[i] == '"'; {
		ke, _, _ := gymjson.ScanString(data, i)
		key := gymjson.AppendUnescaped(nil, data[i+1:ke-1])
		v := gymjson.SkipSpace(data, gymjson.SkipSpace(data, ke)+1) // past the ':'
		ve, vk, _, _ := gymjson.ScanValue(data, v, 2)
		if string(key) == "run_id" {
			runID = ""
			if vk == gymjson.String {
				runID = string(gymjson.AppendUnescaped(nil, data[v+1:ve-1]))
			}
		}
		i = gymjson.SkipSpace(data, ve)
		if data[i] == ',' {
			i = gymjson.SkipSpace(data, i+1)
		}
	}
	return runID
}

func (t *Source) reject(f *rowFile, line int64, re *RowError) {
	t.stats.Rejected[re.Reason]++
	offset := f.f.Offset
	t.logs.WarnWith("rollouts: row rejected", func() []zap.Field {
		fields := []zap.Field{zap.String("path", f.f.Path), zap.String("reason", re.Reason), zap.String("error", re.Msg)}
		if !f.noLines {
			return append(fields, zap.Int64("line", line))
		}
		return append(fields, zap.Int64("offset", offset))
	})
}

func (t *Source) flush() {
	if t.record != nil {
		t.record(&t.stats)
	}
	t.stats.Clear()
}
