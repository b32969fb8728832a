package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/follow"
)

// OffsetStore keeps the read offsets of the file transport across restarts (the Collector's
// storage extension, behind the receiver).
type OffsetStore = follow.OffsetStore

// FilesOptions configure the file transport.
type FilesOptions struct {
	Include, Exclude []string
	StartAtBeginning bool
	PollInterval     time.Duration
	MaxLineBytes     int
	// MaxFiles bounds the files followed at once; more are counted and left for later polls.
	MaxFiles int
	Store    OffsetStore // nil: offsets are not kept across restarts
}

// FileTailer follows files named by globs: each file is one stream of lines. It reads files
// as they grow, keeps reading a file renamed away (rotation by rename) to its end, starts a
// file again when it shrinks or its head changes (copy-truncate), and picks up new files.
// Every poll reads what is there, so a slow aggregator slows the reading, never the memory.
type FileTailer struct {
	opts      FilesOptions
	newStream NewStream
	record    Recorder
	logger    *zap.Logger

	files   map[follow.FileID]*tailedFile
	stored  map[string]storedFile // fingerprint (hex) -> where to resume, from the store
	polls   int
	skipped int64 // files over MaxFiles, for the log

	loop follow.Poller
	mu   sync.Mutex // serialises polls (the loop, and the last one at shutdown)
}

// storedFile is what the store keeps of a file: the offset through its last complete line,
// and the resource line its stream was under there (so a resumed file goes on under it).
type storedFile struct {
	Offset   int64  `json:"offset"`
	Resource string `json:"resource,omitempty"`
}

// tailedFile is a followed file (its Offset: the bytes handed to the line reader).
type tailedFile struct {
	*follow.File
	lr   *lineReader
	seen int // the poll that last found the path matching
}

// committed is the offset through the last complete line: where a restart resumes.
func (t *tailedFile) committed() int64 { return t.Offset - int64(t.lr.end-t.lr.start) }

// NewFileTailer returns a file tailer whose files' lines go to the streams newStream makes,
// one per file (for the source of the file's path); Start begins polling.
func NewFileTailer(newStream NewStream, opts FilesOptions, record Recorder, logger *zap.Logger) *FileTailer {
	return &FileTailer{opts: opts, newStream: newStream, record: record, logger: logger, files: map[follow.FileID]*tailedFile{}}
}

// Start loads the stored offsets, polls once, and keeps polling in the background.
func (t *FileTailer) Start(ctx context.Context) error {
	if err := follow.CheckGlobs("files", t.opts.Include, t.opts.Exclude); err != nil {
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
	t.poll(ctx)
	t.loop.Start(t.opts.PollInterval, t.poll)
	return nil
}

// Shutdown stops polling, reads what the files hold once more, keeps the offsets and closes
// the files. Partial last lines stay unread: a restart with storage resumes before them.
func (t *FileTailer) Shutdown(ctx context.Context) error {
	if !t.loop.Stop() {
		return nil // not started, or already shut down
	}
	t.poll(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, f := range t.files {
		f.lr.flush()
		_ = f.Close()
		delete(t.files, id)
	}
	return nil
}

// Locker is the lock the tailer holds while it applies lines and saves their offsets (one
// poll): a checkpoint taken under it has the offsets of exactly the lines applied.
func (t *FileTailer) Locker() sync.Locker { return &t.mu }

// poll finds the files, reads each, forgets those gone, and saves the offsets.
func (t *FileTailer) poll(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.polls++
	first := t.polls == 1
	waiting := false
	for _, path := range follow.Match(t.opts.Include, t.opts.Exclude, nil) {
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		id := follow.IDOf(fi)
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
			f.lr.finish()
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
func (t *FileTailer) open(path string, first bool) error {
	f, size, err := follow.Open(path)
	if err != nil {
		return err
	}
	var resource string
	if key, sf, ok := t.lookupStored(f.Head); ok && sf.Offset <= size {
		f.Offset, resource = sf.Offset, sf.Resource
		delete(t.stored, key) // used once: from now on the open file's own entry stands for it
	} else if first && t.stored == nil && !t.opts.StartAtBeginning {
		// After the last newline of the last max+1 bytes (else at the end).
		from := max(0, size-int64(t.opts.MaxLineBytes)-1)
		off, found, err := follow.AfterLastNewline(f.F, from, size, make([]byte, size-from))
		if err != nil {
			_ = f.Close()
			return err
		}
		f.Offset = size
		if found {
			f.Offset = off
		}
	}
	st := t.newStream(path)
	if resource != "" {
		if err := st.Restore([]byte(resource)); err != nil {
			t.logger.Warn("files: the stored resource line is unreadable; resuming on the default resource", zap.String("path", path), zap.Error(err))
		}
	}
	t.files[f.ID] = &tailedFile{File: f, seen: t.polls, lr: newLineReader(st, t.opts.MaxLineBytes, t.record)}
	return nil
}

// lookupStored finds the stored offset of a file by its head: the stored head is a prefix of
// the file's head (the file may have grown since).
func (t *FileTailer) lookupStored(fp []byte) (string, storedFile, bool) {
	if len(fp) == 0 {
		return "", storedFile{}, false
	}
	for key, sf := range t.stored {
		if follow.HasHead(fp, key) {
			return key, sf, true
		}
	}
	return "", storedFile{}, false
}

// read reads a file from its offset to its end, starting it again when it was truncated or
// its head changed (copy-truncate).
func (t *FileTailer) read(f *tailedFile) {
	fi, err := f.F.Stat()
	if err != nil {
		return
	}
	if f.Replaced(fi.Size()) {
		t.logger.Info("files: file was truncated or replaced; reading it from the start", zap.String("path", f.Path))
		f.lr.start, f.lr.end, f.lr.skip = 0, 0, false
	}
	if fi.Size() == f.Offset {
		return
	}
	before := f.lr.read
	err = f.lr.readFrom(io.NewSectionReader(f.F, f.Offset, fi.Size()-f.Offset))
	f.Offset += f.lr.read - before
	if err != nil {
		t.logger.Warn("files: read failed", zap.String("path", f.Path), zap.Error(err))
	}
	f.GrowHead()
}

// save keeps, for each followed file, its head and the offset through its last complete line.
// While files wait past max_files (waiting), the stored entries not in use are kept too: a
// waiting file known to the store resumes at its offset when its turn comes, instead of being
// read again from its start. Once no file waits, an entry not in use is a file gone, and goes.
func (t *FileTailer) save(ctx context.Context, waiting bool) {
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
			m[follow.HeadKey(f.Head)] = storedFile{Offset: f.committed(), Resource: string(f.lr.st.ResourceLine())}
		}
	}
	data, _ := json.Marshal(m)
	if err := t.opts.Store.Save(ctx, data); err != nil {
		t.logger.Warn("files: saving offsets failed; a restart may read some lines again", zap.Error(err))
		return
	}
	t.stored = m
}
