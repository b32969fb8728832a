package transport

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// OffsetStore keeps the read offsets of the file transport across restarts (the Collector's
// storage extension, behind the receiver).
type OffsetStore interface {
	Load(ctx context.Context) ([]byte, error)
	Save(ctx context.Context, data []byte) error
}

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

// fingerprintBytes is how much of a file's head identifies it across renames and restarts.
const fingerprintBytes = 1024

// FileTailer follows files named by globs: each file is one stream of lines. It reads files
// as they grow, keeps reading a file renamed away (rotation by rename) to its end, starts a
// file again when it shrinks or its head changes (copy-truncate), and picks up new files.
// Every poll reads what is there, so a slow aggregator slows the reading, never the memory.
type FileTailer struct {
	opts      FilesOptions
	newStream NewStream
	record    Recorder
	logger    *zap.Logger

	files   map[fileID]*tailedFile
	stored  map[string]storedFile // fingerprint (hex) -> where to resume, from the store
	polls   int
	skipped int64 // files over MaxFiles, for the log

	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex // serialises polls (the loop, and the last one at shutdown)
}

type fileID struct{ dev, ino uint64 }

// storedFile is what the store keeps of a file: the offset through its last complete line,
// and the resource line its stream was under there (so a resumed file goes on under it).
type storedFile struct {
	Offset   int64  `json:"offset"`
	Resource string `json:"resource,omitempty"`
}

type tailedFile struct {
	path   string
	f      *os.File
	fp     []byte // the head of the file when last checked
	offset int64  // bytes handed to the line reader
	lr     *lineReader
	seen   int // the poll that last found the path matching
}

// committed is the offset through the last complete line: where a restart resumes.
func (t *tailedFile) committed() int64 { return t.offset - int64(t.lr.end-t.lr.start) }

// NewFileTailer returns a file tailer whose files' lines go to the streams newStream makes,
// one per file (for the source of the file's path); Start begins polling.
func NewFileTailer(newStream NewStream, opts FilesOptions, record Recorder, logger *zap.Logger) *FileTailer {
	return &FileTailer{opts: opts, newStream: newStream, record: record, logger: logger, files: map[fileID]*tailedFile{}}
}

// Start loads the stored offsets, polls once, and keeps polling in the background.
func (t *FileTailer) Start(ctx context.Context) error {
	for _, p := range append(append([]string{}, t.opts.Include...), t.opts.Exclude...) {
		if _, err := filepath.Match(p, ""); err != nil {
			return fmt.Errorf("files: bad glob %q: %w", p, err)
		}
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
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	t.poll(ctx)
	go t.loop()
	return nil
}

func (t *FileTailer) loop() { pollEvery(t.opts.PollInterval, t.stop, t.done, t.poll) }

// pollEvery calls poll every interval until stop is closed, then closes done: the loop of a
// source that follows files (events, rollouts, console lines).
func pollEvery(interval time.Duration, stop <-chan struct{}, done chan<- struct{}, poll func(context.Context)) {
	defer close(done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			poll(context.Background())
		}
	}
}

// Shutdown stops polling, reads what the files hold once more, keeps the offsets and closes
// the files. Partial last lines stay unread: a restart with storage resumes before them.
func (t *FileTailer) Shutdown(ctx context.Context) error {
	if t.stop == nil {
		return nil
	}
	select {
	case <-t.stop:
		return nil // already shut down
	default:
	}
	close(t.stop)
	<-t.done
	t.poll(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, f := range t.files {
		f.lr.flush()
		_ = f.f.Close()
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
	for _, path := range t.match() {
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		id := idOf(fi)
		if f, ok := t.files[id]; ok {
			f.path, f.seen = path, t.polls // renamed within the globs: the same stream goes on
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
		if err := t.open(path, id, first); err != nil {
			t.logger.Warn("files: cannot follow file", zap.String("path", path), zap.Error(err))
		}
	}
	for id, f := range t.files {
		t.read(f)
		if f.seen < t.polls-1 {
			// Renamed away or deleted a poll ago, so a writer that had it open has moved on:
			// it was read to its end above, and a partial last line will never be finished.
			f.lr.finish()
			_ = f.f.Close()
			delete(t.files, id)
		}
	}
	t.save(ctx, waiting)
}

func (t *FileTailer) match() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range t.opts.Include {
		paths, _ := filepath.Glob(p) // patterns were checked at Start
	next:
		for _, path := range paths {
			if seen[path] {
				continue
			}
			seen[path] = true
			for _, x := range t.opts.Exclude {
				if ok, _ := filepath.Match(x, path); ok {
					continue next
				}
			}
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

func idOf(fi os.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: st.Ino} //nolint:unconvert // Dev's type differs by platform
	}
	return fileID{}
}

// open starts following a file: from a stored offset when the store knows its head; from the
// end (after its last complete line) when it was there at start-up and start_at is end; from
// the beginning otherwise (a file that appears while the collector runs, or while it was down
// with storage).
func (t *FileTailer) open(path string, id fileID, first bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	fp, err := head(f)
	if err != nil {
		_ = f.Close()
		return err
	}
	var offset int64
	var resource string
	if key, sf, ok := t.lookupStored(fp); ok && sf.Offset <= fi.Size() {
		offset, resource = sf.Offset, sf.Resource
		delete(t.stored, key) // used once: from now on the open file's own entry stands for it
	} else if first && t.stored == nil && !t.opts.StartAtBeginning {
		offset, err = afterLastNewline(f, fi.Size(), t.opts.MaxLineBytes)
		if err != nil {
			_ = f.Close()
			return err
		}
	}
	st := t.newStream(path)
	if resource != "" {
		if err := st.Restore([]byte(resource)); err != nil {
			t.logger.Warn("files: the stored resource line is unreadable; resuming on the default resource", zap.String("path", path), zap.Error(err))
		}
	}
	t.files[id] = &tailedFile{
		path: path, f: f, fp: fp, offset: offset, seen: t.polls,
		lr: newLineReader(st, t.opts.MaxLineBytes, t.record),
	}
	return nil
}

func head(f *os.File) ([]byte, error) {
	b := make([]byte, fingerprintBytes)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}

// lookupStored finds the stored offset of a file by its head: the stored head is a prefix of
// the file's head (the file may have grown since).
func (t *FileTailer) lookupStored(fp []byte) (string, storedFile, bool) {
	if len(fp) == 0 {
		return "", storedFile{}, false
	}
	for key, sf := range t.stored {
		k, err := hex.DecodeString(key)
		if err == nil && len(k) > 0 && bytes.HasPrefix(fp, k) {
			return key, sf, true
		}
	}
	return "", storedFile{}, false
}

// afterLastNewline returns the offset just after the last newline of the file's last
// max+1 bytes: start_at end begins after the last complete line, so the line being written
// at start-up is read whole, never from its middle.
func afterLastNewline(f *os.File, size int64, max int) (int64, error) {
	from := max64(0, size-int64(max)-1)
	b := make([]byte, size-from)
	if _, err := f.ReadAt(b, from); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return from + int64(i) + 1, nil
	}
	return size, nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// read reads a file from its offset to its end, starting it again when it was truncated or
// its head changed (copy-truncate).
func (t *FileTailer) read(f *tailedFile) {
	fi, err := f.f.Stat()
	if err != nil {
		return
	}
	if fi.Size() < f.offset || !sameHead(f.f, f.fp) {
		t.logger.Info("files: file was truncated or replaced; reading it from the start", zap.String("path", f.path))
		f.offset = 0
		f.lr.start, f.lr.end, f.lr.skip = 0, 0, false
		f.fp, _ = head(f.f)
	}
	if fi.Size() == f.offset {
		return
	}
	before := f.lr.read
	err = f.lr.readFrom(io.NewSectionReader(f.f, f.offset, fi.Size()-f.offset))
	f.offset += f.lr.read - before
	if err != nil {
		t.logger.Warn("files: read failed", zap.String("path", f.path), zap.Error(err))
	}
	if len(f.fp) < fingerprintBytes && f.offset > int64(len(f.fp)) {
		f.fp, _ = head(f.f)
	}
}

// sameHead reports whether the file still starts with the bytes fp it started with.
func sameHead(f *os.File, fp []byte) bool {
	if len(fp) == 0 {
		return true
	}
	b := make([]byte, len(fp))
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return true // cannot tell; keep going
	}
	return n == len(fp) && bytes.Equal(b, fp)
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
		if len(f.fp) > 0 {
			m[hex.EncodeToString(f.fp)] = storedFile{Offset: f.committed(), Resource: string(f.lr.st.ResourceLine())}
		}
	}
	data, _ := json.Marshal(m)
	if err := t.opts.Store.Save(ctx, data); err != nil {
		t.logger.Warn("files: saving offsets failed; a restart may read some lines again", zap.Error(err))
		return
	}
	t.stored = m
}
