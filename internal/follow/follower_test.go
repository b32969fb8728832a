package follow

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

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
