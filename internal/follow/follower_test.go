package follow

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
)

// lineCollector is the simplest Reader: it keeps every complete line, by file.
type lineCollector struct {
	path    string
	got     *[]string
	partial []byte
}

func (c *lineCollector) Read(f *File, size int64, _ func()) error {
	b, err := io.ReadAll(io.NewSectionReader(f.F, f.Offset, size-f.Offset))
	f.Offset += int64(len(b))
	c.partial = append(c.partial, b...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		*c.got = append(*c.got, filepath.Base(c.path)+":"+string(c.partial[:i]))
		c.partial = c.partial[i+1:]
	}
	return err
}
func (c *lineCollector) Pending() int64       { return int64(len(c.partial)) }
func (c *lineCollector) Discard()             { c.partial = nil }
func (c *lineCollector) Finish()              { c.partial = nil }
func (c *lineCollector) Flush()               {}
func (c *lineCollector) State() []byte        { return nil }
func (c *lineCollector) Restore([]byte) error { return nil }

func newTestFollower(t *testing.T, dir string, store OffsetStore, got *[]string) *Follower {
	t.Helper()
	f := NewFollower(func(f *File, _ Opened) Reader { return &lineCollector{path: f.Path, got: got} }, Options{
		Include: []string{filepath.Join(dir, "*.log")}, PollInterval: time.Hour, MaxLineBytes: 1 << 10, MaxFiles: 10, Store: store,
	}, zap.NewNop())
	require.NoError(t, f.Start(context.Background()))
	return f
}

// The follower reads what its reader is given, rotation by rename and restart with the store
// included, whatever the reader does with it.
func TestFollowerWithAnyReader(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.log")
	followtest.AppendFile(t, a, "old\n")
	store := &followtest.MemStore{}
	var got []string
	f := newTestFollower(t, dir, store, &got)
	assert.Empty(t, got, "start_at end")
	followtest.AppendFile(t, a, "one\ntw")
	f.Poll(context.Background())
	assert.Equal(t, []string{"a.log:one"}, got)
	followtest.AppendFile(t, a, "o\n")
	require.NoError(t, os.Rename(a, filepath.Join(dir, "a.1")))
	followtest.AppendFile(t, a, "new\n")
	f.Poll(context.Background())
	// The renamed file (its reader was made for a.log) and the new one are two streams, read in
	// no promised order between them.
	assert.ElementsMatch(t, []string{"a.log:one", "a.log:two", "a.log:new"}, got, "the renamed file read to its end, the new one from its start")
	assert.Equal(t, "a.log:one", got[0])
	require.NoError(t, f.Shutdown(context.Background()))

	followtest.AppendFile(t, a, "after\n")
	got = nil
	f = newTestFollower(t, dir, store, &got)
	defer func() { require.NoError(t, f.Shutdown(context.Background())) }()
	assert.Equal(t, []string{"a.log:after"}, got, "resumed at the stored offset")
}

// finishCollector is a lineCollector that also records the files it was let go of.
type finishCollector struct {
	lineCollector
	finished *[]string
}

func (c *finishCollector) Finish() { *c.finished = append(*c.finished, filepath.Base(c.path)) }

// ByPath: another inode at the path is another file (the old one read to its end and let go,
// then the new one read from its start), a file gone from the targets is read to its end and
// let go at once, and the store keeps files by path: a restart resumes a file at its path only
// while its head is the same.
func TestFollowerByPath(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	followtest.AppendFile(t, a, "a1\n")
	followtest.AppendFile(t, b, "b1\n")
	var got, finished []string
	var opened []Opened
	targets := []string{a, b}
	store := &followtest.PullStore{}
	newFollower := func() *Follower {
		f := NewFollower(func(f *File, o Opened) Reader {
			opened = append(opened, o)
			return &finishCollector{lineCollector{path: f.Path, got: &got}, &finished}
		}, Options{
			Name: "test", Include: []string{filepath.Join(dir, "*.log")}, StartAtBeginning: true,
			PollInterval: time.Hour, Store: store, Identity: ByPath,
			Targets: func(bool) []string { return targets },
		}, zap.NewNop())
		require.NotNil(t, store.Offsets, "made with a store that pulls: joined")
		require.NoError(t, f.Start(context.Background()))
		return f
	}
	f := newFollower()
	assert.Equal(t, []string{"a.log:a1", "b.log:b1"}, got, "in the targets' order")

	// a replaced at its path: the old file read to its end first.
	followtest.AppendFile(t, a, "a2\n")
	require.NoError(t, os.Rename(a, filepath.Join(dir, "a.old")))
	followtest.AppendFile(t, a, "new1\n")
	f.Poll(context.Background())
	assert.Equal(t, []string{"a.log:a1", "b.log:b1", "a.log:a2", "a.log:new1"}, got)
	assert.Equal(t, []string{"a.log"}, finished)

	// b no longer a target: read to its end and let go at once.
	followtest.AppendFile(t, b, "b2\n")
	targets = []string{a}
	f.Poll(context.Background())
	assert.Equal(t, "b.log:b2", got[len(got)-1])
	assert.Equal(t, []string{"a.log", "b.log"}, finished)
	assert.Equal(t, 1, f.Followed())
	assert.Zero(t, len(store.Data), "a poll saves nothing into a store that pulls")

	// Pulled under the lock: by path, with the head.
	l := store.Locker
	l.Lock()
	data, ok := store.Offsets()
	l.Unlock()
	require.True(t, ok)
	var m map[string]Stored
	require.NoError(t, json.Unmarshal(data, &m))
	assert.Equal(t, HeadKey([]byte("new1\n")), m[a].Head)
	assert.Contains(t, m, a)
	assert.Equal(t, int64(len("new1\n")), m[a].Offset)
	require.NoError(t, f.Shutdown(context.Background()))
	assert.NotEmpty(t, store.Data, "saved at Shutdown")
	_, ok = store.Offsets()
	assert.False(t, ok, "after Shutdown, the offsets it saved stand")

	// Restarted: a resumes at its offset; another file at b's stored path would start anew.
	followtest.AppendFile(t, a, "new2\n")
	got, opened, targets = nil, nil, []string{a}
	f = newFollower()
	defer func() { require.NoError(t, f.Shutdown(context.Background())) }()
	assert.Equal(t, []string{"a.log:new2"}, got)
	assert.Equal(t, []Opened{{Start: Resumed}}, opened)
}

// The events files' format is unchanged: offsets by head (hex) written by an earlier version
// restore, and those saved are in it.
func TestFollowerStoredFormat(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.log")
	followtest.AppendFile(t, a, "old\nnew\n")
	store := &followtest.MemStore{Data: []byte(`{"` + HeadKey([]byte("old\n")) + `":{"offset":4}}`)}
	var got []string
	f := newTestFollower(t, dir, store, &got)
	require.NoError(t, f.Shutdown(context.Background()))
	assert.Equal(t, []string{"a.log:new"}, got)
	assert.JSONEq(t, `{"`+HeadKey([]byte("old\nnew\n"))+`":{"offset":8}}`, string(store.Data))
}

// yieldingReader hands on one line at a time and yields after each, as the rollouts' row
// decoder does; midRead is called after the first line applied, before its yield.
type yieldingReader struct {
	got     *[]string
	midRead func()
}

func (r *yieldingReader) Read(f *File, size int64, yield func()) error {
	b, err := io.ReadAll(io.NewSectionReader(f.F, f.Offset, size-f.Offset))
	for first := true; ; first = false {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		*r.got = append(*r.got, string(b[:i]))
		f.Offset += int64(i + 1)
		b = b[i+1:]
		if first && r.midRead != nil {
			r.midRead()
		}
		yield()
	}
	return err
}
func (r *yieldingReader) Pending() int64       { return 0 }
func (r *yieldingReader) Discard()             {}
func (r *yieldingReader) Finish()              {}
func (r *yieldingReader) Flush()               {}
func (r *yieldingReader) State() []byte        { return nil }
func (r *yieldingReader) Restore([]byte) error { return nil }

// A file empty when it was opened has no head until a read of it ends. A checkpoint let in
// where its reader yields, mid-read, still keeps it, with its head and the offset through the
// lines applied: without them a restart would read those lines again (counted twice).
func TestFollowerCheckpointMidReadOfFileEmptyWhenOpened(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.log")
	followtest.AppendFile(t, a, "") // empty when the follower opens it
	store := &followtest.PullStore{}
	gate := &checkpoint.Gate{}
	var got []string
	rd := &yieldingReader{got: &got}
	f := NewFollower(func(*File, Opened) Reader { return rd }, Options{
		Include: []string{filepath.Join(dir, "*.log")}, PollInterval: time.Hour, MaxLineBytes: 1 << 10,
		MaxFiles: 10, Store: store, Lock: gate,
	}, zap.NewNop())
	require.NoError(t, f.Start(context.Background()))
	defer func() { require.NoError(t, f.Shutdown(context.Background())) }()
	require.Equal(t, 1, f.Followed())

	// A checkpoint comes while the poll reads: it waits for the gate, and the reader lets it
	// in at its first yield, the first of the two lines applied.
	var data []byte
	var ok bool
	done := make(chan struct{})
	rd.midRead = func() {
		rd.midRead = nil
		go func() {
			defer close(done)
			l := store.Locker
			l.Lock()
			defer l.Unlock()
			data, ok = store.Offsets()
		}()
		for !gate.Waiting() {
			runtime.Gosched()
		}
	}
	followtest.AppendFile(t, a, "one\ntwo\n")
	f.Poll(context.Background())
	<-done
	require.Equal(t, []string{"one", "two"}, got)
	require.True(t, ok)
	m, err := headCodec{}.Decode(data)
	require.NoError(t, err)
	head := HeadKey([]byte("one\ntwo\n"))
	assert.Equal(t, map[string]Stored{head: {Head: head, Offset: int64(len("one\n"))}}, m,
		"the checkpoint mid-read: the file, by its head, at the offset through the line applied")
}
