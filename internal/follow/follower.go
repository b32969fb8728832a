package follow

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Options configure a Follower.
type Options struct {
	Include, Exclude []string
	StartAtBeginning bool
	PollInterval     time.Duration
	// MaxLineBytes is the longest line: start_at end looks that far back for the last newline.
	MaxLineBytes int
	// MaxFiles bounds the files followed at once; more are counted and left for later polls.
	MaxFiles int
	Store    OffsetStore // nil: offsets are not kept across restarts
}

// Reader takes the bytes of one followed file for the source: it splits them into lines and
// emits them (the transports' line reader, in front of a decoder), as contrib's fileconsumer
// injects its split and emit functions.
type Reader interface {
	// ReadFrom reads r to its end and hands on every complete line. It returns the bytes read
	// and the error that ended the reading (nil at io.EOF).
	ReadFrom(r io.Reader) (int64, error)
	// Pending is how many of the bytes read belong to a line not complete yet: the offset a
	// restart resumes at is before them.
	Pending() int64
	// Discard forgets the line not complete yet (the file was truncated or replaced).
	Discard()
	// Finish ends the file: a line not complete will never be (it is counted as such), and
	// what the reader holds is handed on.
	Finish()
	// Flush hands on what the reader holds (at shutdown, the file still open).
	Flush()
	// State is what the stored offsets keep with the file to resume its reader (nil: nothing),
	// and Restore gives it back to the reader of the resumed file.
	State() []byte
	Restore(state []byte) error
}

// NewReader makes the Reader of the file at path.
type NewReader func(path string) Reader

// Follower follows files named by globs, each file with its own Reader. It reads files as they
// grow, keeps reading a file renamed away (rotation by rename) to its end, starts a file again
// when it shrinks or its head changes (copy-truncate), and picks up new files. Every poll reads
// what is there, so a slow consumer slows the reading, never the memory. Its offsets are kept
// by head (the fingerprint), saved at every poll under Locker. (The rollouts source follows
// the files of runs with the same pieces, File, Match and Poller, but its own loop.)
type Follower struct {
	opts      Options
	newReader NewReader
	logger    *zap.Logger

	files   map[FileID]*tailedFile
	stored  map[string]storedFile // fingerprint (hex) -> where to resume, from the store
	polls   int
	skipped int64 // files over MaxFiles, for the log

	loop Poller
	mu   sync.Mutex // serialises polls (the loop, and the last one at shutdown)
}

// storedFile is what the store keeps of a file: the offset through its last complete line,
// and the resource line its stream was under there (so a resumed file goes on under it).
type storedFile struct {
	Offset   int64  `json:"offset"`
	Resource string `json:"resource,omitempty"`
}

// tailedFile is a followed file (its Offset: the bytes handed to the reader).
type tailedFile struct {
	*File
	rd   Reader
	seen int // the poll that last found the path matching
}

// committed is the offset through the last complete line: where a restart resumes.
func (t *tailedFile) committed() int64 { return t.Offset - t.rd.Pending() }

// NewFollower returns a follower whose files' bytes go to the readers newReader makes, one per
// file; Start begins polling.
func NewFollower(newReader NewReader, opts Options, logger *zap.Logger) *Follower {
	return &Follower{opts: opts, newReader: newReader, logger: logger, files: map[FileID]*tailedFile{}}
}

// Start loads the stored offsets, polls once, and keeps polling in the background.
func (t *Follower) Start(ctx context.Context) error {
	if err := CheckGlobs("files", t.opts.Include, t.opts.Exclude); err != nil {
		return err
	}
	if t.opts.Store != nil {
		data, err := t.opts.Store.Load(ctx)
		if err != nil {
			return fmt.Errorf("files: reading stored offsets: %w", err)
		}
		if len(data) > 0 {
			if err := json.Unmarshal(data, &t.stored); err != nil {
				t.logger.Warn("files: stored offsets are unreadable; starting without them", zap.Error(err))
				t.stored = nil
			}
		}
	}
	t.Poll(ctx)
	t.loop.Start(t.opts.PollInterval, t.Poll)
	return nil
}

// Shutdown stops polling, reads what the files hold once more, keeps the offsets and closes
// the files. Partial last lines stay unread: a restart with storage resumes before them.
func (t *Follower) Shutdown(ctx context.Context) error {
	if !t.loop.Stop() {
		return nil // not started, or already shut down
	}
	t.Poll(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, f := range t.files {
		f.rd.Flush()
		_ = f.Close()
		delete(t.files, id)
	}
	return nil
}

// Locker is the lock the follower holds while it applies lines and saves their offsets (one
// poll): a checkpoint taken under it has the offsets of exactly the lines applied.
func (t *Follower) Locker() sync.Locker { return &t.mu }

// Followed is how many files are followed.
func (t *Follower) Followed() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.files)
}

// Poll finds the files, reads each, forgets those gone, and saves the offsets. The loop calls
// it every PollInterval; a test may call it by hand.
func (t *Follower) Poll(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.polls++
	first := t.polls == 1
	waiting := false
	for _, path := range Match(t.opts.Include, t.opts.Exclude, nil) {
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		id := IDOf(fi)
		if f, ok := t.files[id]; ok {
			f.Path, f.seen = path, t.polls // renamed within the globs: the same stream goes on
			continue
		}
		if len(t.files) >= t.opts.MaxFiles {
			waiting = true
			t.skipped++
			if t.skipped == 1 || t.skipped%1000 == 0 {
				t.logger.Warn("files: more matching files than max_files; the rest wait", zap.Int("max_files", t.opts.MaxFiles), zap.String("path", path))
			}
			continue
		}
		if err := t.open(path, first); err != nil {
			t.logger.Warn("files: cannot follow file", zap.String("path", path), zap.Error(err))
		}
	}
	for id, f := range t.files {
		t.read(f)
		if f.seen < t.polls-1 {
			// Renamed away or deleted a poll ago, so a writer that had it open has moved on:
			// it was read to its end above, and a partial last line will never be finished.
			f.rd.Finish()
			_ = f.Close()
			delete(t.files, id)
		}
	}
	t.save(ctx, waiting)
}

// open starts following a file: from a stored offset when the store knows its head; from the
// end (after its last complete line) when it was there at start-up and start_at is end; from
// the beginning otherwise (a file that appears while the collector runs, or while it was down
// with storage).
func (t *Follower) open(path string, first bool) error {
	f, size, err := Open(path)
	if err != nil {
		return err
	}
	var resource string
	key, sf, ok := t.lookupStored(f.Head)
	var entry *Stored
	if ok {
		entry = &Stored{Head: key, Offset: sf.Offset}
	}
	atEnd := first && t.stored == nil && !t.opts.StartAtBeginning
	start, err := f.Begin(size, entry, atEnd, int64(t.opts.MaxLineBytes), nil)
	if err != nil {
		_ = f.Close()
		return err
	}
	if start == Resumed {
		resource = sf.Resource
		delete(t.stored, key) // used once: from now on the open file's own entry stands for it
	}
	rd := t.newReader(path)
	if resource != "" {
		if err := rd.Restore([]byte(resource)); err != nil {
			t.logger.Warn("files: the stored resource line is unreadable; resuming on the default resource", zap.String("path", path), zap.Error(err))
		}
	}
	t.files[f.ID] = &tailedFile{File: f, seen: t.polls, rd: rd}
	return nil
}

// lookupStored finds the stored offset of a file by its head: the stored head is a prefix of
// the file's head (the file may have grown since).
func (t *Follower) lookupStored(fp []byte) (string, storedFile, bool) {
	if len(fp) == 0 {
		return "", storedFile{}, false
	}
	for key, sf := range t.stored {
		if HasHead(fp, key) {
			return key, sf, true
		}
	}
	return "", storedFile{}, false
}

// read reads a file from its offset to its end, starting it again when it was truncated or
// its head changed (copy-truncate).
func (t *Follower) read(f *tailedFile) {
	fi, err := f.F.Stat()
	if err != nil {
		return
	}
	if f.Replaced(fi.Size()) {
		t.logger.Info("files: file was truncated or replaced; reading it from the start", zap.String("path", f.Path))
		f.rd.Discard()
	}
	if fi.Size() == f.Offset {
		return
	}
	n, err := f.rd.ReadFrom(io.NewSectionReader(f.F, f.Offset, fi.Size()-f.Offset))
	f.Offset += n
	if err != nil {
		t.logger.Warn("files: read failed", zap.String("path", f.Path), zap.Error(err))
	}
	f.GrowHead()
}

// save keeps, for each followed file, its head and the offset through its last complete line.
// While files wait past max_files (waiting), the stored entries not in use are kept too: a
// waiting file known to the store resumes at its offset when its turn comes, instead of being
// read again from its start. Once no file waits, an entry not in use is a file gone, and goes.
func (t *Follower) save(ctx context.Context, waiting bool) {
	if t.opts.Store == nil {
		return
	}
	m := make(map[string]storedFile, len(t.files))
	if waiting {
		for key, sf := range t.stored {
			m[key] = sf
		}
	}
	for _, f := range t.files {
		if len(f.Head) > 0 {
			m[HeadKey(f.Head)] = storedFile{Offset: f.committed(), Resource: string(f.rd.State())}
		}
	}
	data, _ := json.Marshal(m)
	if err := t.opts.Store.Save(ctx, data); err != nil {
		t.logger.Warn("files: saving offsets failed; a restart may read some lines again", zap.Error(err))
		return
	}
	t.stored = m
}
