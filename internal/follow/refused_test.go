package follow

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
)

// Odd paths among the files the globs match: a FIFO (never opened: no poll blocks on it), a
// directory, a symbolic link loop. Each is logged and counted once while it stays so, and again
// when it comes back after being fixed; the regular files beside them (one with a name that is
// not UTF-8, one a link to a file outside the globs: followed) are read in full.
func TestRefusedPaths(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	fifo, sub, loop := filepath.Join(dir, "fifo.log"), filepath.Join(dir, "dir.log"), filepath.Join(dir, "loop.log")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	require.NoError(t, os.Mkdir(sub, 0o700))
	require.NoError(t, os.Symlink(loop, loop))
	followtest.AppendFile(t, filepath.Join(dir, "good.log"), "a\nb\n")
	followtest.AppendFile(t, filepath.Join(dir, "caf\xe9.log"), "c\n")
	target := filepath.Join(outside, "elsewhere")
	followtest.AppendFile(t, target, "d\n")
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "linked.log")))

	type refusal struct{ path, reason string }
	var refused []refusal
	var got []string
	core, logs := observer.New(zap.WarnLevel)
	f := NewFollower(func(f *File, _ Opened) Reader { return &lineCollector{path: f.Path, got: &got} }, Options{
		Include: []string{filepath.Join(dir, "*.log")}, StartAtBeginning: true, PollInterval: time.Hour,
		Refused: func(path, reason string) { refused = append(refused, refusal{path, reason}) },
	}, zap.New(core))
	require.NoError(t, f.Start(context.Background()))
	defer func() { require.NoError(t, f.Shutdown(context.Background())) }()
	for range 3 {
		f.Poll(context.Background())
	}
	assert.ElementsMatch(t, []string{"good.log:a", "good.log:b", "caf\xe9.log:c", "linked.log:d"}, got)
	assert.ElementsMatch(t, []refusal{
		{fifo, RefusalNotRegular}, {sub, RefusalNotRegular}, {loop, RefusalCannotStat},
	}, refused, "once each over three polls")
	assert.Equal(t, 3, logs.FilterMessageSnippet("a matching path is not followed").Len())
	assert.Contains(t, logs.FilterField(zap.String("path", fifo)).All()[0].ContextMap()["error"], "FIFO")

	// Fixed, then broken again: counted again.
	require.NoError(t, os.Remove(fifo))
	f.Poll(context.Background())
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	f.Poll(context.Background())
	assert.Len(t, refused, 4)
	assert.Equal(t, refusal{fifo, RefusalNotRegular}, refused[3])
}

// Open refuses what is not a regular file, and does not block on a FIFO that has no writer.
func TestOpenRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	_, _, err := Open(fifo)
	require.ErrorContains(t, err, "not a regular file")
}
