package follow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(s), 0o600))
}

func TestMatch(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.jsonl", "b.jsonl", "skip.jsonl", "c.txt"} {
		write(t, filepath.Join(dir, n), "x\n")
	}
	inc := []string{filepath.Join(dir, "*.jsonl"), filepath.Join(dir, "a*")}
	exc := []string{filepath.Join(dir, "skip*")}
	require.NoError(t, CheckGlobs("files", inc, exc))
	assert.Equal(t, []string{filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")}, Match(inc, exc, nil), "sorted, once each, excluded left out")
	keep := func(p string) bool { return !strings.HasPrefix(filepath.Base(p), "a") }
	assert.Equal(t, []string{filepath.Join(dir, "b.jsonl")}, Match(inc, exc, keep))
	assert.EqualError(t, CheckGlobs("rollouts", nil, []string{"["}), `rollouts: bad glob "[": syntax error in pattern`)
}

func TestAfterLastNewline(t *testing.T) {
	f := strings.NewReader("one\ntwo\nthree")
	for _, buf := range []int{1, 3, 64} {
		off, ok, err := AfterLastNewline(f, 0, f.Size(), make([]byte, buf))
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, int64(8), off, "buffer of %d", buf)
	}
	_, ok, err := AfterLastNewline(f, 8, f.Size(), make([]byte, 2))
	require.NoError(t, err)
	assert.False(t, ok, "no newline in [from, size)")
}

func TestFileReplacedAndHead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	write(t, path, "head\nmore\n")
	f, size, err := Open(path)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, int64(10), size)
	assert.True(t, HasHead([]byte("head\nmore\nand more"), HeadKey(f.Head)), "grown since")
	assert.False(t, HasHead([]byte("other"), HeadKey(f.Head)))
	assert.False(t, HasHead([]byte("x"), ""), "an empty head finds nothing")
	f.Offset = size
	assert.False(t, f.Replaced(size))
	write(t, path, "HEAD\nmore\n") // rewritten in place
	assert.True(t, f.Replaced(size))
	assert.Zero(t, f.Offset)
	assert.Equal(t, "HEAD\nmore\n", string(f.Head))
	f.Offset = size
	require.NoError(t, os.Truncate(path, 4))
	assert.True(t, f.Replaced(4), "truncated")
}

func TestPoller(t *testing.T) {
	var p Poller
	assert.False(t, p.Stop(), "never started")
	polls := make(chan struct{}, 100)
	p.Start(time.Millisecond, func(context.Context) bool { polls <- struct{}{}; return false }, false)
	<-polls
	assert.True(t, p.Stop())
	assert.False(t, p.Stop(), "stopped already")
	n := len(polls)
	time.Sleep(5 * time.Millisecond)
	assert.Equal(t, n, len(polls), "no poll after Stop")

	// A poll that leaves more to read is followed by another at once, not at the next tick.
	var again Poller
	more := 3
	done := make(chan struct{})
	again.Start(time.Hour, func(context.Context) bool {
		more--
		if more == 0 {
			close(done)
		}
		return more > 0
	}, true)
	select {
	case <-done:
	case <-time.After(30 * time.Second): // the tick is an hour away: only "again" gets here
		t.Error("the polls that report more to read did not follow each other")
	}
	again.Stop()
}

// Begin is the one rule of where a file opened begins, for both sources.
func TestBegin(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte("one\ntwo\nthr"), 0o600))
	open := func() (*File, int64) {
		f, size, err := Open(p)
		require.NoError(t, err)
		t.Cleanup(func() { _ = f.Close() })
		return f, size
	}
	f, size := open()
	st, err := f.Begin(size, &Stored{Head: HeadKey([]byte("one\n")), Offset: 4}, true, -1, nil)
	require.NoError(t, err)
	assert.Equal(t, Resumed, st)
	assert.EqualValues(t, 4, f.Offset)

	st, err = f.Begin(size, &Stored{Head: HeadKey([]byte("other")), Offset: 4}, false, -1, nil)
	require.NoError(t, err)
	assert.Equal(t, FromStart, st, "another head")
	assert.EqualValues(t, 0, f.Offset)

	st, _ = f.Begin(size, &Stored{Head: HeadKey([]byte("one")), Offset: size + 1}, false, -1, nil)
	assert.Equal(t, FromStart, st, "an offset past the end")

	st, _ = f.Begin(size, nil, true, -1, make([]byte, 3))
	assert.Equal(t, AtEnd, st)
	assert.EqualValues(t, 8, f.Offset, "after the last newline")

	st, _ = f.Begin(size, nil, true, 2, nil)
	assert.Equal(t, AtEnd, st)
	assert.Equal(t, size, f.Offset, "no newline in the window: at the end")

	require.NoError(t, os.WriteFile(p, []byte("partial"), 0o600))
	f, size = open()
	_, _ = f.Begin(size, nil, true, -1, nil)
	assert.EqualValues(t, 0, f.Offset, "no newline in the whole file: at 0")
}

func TestGlobDir(t *testing.T) {
	for pattern, want := range map[string]string{
		"/var/log/gym/*.events.jsonl":    "/var/log/gym",
		"/var/lib/gym/results/*/*.jsonl": "/var/lib/gym/results",
		"/a/b*/c/*.jsonl":                "/a",
		"/a/b/c.jsonl":                   "/a/b",
		"/a/[xy]/c.jsonl":                "/a",
		"relative/*.jsonl":               "relative",
		"*.jsonl":                        ".",
	} {
		assert.Equal(t, want, globDir(pattern), pattern)
	}
}
