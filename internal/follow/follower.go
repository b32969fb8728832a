package follow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

// Follower follows files named by globs, each file with its own Reader. It reads files as they
// grow, reads a file let go (renamed away, removed, replaced at its path) to its end, starts a
// file again when it shrinks or its head changes (copy-truncate), and picks up new files.
// Every poll reads what is there, so a slow consumer slows the reading, never the memory. It
// is the one loop of every source that follows files: the events files (transport.FileTailer),
// gym_console's files, and the rollouts source, which injects its targets (the files of its
// runs), its identity (by path), its codec and a lock its reader yields.
type Follower struct {
	opts      Options
	name      string
	lines     string
	newReader NewReader
	logger    *zap.Logger
	codec     Codec
	mu        Lock
	yield     func() // mu.Yield, made once
	pulled    bool   // the store pulls the offsets (Offsets): a poll does not save them

	files        map[fileKey]*tailedFile
	stored       map[string]Stored // from the store: where to resume a file, by key
	held         bool              // the store held offsets at Start: start_at end does not apply
	loaded       bool              // Start has read the store: Offsets stand for the source
	closed       bool              // Shutdown saved the last offsets and let the files go
	more         bool              // the last poll left a file with more than its budget to read
	budget       int64             // what a poll reads of a file at most
	polls        int
	waiting      int             // files the last whole poll left waiting past MaxFiles
	pollWaiting  int             // files of the poll under way waiting so far
	polling      bool            // a poll is under way (a checkpoint may come in where it yields)
	firstWaiting string          // the first of them, for the log
	waitLog      ratelog.Limiter // a line a minute while files wait
	// refused: the paths not followed, by path: their reason and the last poll that refused them.
	refused map[string]refusal
	scan    []byte
	gone    []*tailedFile

	loop Poller
}

// fileKey is an open file's key: its identity (ByHead) or its path (ByPath).
type fileKey struct {
	id   FileID
	path string
}

// tailedFile is a followed file (its Offset: the bytes handed to the reader).
type tailedFile struct {
	*File
	rd   Reader
	key  fileKey
	seen int // the poll that last found it among the targets
	rank int // its place among them then: files let go are read in that order
}

// committed is the offset through the last complete line: where a restart resumes.
func (t *tailedFile) committed() int64 { return t.Offset - t.rd.Pending() }

// NewFollower returns a follower whose files' bytes go to the readers newReader makes, one per
// file; Start begins polling. A PulledStore is joined here.
func NewFollower(newReader NewReader, opts Options, logger *zap.Logger) *Follower {
	t := &Follower{
		opts: opts, name: opts.Name, lines: opts.Lines, newReader: newReader, logger: logger,
		codec: opts.Codec, mu: opts.Lock, files: map[fileKey]*tailedFile{},
		waitLog: ratelog.Limiter{Burst: 1, Every: time.Minute}, budget: cmp.Or(opts.ReadBudget, DefaultReadBudget),
	}
	if t.name == "" {
		t.name = "files"
	}
	if t.lines == "" {
		t.lines = "lines"
	}
	if t.codec == nil {
		t.codec = headCodec{}
		if opts.Identity == ByPath {
			t.codec = pathCodec{}
		}
	}
	if t.mu == nil {
		t.mu = &mutexLock{}
	}
	t.yield = t.mu.Yield
	if p, ok := opts.Store.(PulledStore); ok {
		p.Pull(t.Locker(), t.Offsets)
		t.pulled = true
	}
	return t
}

// Start loads the stored offsets, polls once, and keeps polling in the background.
func (t *Follower) Start(ctx context.Context) error {
	if err := CheckGlobs(t.name, t.opts.Include, t.opts.Exclude); err != nil {
		return err
	}
	var data []byte
	if t.opts.Store != nil {
		var err error
		// Not under the lock: a checkpoint holds the store's lock while it waits for ours.
		if data, err = t.opts.Store.Load(ctx); err != nil {
			return fmt.Errorf("%s: reading stored offsets: %w", t.name, err)
		}
	}
	t.mu.Lock()
	if len(data) > 0 {
		stored, err := t.codec.Decode(data)
		if err != nil {
			t.logger.Warn(t.name+": stored offsets are unreadable; starting without them", zap.Error(err))
		} else {
			t.stored, t.held = stored, stored != nil
		}
	}
	t.loaded = true
	t.mu.Unlock()
	more := t.pollAgain(ctx)
	t.loop.Start(t.opts.PollInterval, t.pollAgain, more)
	return nil
}

// Shutdown stops polling, reads what the files hold once more, keeps the offsets and closes
// the files. Partial last lines stay unread: a restart with storage resumes before them.
func (t *Follower) Shutdown(ctx context.Context) error {
	if !t.loop.Stop() {
		return nil // not started, or already shut down
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.poll(ctx, true) // saves: the offsets the final checkpoint keeps
	t.closed = true
	for key, f := range t.files {
		f.rd.Flush()
		_ = f.Close()
		delete(t.files, key)
	}
	return nil
}

// Locker is the lock a checkpoint holds while it takes the offsets and the state they are the
// offsets of. It waits for the follower between two polls, or where its reader yields.
func (t *Follower) Locker() sync.Locker { return t.mu.Checkpoint() }

// Offsets returns, with Locker held, the offsets of exactly what was applied so far, in the
// store's format. Before Start has read the store, and after Shutdown saved its last offsets,
// it has none of its own (false): the store keeps what it has.
func (t *Follower) Offsets() ([]byte, bool) {
	if !t.loaded || t.closed {
		return nil, false
	}
	return t.codec.Encode(t.entries()), true
}

// Followed is how many files are followed.
func (t *Follower) Followed() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.files)
}

// Poll finds the files, reads each, lets go of those gone, and saves the offsets unless the
// store pulls them. The loop calls it every PollInterval; a test may call it by hand.
func (t *Follower) Poll(ctx context.Context) {
	t.pollAgain(ctx)
}

// pollAgain is Poll, reporting whether a file was left with more to read than its budget.
func (t *Follower) pollAgain(ctx context.Context) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.poll(ctx, false)
	return t.more
}

func (t *Follower) poll(ctx context.Context, final bool) {
	t.polls++
	first := t.polls == 1
	t.pollWaiting, t.more, t.polling = 0, false, true
	for i, path := range t.targets(first) {
		fi, ok := t.Regular(path)
		if !ok {
			continue // a file followed there is let go below
		}
		f := t.find(path, fi)
		if f != nil && f.seen == t.polls {
			continue // found again under another name (a link): read once
		}
		if f == nil {
			if t.opts.MaxFiles > 0 && len(t.files) >= t.opts.MaxFiles {
				if t.pollWaiting == 0 {
					t.firstWaiting = path
				}
				t.pollWaiting++
				continue
			}
			var err error
			if f, err = t.open(path, first); err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					t.refuse(path, RefusalCannotOpen, err)
				}
				continue
			}
		}
		f.Path, f.seen, f.rank = path, t.polls, i // renamed within the globs: the same stream goes on
		if t.read(f, t.budget) {
			t.more = true
		}
	}
	t.letGo()
	t.forgetRefused()
	if first && t.opts.Identity == ByPath {
		t.dropGone()
	}
	t.waiting, t.polling = t.pollWaiting, false
	if t.waiting > 0 && t.waitLog.Allow(time.Now()) {
		t.logger.Warn(t.name+": more matching files than max_files; the rest wait until followed files go",
			zap.Int("max_files", t.opts.MaxFiles), zap.Int("waiting", t.waiting), zap.String("first_waiting", t.firstWaiting))
	}
	if t.opts.Waiting != nil {
		t.opts.Waiting(t.waiting)
	}
	if t.opts.EndPoll != nil {
		t.opts.EndPoll(first)
	}
	t.save(ctx, final)
}

// targets are the paths of a poll: the source's, or the globs' matches.
func (t *Follower) targets(first bool) []string {
	if t.opts.Targets != nil {
		return t.opts.Targets(first)
	}
	t.CheckGlobDirs(t.opts.Include)
	return Match(t.opts.Include, t.opts.Exclude, nil)
}

// find returns the open file at path, fi: by its identity (ByHead), or by its path (ByPath),
// where another inode at the path lets the open file go first (read to its end).
func (t *Follower) find(path string, fi os.FileInfo) *tailedFile {
	if t.opts.Identity == ByHead {
		return t.files[fileKey{id: IDOf(fi)}]
	}
	f := t.files[fileKey{path: path}]
	if f != nil && f.ID != IDOf(fi) {
		t.finish(f)
		return nil
	}
	return f
}

// letGo reads the files not among this poll's targets, in the order they were found, and lets
// them go: at once (ByPath), or a poll after they were last found (ByHead), so that a writer
// that had a file open when it was renamed away has moved on.
func (t *Follower) letGo() {
	t.gone = t.gone[:0]
	for _, f := range t.files {
		if f.seen != t.polls {
			t.gone = append(t.gone, f)
		}
	}
	if len(t.gone) == 0 {
		return
	}
	sort.Slice(t.gone, func(i, j int) bool {
		a, b := t.gone[i], t.gone[j]
		if a.seen != b.seen {
			return a.seen > b.seen
		}
		return a.rank < b.rank
	})
	for _, f := range t.gone {
		if t.opts.Identity == ByHead && f.seen == t.polls-1 {
			if t.read(f, t.budget) {
				t.more = true
			}
			continue
		}
		t.finish(f)
	}
	clear(t.gone)
}

// finish reads a file to its end and lets it go: a partial last line will never be finished.
func (t *Follower) finish(f *tailedFile) {
	t.read(f, math.MaxInt64)
	f.rd.Finish()
	_ = f.Close()
	delete(t.files, f.key)
}

// open starts following a file: from a stored offset when the store knows it (by its head, or
// by its path with the same head); from the end (after its last complete line) when it was
// there at start-up, start_at is end and the store held nothing; from the beginning otherwise
// (a file that appears while the collector runs, or while it was down with storage).
func (t *Follower) open(path string, first bool) (*tailedFile, error) {
	f, size, err := Open(path)
	if err != nil {
		return nil, err
	}
	key := fileKey{id: f.ID}
	var storeKey string
	var entry *Stored
	if t.opts.Identity == ByPath {
		key = fileKey{path: path}
		if sf, ok := t.stored[path]; ok {
			delete(t.stored, path) // used once: a file that comes back later is new
			storeKey, entry = path, &sf
		}
	} else if k, sf, ok := t.lookupStored(f.Head); ok {
		storeKey, entry = k, &sf
	}
	window := int64(t.opts.MaxLineBytes)
	if window <= 0 {
		window = -1
	}
	atEnd := first && !t.held && !t.opts.StartAtBeginning
	if atEnd && t.scan == nil {
		t.scan = make([]byte, 64<<10) // the scan back for the last newline, in windows
	}
	start, err := f.Begin(size, entry, atEnd, window, t.scan)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	opened := Opened{Start: start, Other: entry != nil && start != Resumed}
	rd := t.newReader(f, opened)
	if start == Resumed {
		delete(t.stored, storeKey) // used once: from now on the open file's own entry stands for it
		if len(entry.State) > 0 {
			if err := rd.Restore(entry.State); err != nil {
				t.logger.Warn(t.name+": the stored resource line is unreadable; resuming on the default resource", zap.String("path", path), zap.Error(err))
			}
		}
	}
	tf := &tailedFile{File: f, rd: rd, key: key}
	t.files[key] = tf
	return tf, nil
}

// lookupStored finds the stored offset of a file by its head: the stored head is a prefix of
// the file's head (the file may have grown since).
func (t *Follower) lookupStored(fp []byte) (string, Stored, bool) {
	if len(fp) == 0 {
		return "", Stored{}, false
	}
	for key, sf := range t.stored {
		if HasHead(fp, key) {
			return key, sf, true
		}
	}
	return "", Stored{}, false
}

// read reads f on from its offset, at most budget bytes, starting it again when it was
// truncated or its head changed (copy-truncate), and reports whether it holds more.
func (t *Follower) read(f *tailedFile, budget int64) (more bool) {
	fi, err := f.F.Stat()
	if err != nil {
		return false
	}
	if f.Replaced(fi.Size()) {
		t.logger.Info(t.name+": file was truncated or replaced; reading it from the start", zap.String("path", f.Path))
		f.rd.Discard()
	}
	if fi.Size() == f.Offset {
		return false
	}
	end := fi.Size()
	if end-f.Offset > budget {
		end, more = f.Offset+budget, true
	}
	if err := f.rd.Read(f.File, end, t.yield); err != nil {
		t.logger.Warn(t.name+": read failed", zap.String("path", f.Path), zap.Error(err))
		more = false
	}
	f.GrowHead()
	return more
}

// dropGone forgets the stored offsets of files gone at the first poll (deleted while the
// collector was down), so that the offsets carried over for files not opened yet cannot pile
// up across restarts.
func (t *Follower) dropGone() {
	for p := range t.stored {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			delete(t.stored, p)
		}
	}
}

// entries is what the store keeps: for each followed file, its head, the offset through its
// last complete line and its reader's state, and the stored entries of files not opened yet:
// always by path (they stand until their file is opened, or gone at a start); by head, only
// while files wait past max_files (a waiting file known to the store resumes at its offset
// when its turn comes, instead of being read again from its start; once none waits, an entry
// not in use is a file gone).
func (t *Follower) entries() map[string]Stored {
	m := make(map[string]Stored, len(t.files))
	// Before the first poll (a checkpoint after Start read the store), the stored entries are
	// all there is; during a poll (a checkpoint where a reader yields) the files not reached
	// yet may still be opened from theirs, and whether some wait is known only at its end.
	if t.opts.Identity == ByPath || t.waiting > 0 || t.polling || t.polls == 0 {
		for key, sf := range t.stored {
			m[key] = sf
		}
	}
	for _, f := range t.files {
		// A file empty when it was opened has no head until its read ends; a checkpoint where
		// its reader yields, mid-read, needs it (without it, the lines applied would be read
		// again after a restart). The reader waits meanwhile.
		f.GrowHead()
		if len(f.Head) == 0 {
			continue
		}
		key := f.Path
		if t.opts.Identity == ByHead {
			key = HeadKey(f.Head)
		}
		m[key] = Stored{Head: HeadKey(f.Head), Offset: f.committed(), State: f.rd.State()}
	}
	return m
}

// save keeps the offsets at the end of a poll: in a store that does not pull them, at every
// poll; in one that does, only at the last (Shutdown's), for the final checkpoint.
func (t *Follower) save(ctx context.Context, final bool) {
	if t.opts.Store == nil {
		return
	}
	m := t.entries()
	if t.pulled && !final {
		if t.opts.Identity == ByHead {
			t.stored = m // as saved: what Offsets gives the next checkpoint
		}
		return
	}
	if err := t.opts.Store.Save(ctx, t.codec.Encode(m)); err != nil {
		t.logger.Warn(t.name+": saving offsets failed; a restart may read some "+t.lines+" again", zap.Error(err))
		return
	}
	if t.opts.Identity == ByHead {
		t.stored = m
	}
}

// headCodec is the events files' format: by head (hex), the offset through the last complete
// line and the resource line its stream was under there (so a resumed file goes on under it).
type headCodec struct{}

type storedFile struct {
	Offset   int64  `json:"offset"`
	Resource string `json:"resource,omitempty"`
}

func (headCodec) Decode(data []byte) (map[string]Stored, error) {
	var m map[string]storedFile
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, err // null: nothing stored
	}
	out := make(map[string]Stored, len(m))
	for key, sf := range m {
		var state []byte
		if sf.Resource != "" {
			state = []byte(sf.Resource)
		}
		out[key] = Stored{Head: key, Offset: sf.Offset, State: state}
	}
	return out, nil
}

func (headCodec) Encode(files map[string]Stored) []byte {
	m := make(map[string]storedFile, len(files))
	for key, sf := range files {
		m[key] = storedFile{Offset: sf.Offset, Resource: string(sf.State)}
	}
	data, _ := json.Marshal(m)
	return data
}

// pathCodec is a format by path: each file's Stored as JSON.
type pathCodec struct{}

func (pathCodec) Decode(data []byte) (map[string]Stored, error) {
	var m map[string]Stored
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, err
	}
	return m, nil
}

func (pathCodec) Encode(files map[string]Stored) []byte {
	data, _ := json.Marshal(files)
	return data
}

// modeName names a file type that is not a regular file.
func modeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "file of mode " + m.String()
}
