//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// TestPermissionDenied: the collector runs as an unprivileged user (nobody, through setpriv),
// as it should in production. Among what its globs match: an events file it may not read, a
// run's main output it may not read, and an events file in a directory it may not enter. Each
// is logged with its path and counted once while it stays so (cannot_open, cannot_stat), the
// readable files are counted exactly, and once a file may be read it is followed and counted
// whole.
func TestPermissionDenied(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to start the collector as another user (as root, permissions deny nothing)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	dir := t.TempDir()
	// Go's temporary directories are private: open them to the collector's user.
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	logs, results, closed := filepath.Join(dir, "logs"), filepath.Join(dir, "results"), filepath.Join(dir, "logs", "closed")
	for _, d := range []string{logs, results, closed} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	good, secret := filepath.Join(logs, "good.jsonl"), filepath.Join(logs, "secret.jsonl")
	harness.AppendFile(t, good, lines("", 0, 300, false))
	harness.AppendFile(t, secret, lines("", 300, 200, false))
	require.NoError(t, os.Chmod(secret, 0o000))
	inClosed := filepath.Join(closed, "inner.jsonl")
	harness.AppendFile(t, inClosed, lines("", 500, 50, false))
	require.NoError(t, os.Chmod(closed, 0o700)) // root's: the collector may not look inside
	out, denied := filepath.Join(results, "eval.jsonl"), filepath.Join(results, "private.jsonl")
	for i := range 12 {
		harness.AppendFile(t, out, gymRow(i, "1.0"))
	}
	harness.AppendFile(t, denied, gymRow(12, "1.0"))
	require.NoError(t, os.Chmod(denied, 0o000))
	for _, p := range []string{good, inClosed, out} {
		require.NoError(t, os.Chmod(p, 0o644))
	}
	bin := filepath.Join(dir, "otelcol-gym") // the build directory is private too
	harness.CopyFile(t, harness.Bin, bin)

	sink := harness.NewOTLPSink(t)
	col, ports := harness.StartCollectorCommand(t, func(p harness.Ports) []string {
		cfg := harness.Config(t, "transports.yaml", harness.Data{P: p, Sink: sink.URL(), X: map[string]any{
			"gym": fmt.Sprintf(`    files:
      include: [%s, %s]
      start_at: beginning
      poll_interval: 50ms
    rollouts:
      include: [%s]
      start_at: beginning
      poll_interval: 50ms`, filepath.Join(logs, "*.jsonl"), filepath.Join(closed, "*.jsonl"), filepath.Join(results, "*.jsonl")),
			"extensions": "", "service_extensions": "",
		}})
		path := filepath.Join(dir, fmt.Sprintf("config-%d.yaml", p.Gym))
		require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
		return []string{path}
	}, []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin})
	waitCompleted(t, sink, "the readable file", attrIs("log.file.path", good), 300)
	run := func(m pcommon.Map) bool {
		p, _ := m.Get("log.file.path")
		return p.Str() == out
	}
	waitPoints(t, sink, "the readable run", run, "gym.rollout.completed_total", outcomeIs("scored"), 12)
	time.Sleep(500 * time.Millisecond) // many polls
	for _, c := range []struct {
		source, reason string
		want           float64
	}{
		{"files", "cannot_open", 2},    // secret.jsonl, and the directory its second glob lists
		{"rollouts", "cannot_open", 1}, // private.jsonl
	} {
		assert.Equal(t, c.want, harness.TelemetryValue(t, ports, "otelcol_receiver_gym_files_refused", "source", c.source, "reason", c.reason), "%s %s", c.source, c.reason)
	}
	text := col.LogTail(1 << 20)
	for _, p := range []string{secret, denied, closed} {
		assert.Equal(t, 1, strings.Count(text, `"path": "`+p+`"`), "%s logged once", p)
	}
	assert.Contains(t, text, "permission denied")
	// The closed directory: its glob cannot list it (a glob skips it silently); the directory
	// is named instead, once.
	assert.Equal(t, -1.0, latestCompleted(sink.Exports(), attrIs("log.file.path", inClosed)))

	// Readable now: followed at the next poll, whole.
	require.NoError(t, os.Chmod(secret, 0o644))
	waitCompleted(t, sink, "the file once readable", attrIs("log.file.path", secret), 200)
	require.NoError(t, col.Stop(30*time.Second))
}
