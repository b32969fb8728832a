// Package follow holds what the sources that follow files share: matching the globs,
// identifying a file (its device and inode, and its head: the fingerprint that finds it again
// across renames and restarts), start_at end's seek past the last complete line, noticing a
// file truncated or replaced in place, the store of offsets, and Follower, the poll loop of
// every source that follows files: the events files tailer (transport.FileTailer, for the gym
// receiver and gym_console) and the rollouts source (rollouts.Source), which injects what
// differs (its targets, the identity of its files, its store's format, its lock and reader).
// What a line or a row means is theirs. It imports nothing of the engine.
package follow

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// OffsetStore keeps a source's read offsets across restarts (a checkpoint section, or a
// storage extension's client behind the receiver). The data is the source's own encoding.
type OffsetStore interface {
	Load(ctx context.Context) ([]byte, error)
	Save(ctx context.Context, data []byte) error
}

// CheckGlobs reports the first bad pattern of include and exclude, named for the source
// ("files", "rollouts").
func CheckGlobs(source string, include, exclude []string) error {
	for _, p := range append(append([]string{}, include...), exclude...) {
		if _, err := filepath.Match(p, ""); err != nil {
			return fmt.Errorf("%s: bad glob %q: %w", source, p, err)
		}
	}
	return nil
}

// Match returns, sorted and once each, the paths an include glob matches that no exclude
// glob matches and that keep (nil: all) keeps. The patterns must have passed CheckGlobs.
func Match(include, exclude []string, keep func(path string) bool) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range include {
		paths, _ := filepath.Glob(p) // patterns were checked
	next:
		for _, path := range paths {
			if seen[path] {
				continue
			}
			for _, x := range exclude {
				if ok, _ := filepath.Match(x, path); ok {
					seen[path] = true
					continue next
				}
			}
			if keep != nil && !keep(path) {
				continue // asked again for another pattern: keep may depend on nothing but path
			}
			seen[path] = true
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

// FileID identifies a file while it exists: a file renamed keeps it, a file written anew at
// the same path has another.
type FileID struct{ dev, ino uint64 }

// IDOf returns the identity of the file fi describes.
func IDOf(fi os.FileInfo) FileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return FileID{dev: uint64(st.Dev), ino: st.Ino} //nolint:unconvert // Dev's type differs by platform
	}
	return FileID{}
}

// FingerprintBytes is how much of a file's head identifies it across renames and restarts.
const FingerprintBytes = 1024

// Head returns the first FingerprintBytes of f (fewer when it is shorter).
func Head(f io.ReaderAt) ([]byte, error) {
	b := make([]byte, FingerprintBytes)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}

// SameHead reports whether f still starts with the bytes fp it started with.
func SameHead(f io.ReaderAt, fp []byte) bool {
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

// HeadKey is how a store keeps a head: in hex.
func HeadKey(fp []byte) string { return hex.EncodeToString(fp) }

// HasHead reports whether the head stored as key (HeadKey) begins fp: the file it was stored
// for, grown since or not.
func HasHead(fp []byte, key string) bool {
	k, err := hex.DecodeString(key)
	return err == nil && len(k) > 0 && bytes.HasPrefix(fp, k)
}

// File is an open file being followed: its path (the last it was found at), its identity, its
// head and the offset up to which it was handed on.
type File struct {
	Path   string
	F      *os.File
	ID     FileID
	Head   []byte
	Offset int64
}

// Open opens path for following from offset 0, and returns its size.
func Open(path string) (*File, int64, error) {
	// Non-blocking: a FIFO put where a regular file was stat'ed a moment ago must not hold the
	// poll until a writer comes (O_NONBLOCK changes nothing for a regular file).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	fp, err := Head(f)
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return &File{Path: path, F: f, ID: IDOf(fi), Head: fp}, fi.Size(), nil
}

// Replaced reports whether the file, now of size bytes, was truncated or rewritten in place
// (copy-truncate) since it was read up to Offset. When it was, the file is read again from its
// start: Offset is 0, the head is read anew, and the source forgets what it held of it.
func (f *File) Replaced(size int64) bool {
	if size >= f.Offset && SameHead(f.F, f.Head) {
		return false
	}
	f.Offset = 0
	f.Head, _ = Head(f.F)
	return true
}

// GrowHead reads the head again once the file was read past a head shorter than
// FingerprintBytes: a file that was short when it was opened is fingerprinted by more.
func (f *File) GrowHead() {
	if len(f.Head) < FingerprintBytes && f.Offset > int64(len(f.Head)) {
		f.Head, _ = Head(f.F)
	}
}

// Close closes the file.
func (f *File) Close() error { return f.F.Close() }

// AfterLastNewline returns the offset just after the last newline of f's bytes [from, size),
// scanning back from size through buf, so that nothing is read whole; ok is false when there
// is none. start_at end begins there: the line being written at start-up is read whole,
// never from its middle.
func AfterLastNewline(f io.ReaderAt, from, size int64, buf []byte) (offset int64, ok bool, err error) {
	for end := size; end > from; {
		start := max(from, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, true, nil
		}
		end = start
	}
	return 0, false, nil
}

// Poller is the loop of a source that follows files: it calls the source's poll every interval
// in the background, from Start to Stop. The zero Poller is stopped.
type Poller struct {
	stop chan struct{}
	done chan struct{}
}

// Start begins calling poll every interval (the source's first poll is its own, in its Start),
// and again at once while poll reports more to read; now: the first poll left more, poll at once.
func (p *Poller) Start(interval time.Duration, poll func(context.Context) (again bool), now bool) {
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		again := now
		for {
			if !again {
				select {
				case <-p.stop:
					return
				case <-tick.C:
				}
			}
			again = false
			for poll(context.Background()) {
				select { // a breath between two turns, for whoever waits for the source's lock
				case <-p.stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}
	}()
}

// Stop ends the loop and waits for a poll under way. It reports false when there was no loop
// to stop (never started, or stopped already): a second Shutdown has nothing to do.
func (p *Poller) Stop() bool {
	if p.stop == nil {
		return false
	}
	select {
	case <-p.stop:
		return false
	default:
	}
	close(p.stop)
	<-p.done
	return true
}

// Start says where a file just opened begins (Begin).
type Start int

const (
	// FromStart: offset 0, a file new to the source (or another file at a stored path).
	FromStart Start = iota
	// Resumed: the offset the store kept for it.
	Resumed
	// AtEnd: start_at end, after its last complete line.
	AtEnd
)

// Stored is a store's entry for a file: its head (HeadKey), the offset it was read to, and
// what its reader keeps to resume (Reader.State).
type Stored struct {
	Head   string
	Offset int64
	State  []byte
}

// Begin sets the Offset of a file just opened, of size bytes, by the one rule of both sources:
// at the stored offset when stored (the store's entry for it, nil: none) has a head that begins
// the file's and an offset within it; else, when atEnd (it was there at start-up, start_at is
// end and the store held nothing), after the last newline; else at 0. The last newline is
// looked for in the last window+1 bytes, and when there is none there the file begins at its
// end (a line longer than window is being written: it is skipped); with window < 0 in the whole
// file, and when there is none the file begins at 0 (lines of any size: the one being written
// is read whole). buf is the scan's buffer (nil: one of the bytes scanned).
func (f *File) Begin(size int64, stored *Stored, atEnd bool, window int64, buf []byte) (Start, error) {
	f.Offset = 0
	if stored != nil && HasHead(f.Head, stored.Head) && stored.Offset <= size {
		f.Offset = stored.Offset
		return Resumed, nil
	}
	if !atEnd {
		return FromStart, nil
	}
	from, none := int64(0), int64(0)
	if window >= 0 {
		from, none = max(0, size-window-1), size
	}
	if buf == nil {
		buf = make([]byte, size-from)
	}
	off, found, err := AfterLastNewline(f.F, from, size, buf)
	if err != nil {
		return AtEnd, err
	}
	f.Offset = none
	if found {
		f.Offset = off
	}
	return AtEnd, nil
}
