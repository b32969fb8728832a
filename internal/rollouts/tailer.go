package rollouts

import (
	"bytes"
	stdcontext "context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/follow"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// TailerOptions configure the rollout files source.
type TailerOptions struct {
	// Include and Exclude are globs of main output files (STEM.jsonl).
	Include, Exclude []string
	StartAtBeginning bool
	PollInterval     time.Duration
	// MaxLineBytes is the longest row, without its newline (0: no limit).
	MaxLineBytes int64
	// Store keeps the offsets (nil: not kept across restarts). They are read at Start and
	// saved at Shutdown; in between, not at every poll: each checkpoint asks for them under
	// Locker (Offsets).
	Store follow.OffsetStore
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

// Tailer is the rollouts source: it follows the files of Gym rollout collections: for each main output the globs
// match, the main output, its failures sidecar and the health report beside it, as they are
// written. Each row is decoded by RowDecoder and applied as the events of the Gym event
// stream, under one resource per run. Rows are applied in order and the offsets advance row by
// row, so the offsets always say exactly which rows the aggregator holds.
type Tailer struct {
	opts   TailerOptions
	agg    *aggregate.Aggregator
	record func(*ingest.Stats)
	logger *zap.Logger
	now    func() time.Time // for the log limiter

	runs    map[string]*run // by the run's path (log.file.path)
	owner   map[string]string
	stored  *rolloutState // from the store, each entry consumed as its file or run is opened
	loaded  bool          // Start has read the store: encode's offsets stand for the source
	polls   int
	skipped int64

	rd    *RowDecoder
	row   Row
	evs   [MaxRowEvents]events.Event
	stats ingest.Stats
	logs  follow.LogLimiter

	loop follow.Poller
	// mu: a poll, a checkpoint and shutdown exclude each other. A poll lets a waiting
	// checkpoint in between two rows (Yield), so a checkpoint never waits for a long file to be
	// read to its end.
	mu     checkpoint.Gate
	closed bool // Shutdown let the files go: the offsets it saved stand
}

// run is one rollout collection's files: the main output, its sidecar, and the health report
// when it belongs to this run (or only the health report, for a report of its own).
type run struct {
	path   string // the main output (or the report of its own): the resource's log.file.path
	files  [3]*rowFile
	report bool // a report of its own: no main output, no sidecar
	fixed  bool // the resource is fixed (runID, stream)
	runID  string
	stream *aggregate.Stream
	seen   int
}

// rowFile is a followed file of a run: its Offset is through the last complete row applied
// (or rejected).
type rowFile struct {
	*follow.File
	kind    Kind
	lines   int64 // complete lines before Offset
	noLines bool  // started at the end of a file: line numbers unknown, rows logged by offset
	scanned int64 // after an incomplete row: no newline lies in [offset, scanned)
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

// NewTailer returns the rollout files source, which applies the rows to agg and gives record
// the counts of each poll; Start begins polling.
func NewTailer(agg *aggregate.Aggregator, opts TailerOptions, record func(*ingest.Stats), logger *zap.Logger) *Tailer {
	return &Tailer{
		opts: opts, agg: agg, record: record, logger: logger, now: time.Now,
		runs: map[string]*run{}, owner: map[string]string{},
		rd:    NewRowDecoder(0),
		stats: ingest.NewStats(),
		logs:  follow.LogLimiter{Burst: 10, Every: 10 * time.Second},
	}
}

// Start restores the offsets the store holds, polls once, and keeps polling in the background.
func (t *Tailer) Start(ctx stdcontext.Context) error {
	if err := follow.CheckGlobs("rollouts", t.opts.Include, t.opts.Exclude); err != nil {
		return err
	}
	var data []byte
	if t.opts.Store != nil {
		var err error
		// Not under t.mu: a checkpoint holds the store's lock while it waits for t.mu.
		if data, err = t.opts.Store.Load(ctx); err != nil {
			return fmt.Errorf("rollouts: reading stored offsets: %w", err)
		}
	}
	t.mu.Lock()
	if err := t.restore(data); err != nil {
		t.logger.Warn("rollouts: stored offsets are unreadable; starting without them", zap.Error(err))
	}
	t.loaded = true
	t.mu.Unlock()
	t.poll(ctx)
	t.loop.Start(t.opts.PollInterval, t.poll)
	return nil
}

func (t *Tailer) restore(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	var st rolloutState
	if err := json.Unmarshal(data, &st); err != nil {
		return err
	}
	t.stored = &st
	return nil
}

// Locker is the lock the receiver's checkpoint holds while it takes a checkpoint (with Offsets,
// checkpoint.Section.Pull). It waits for the tailer between two rows (a poll yields there),
// not for the end of a poll.
func (t *Tailer) Locker() sync.Locker { return t.mu.Checkpoint() }

// Offsets returns, with Locker held, the offsets of exactly the rows applied so far, so the
// checkpoint's state and offsets agree. Before Start has read the store, and after Shutdown
// saved its last offsets, it has none of its own (false): the checkpoint keeps what it has.
func (t *Tailer) Offsets() ([]byte, bool) {
	if !t.loaded || t.closed {
		return nil, false
	}
	return t.encode(), true
}

// Shutdown stops polling, reads the complete rows the files hold once more, keeps the offsets
// and closes the files. A row still being written stays unread: a restart with storage reads
// it whole.
func (t *Tailer) Shutdown(ctx stdcontext.Context) error {
	if !t.loop.Stop() {
		return nil // not started, or already shut down
	}
	t.poll(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.save(ctx) // for the final checkpoint: the offsets of the last read
	t.closed = true
	for key, r := range t.runs {
		for _, f := range r.files {
			if f != nil {
				_ = f.Close()
			}
		}
		delete(t.runs, key)
	}
	return nil
}

// poll finds the runs, reads their files and forgets the runs that are gone. It does not save
// the offsets: a checkpoint's Locker saves them, with the state they are the offsets of.
func (t *Tailer) poll(ctx stdcontext.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.polls++
	first := t.polls == 1
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
	for _, key := range sortedKeys(t.runs) {
		r := t.runs[key]
		gone := r.seen != t.polls
		t.followRun(r, first, gone)
		if gone {
			// The main output is gone (the run directory deleted, or no longer matched): its
			// rows were read to the end above; the run is forgotten.
			for _, f := range r.files {
				if f != nil {
					_ = f.Close()
				}
			}
			delete(t.runs, key)
			if t.owner[filepath.Dir(key)] == key {
				delete(t.owner, filepath.Dir(key))
			}
		}
	}
	if first {
		t.dropGone()
	}
	t.flush()
}

// dropGone forgets the stored offsets and runs whose files are gone at the first poll (deleted
// while the collector was down), so that the offsets carried over for files not opened yet
// (runs waiting past MaxRuns, or not matched now) cannot pile up across restarts.
func (t *Tailer) dropGone() {
	if t.stored == nil {
		return
	}
	for p := range t.stored.Files {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			delete(t.stored.Files, p)
		}
	}
	for p := range t.stored.Runs {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			delete(t.stored.Runs, p)
		}
	}
}

// skipRun counts a run (a main output or a report of its own) left waiting past MaxRuns.
func (t *Tailer) skipRun(path string) {
	t.skipped++
	if t.skipped == 1 || t.skipped%1000 == 0 {
		t.logger.Warn("rollouts: more runs than the receiver follows at once; the rest wait", zap.Int("max_runs", MaxRuns), zap.String("path", path), zap.Int64("waiting_so_far", t.skipped))
	}
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
func (t *Tailer) matchMains() []string {
	return follow.Match(t.opts.Include, t.opts.Exclude, func(path string) bool {
		if !isMainOutput(path) {
			return false
		}
		fi, err := os.Stat(path)
		return err == nil && fi.Mode().IsRegular()
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
func (t *Tailer) restoreRun(r *run) {
	if t.stored == nil {
		return
	}
	if sr, ok := t.stored.Runs[r.path]; ok {
		delete(t.stored.Runs, r.path) // used once, as a file's offset
		r.fixed, r.runID = true, sr.RunID
	}
}

// newRun forgets the run's resource: the next row chooses it again.
func (r *run) newRun() {
	r.fixed, r.runID, r.stream = false, "", nil
}

// paths returns the files of a run: main output, sidecar, report ("" where the run has none).
func (t *Tailer) paths(r *run) [3]string {
	if r.report {
		return [3]string{"", "", r.path}
	}
	stem := strings.TrimSuffix(r.path, ".jsonl")
	var out [3]string
	out[Main] = r.path
	out[Failures] = stem + failuresSuffix
	if t.owner[filepath.Dir(r.path)] == r.path {
		out[Verdicts] = filepath.Join(filepath.Dir(r.path), verdictsName)
	}
	return out
}

// followRun opens the run's files that appeared, reads each, and handles a file that was
// replaced (a new inode at the path: the old one is read to its end first) or removed.
func (t *Tailer) followRun(r *run, first, gone bool) {
	paths := t.paths(r)
	for k, path := range paths {
		f := r.files[k]
		if gone || path == "" {
			if f != nil {
				t.read(r, f, true)
			}
			continue
		}
		fi, err := os.Stat(path)
		switch {
		case err != nil || !fi.Mode().IsRegular():
			if f != nil { // removed or renamed away: what it holds is read, then it is let go
				t.read(r, f, true)
				_ = f.Close()
				r.files[k] = nil
			}
			continue
		case f != nil && f.ID != follow.IDOf(fi):
			t.read(r, f, true)
			_ = f.Close()
			r.files[k] = nil
			f = nil
		}
		if f == nil {
			nf, replaced, err := t.open(Kind(k), path, first)
			if err != nil {
				if t.logs.Allow(t.now()) { // retried every poll: the log is rate-limited
					t.logger.Warn("rollouts: cannot follow file", zap.String("path", path), zap.Error(err))
				}
				continue
			}
			if k == int(Main) && (replaced || r.stream != nil) {
				r.newRun() // another main output at the path: a new run, its resource chosen anew
			}
			r.files[k] = nf
			f = nf
		}
		t.read(r, f, false)
	}
}

// open starts following a file: from its stored offset when the store knows its path and its
// head is unchanged; from the end (after its last complete row) when it was there at start-up,
// start_at is end and the store is empty; from the beginning otherwise.
func (t *Tailer) open(kind Kind, path string, first bool) (rf *rowFile, replaced bool, err error) {
	f, size, err := follow.Open(path)
	if err != nil {
		return nil, false, err
	}
	rf = &rowFile{File: f, kind: kind}
	var entry *follow.Stored
	var lines int64
	if t.stored != nil {
		if sf, ok := t.stored.Files[path]; ok {
			delete(t.stored.Files, path) // used once: a file that comes back later is new
			entry, lines = &follow.Stored{Head: sf.Head, Offset: sf.Offset}, sf.Lines
		}
	}
	// start_at end: after the last newline (0 when there is none): rows can be of any size.
	atEnd := first && t.stored == nil && !t.opts.StartAtBeginning
	start, err := f.Begin(size, entry, atEnd, -1, t.rd.Buffer())
	switch {
	case err != nil:
		_ = f.Close()
		return nil, false, err
	case start == follow.Resumed:
		rf.lines, rf.noLines = max(lines, 0), lines < 0
	case entry != nil:
		return rf, true, nil // another file at the path now
	case start == follow.AtEnd:
		rf.noLines = true // rows are logged by offset
	}
	return rf, false, nil
}

// read applies the complete rows a file holds past its offset. A file that shrank or whose
// head changed (copy-truncate, or rewritten in place) is read again from the start. last: the
// file is let go after this read, so a row without its newline will never be finished.
func (t *Tailer) read(r *run, f *rowFile, last bool) {
	fi, err := f.F.Stat()
	if err != nil {
		return
	}
	if f.Replaced(fi.Size()) {
		t.logger.Info("rollouts: file was truncated or replaced; reading it from the start", zap.String("path", f.Path))
		f.lines, f.scanned, f.noLines = 0, 0, false
		if f.kind == Main {
			r.newRun() // the main output written again: a new run
		}
	}
	size := fi.Size()
	if size > f.Offset && f.scanned > f.Offset {
		// A row is being written: wait for its newline with a bare scan before reading it.
		nl, scanned, err := findNewline(f.F, f.scanned, size, t.rd)
		if err != nil {
			t.logger.Warn("rollouts: read failed", zap.String("path", f.Path), zap.Error(err))
			return
		}
		f.scanned = scanned
		if !nl {
			if last {
				t.partial(f)
			}
			return
		}
	}
	if size > f.Offset {
		t.rd.Reset(io.NewSectionReader(f.F, f.Offset, size-f.Offset), f.Offset, f.lines, t.opts.MaxLineBytes)
		for {
			err := t.rd.Next(f.kind, &t.row)
			if errors.Is(err, io.EOF) {
				f.scanned = 0
				break
			}
			if errors.Is(err, ErrIncomplete) {
				f.scanned = t.rd.Scanned()
				if last {
					t.partial(f)
				}
				break
			}
			// Next returns its *RowError unwrapped; errors.As would move a variable to the heap
			// for every row.
			if re, ok := err.(*RowError); ok { //nolint:errorlint // see above
				t.reject(f, t.rd.Lines(), re)
			} else if err == nil {
				t.apply(r, f)
			}
			f.Offset, f.lines = t.rd.Offset(), t.rd.Lines()
			t.mu.Yield() // the state is whole here: every row applied has its offset
		}
		if err := t.rd.Err(); err != nil {
			t.logger.Warn("rollouts: read failed", zap.String("path", f.Path), zap.Error(err))
		}
	}
	f.GrowHead()
}

// partial counts a last row that its file was let go before its newline.
func (t *Tailer) partial(f *rowFile) {
	t.stats.Rejected[ingest.ReasonPartialLine]++
	if t.logs.Allow(t.now()) {
		t.logger.Warn("rollouts: the file was let go with a row not complete", zap.String("path", f.Path), zap.Int64("offset", f.Offset))
	}
}

// apply fixes the run's resource before its first row, then applies the row's events.
func (t *Tailer) apply(r *run, f *rowFile) {
	if r.stream == nil {
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
		r.stream = t.agg.NewStream(0, Resource(r.path, r.runID))
	}
	n := t.row.Events(f.kind, &t.evs)
	for i := range n {
		r.stream.Apply(&t.evs[i])
	}
	t.stats.Accepted++
	t.stats.Overflowed += r.stream.Stats.Overflowed
	r.stream.Stats.Overflowed = 0
}

// manifestRunID is the run_id of STEM_manifest.json, "" when it is not there or says none.
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
	var m struct {
		RunID any `json:"run_id"`
	}
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	s, _ := m.RunID.(string)
	return s
}

func (t *Tailer) reject(f *rowFile, line int64, re *RowError) {
	t.stats.Rejected[re.Reason]++
	if !t.logs.Allow(t.now()) {
		return
	}
	fields := []zap.Field{zap.String("path", f.Path), zap.String("reason", re.Reason), zap.String("error", re.Msg)}
	if !f.noLines {
		fields = append(fields, zap.Int64("line", line))
	} else {
		fields = append(fields, zap.Int64("offset", f.Offset))
	}
	if n := t.logs.TakeSuppressed(); n > 0 {
		fields = append(fields, zap.Int64("not_logged_before", n))
	}
	t.logger.Warn("rollouts: row rejected", fields...)
}

func (t *Tailer) flush() {
	if t.record != nil {
		t.record(&t.stats)
	}
	t.stats.Clear()
}

func (t *Tailer) encode() []byte {
	st := rolloutState{Files: map[string]storedRowFile{}, Runs: map[string]storedRun{}}
	for _, r := range t.runs {
		if r.fixed {
			st.Runs[r.path] = storedRun{RunID: r.runID}
		}
		for _, f := range r.files {
			if f != nil && len(f.Head) > 0 {
				sf := storedRowFile{Head: follow.HeadKey(f.Head), Offset: f.Offset, Lines: f.lines}
				if f.noLines {
					sf.Lines = -1
				}
				st.Files[f.Path] = sf
			}
		}
	}
	// The stored entries of files and runs not opened yet stand until they are.
	if t.stored != nil {
		for p, sf := range t.stored.Files {
			if _, ok := st.Files[p]; !ok {
				st.Files[p] = sf
			}
		}
		for p, sr := range t.stored.Runs {
			if _, ok := st.Runs[p]; !ok {
				st.Runs[p] = sr
			}
		}
	}
	data, _ := json.Marshal(st)
	return data
}

func (t *Tailer) save(ctx stdcontext.Context) {
	if t.opts.Store == nil {
		return
	}
	data := t.encode()
	if err := t.opts.Store.Save(ctx, data); err != nil {
		t.logger.Warn("rollouts: saving offsets failed; a restart may read some rows again", zap.Error(err))
	}
}

// findNewline scans f from `from` to `to` for a newline with the bare byte search, through the
// reader's buffer: found, and how far it scanned.
func findNewline(f io.ReaderAt, from, to int64, rd *RowDecoder) (bool, int64, error) {
	buf := rd.Buffer()
	for from < to {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), to-from)], from)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return true, from + int64(i), nil
		}
		from += int64(n)
		if err != nil && !errors.Is(err, io.EOF) {
			return false, from, err
		}
		if n == 0 {
			break
		}
	}
	return false, from, nil
}
