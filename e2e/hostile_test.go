//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// TestHostileDirectories: the files and rollouts sources of the real binary over directories
// that hold, among the files they should read, what a shared file system may hold: a FIFO with
// no writer, a directory, a symbolic link loop, a link to a file outside the globs, a name that
// is not UTF-8. The collector starts and stays healthy (no poll blocks on the FIFO), the good
// files' totals are exact, and each odd path is logged with its path and counted once in
// otelcol_receiver_gym_files_refused{source,reason}.
func TestHostileDirectories(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs, results, outside := filepath.Join(dir, "logs"), filepath.Join(dir, "results"), filepath.Join(dir, "outside")
	for _, d := range []string{logs, results, outside} {
		require.NoError(t, os.Mkdir(d, 0o700))
	}
	// The files source: logs/*.jsonl.
	good, odd := filepath.Join(logs, "good.jsonl"), filepath.Join(logs, "r\xe9sultats.jsonl")
	harness.AppendFile(t, good, lines("", 0, 300, false))
	harness.AppendFile(t, odd, lines("", 300, 200, false))
	elsewhere := filepath.Join(outside, "kept-elsewhere.log")
	harness.AppendFile(t, elsewhere, lines("", 500, 100, false))
	linked := filepath.Join(logs, "linked.jsonl")
	require.NoError(t, os.Symlink(elsewhere, linked)) // followed: the glob matches the link
	fifo, sub, loop := filepath.Join(logs, "fifo.jsonl"), filepath.Join(logs, "dir.jsonl"), filepath.Join(logs, "loop.jsonl")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	require.NoError(t, os.Mkdir(sub, 0o700))
	require.NoError(t, os.Symlink(loop, loop))
	// The rollouts source: results/*.jsonl, one run and a FIFO where a main output would be.
	out := filepath.Join(results, "eval.jsonl")
	for i := range 12 {
		harness.AppendFile(t, out, gymRow(i, "1.0"))
	}
	rfifo := filepath.Join(results, "stuck.jsonl")
	require.NoError(t, syscall.Mkfifo(rfifo, 0o600))

	sink := harness.NewOTLPSink(t)
	col, ports := startTransports(t, sink, func(p harness.Ports) transportsOpts {
		return transportsOpts{gym: fmt.Sprintf(`    http:
      endpoint: 127.0.0.1:%d
    files:
      include: [%s]
      start_at: beginning
      poll_interval: 50ms
    rollouts:
      include: [%s]
      start_at: beginning
      poll_interval: 50ms`, p.Gym, filepath.Join(logs, "*.jsonl"), filepath.Join(results, "*.jsonl"))}
	})
	// A name that is not UTF-8 is named with U+FFFD in its resource (attribute values are UTF-8).
	for path, want := range map[string]float64{good: 300, strings.ToValidUTF8(odd, "\uFFFD"): 200, linked: 100} {
		waitCompleted(t, sink, filepath.Base(path), attrIs("log.file.path", path), want)
	}
	run := func(m pcommon.Map) bool {
		p, _ := m.Get("log.file.path")
		return p.Str() == out
	}
	waitPoints(t, sink, "the run beside the FIFO", run, "gym.rollout.completed_total", outcomeIs("scored"), 12)

	// Many polls later: each odd path counted once, the collector healthy and answering.
	time.Sleep(500 * time.Millisecond)
	_, err := harness.HTTPGet(col.HealthURL)
	require.NoError(t, err)
	for _, c := range []struct {
		source, reason string
		want           float64
	}{
		{"files", "not_regular_file", 2}, // the FIFO and the directory
		{"files", "cannot_stat", 1},      // the loop
		{"rollouts", "not_regular_file", 1},
	} {
		assert.Equal(t, c.want, harness.TelemetryValue(t, ports, "otelcol_receiver_gym_files_refused", "source", c.source, "reason", c.reason), "%s %s", c.source, c.reason)
	}
	text := col.LogTail(1 << 20)
	for _, p := range []string{fifo, sub, loop, rfifo} {
		assert.Equal(t, 1, strings.Count(text, `"path": "`+p+`"`), "%s logged once", p)
	}
	assert.Contains(t, text, "FIFO")
	assert.Contains(t, text, "too many levels of symbolic links")
}
