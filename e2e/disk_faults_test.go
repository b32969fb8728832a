//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
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

// componentStatusGate turns on the health check that reports component status.
const componentStatusGate = "--feature-gates=+extension.healthcheck.useComponentStatus"

// TestCheckpointDiskFaults: the disk of the storage directory under a running collector fills
// up while a run's file grows and Gym processes post events. Every save of the checkpoint
// fails meanwhile: the receiver keeps collecting and exporting (the
// sink without a queue gets every total), logs the outage once (not once per save), counts
// each failure, and its health is a recoverable error; the persistent queue, on the same disk,
// refuses requests (counted) and delivers the newest totals once it can write again. When the
// disk is back, the next save works, is logged, and the health is OK again, with no
// restart. A restart after that restores the checkpoint: no line is counted twice.
func TestCheckpointDiskFaults(t *testing.T) {
	t.Parallel()
	logs, storage, path := logsAndStorage(t)
	mountTmpfs(t, storage, "8m")
	inFile := attrIs("log.file.path", path)
	harness.AppendFile(t, path, lines("", 0, 1000, false))

	sink, queued := harness.NewOTLPSink(t), harness.NewOTLPSink(t)
	start := func(sink *harness.OTLPSink) (*harness.Collector, harness.Ports) {
		return harness.StartCollector(t, func(p harness.Ports) []string {
			return []string{harness.Config(t, "disk-faults.yaml", harness.Data{P: p, Sink: sink.URL(), X: map[string]any{
				"storage": storage, "files": filepath.Join(logs, "*.jsonl"), "queued": queued.URL(), "noQueue": noQueue,
			}})}
		}, componentStatusGate)
	}
	col, ports := start(sink)
	waitCompleted(t, sink, "before the fault", inFile, 1000)
	waitNewest(t, queued, "before the fault, through the queue", inFile, 1000)
	failures := func() float64 { return harness.TelemetryValue(t, ports, "otelcol_receiver_gym_checkpoint_failures") }
	require.Zero(t, failures())

	// Full: a file takes every free byte (ENOSPC), and more Gym processes make the
	// checkpoint grow past the pages its database already holds.
	fill := fillDisk(t, storage)
	harness.AppendFile(t, path, lines("", 1000, 500, false))
	posted := postResources(t, col, "full", 3000)
	waitCompleted(t, sink, "disk full: the file", inFile, 1500)
	waitCompleted(t, sink, "disk full: the posted events", serviceHasPrefix("full-"), float64(posted))
	waitFor(t, "disk full: failed saves counted", func() bool { return failures() >= 5 })
	health := healthBody(t, col)
	t.Logf("disk full: %v failed saves; health %d %s", failures(), health.code, health.body)
	assert.Contains(t, health.body, "StatusRecoverableError", "the receiver's status")
	assert.Contains(t, health.body, "no space left on device")
	assert.Equal(t, http.StatusInternalServerError, health.code, "unhealthy while the saves fail")
	assert.Equal(t, 1, strings.Count(col.LogTail(1<<20), "saving the checkpoint failed"),
		"one log line for the outage, not one per save (the reminder comes after a minute)")
	assert.Greater(t, harness.TelemetryValue(t, ports, "otelcol_exporter_enqueue_failed_metric_points", "exporter", "otlp_http/queued"), 0.0,
		"the persistent queue cannot write either: the requests it refuses are counted")

	// Space again: it recovers by itself.
	require.NoError(t, os.Remove(fill))
	waitFor(t, "space again: a save works", func() bool {
		return strings.Contains(col.LogTail(1<<20), "the checkpoint is saved again")
	})
	waitFor(t, "space again: healthy", func() bool { return healthBody(t, col).code == http.StatusOK })
	harness.AppendFile(t, path, lines("", 1500, 500, false))
	waitCompleted(t, sink, "space again: the file", inFile, 2000)
	waitNewest(t, queued, "space again: the queue, the file", inFile, 2000)
	waitNewest(t, queued, "space again: the queue, the posted events", serviceHasPrefix("full-"), float64(posted))
	start1 := startOf(sink.Exports()[len(sink.Exports())-1], inFile)
	require.NoError(t, col.Stop(30*time.Second))

	// A restart restores the last checkpoint: the same series, nothing read twice.
	sink2 := harness.NewOTLPSink(t)
	col, _ = start(sink2)
	waitCompleted(t, sink2, "after a restart: the file", inFile, 2000)
	waitCompleted(t, sink2, "after a restart: the posted events", serviceHasPrefix("full-"), float64(posted))
	assert.Equal(t, start1, startOf(sink2.Exports()[len(sink2.Exports())-1], inFile), "restored: the same start time")
	require.NoError(t, col.Stop(30*time.Second))
}

// mountTmpfs mounts a tmpfs of the given size on dir for the test: a disk the test can fill. It needs the right to mount (root, as these tests run); without it the
// test is skipped, saying so.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (a disk to fill and make read-only): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// fillDisk writes a file in dir until the file system is full, and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "fill")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	for { // the last pages a smaller write still finds
		if _, err := f.Write(block[:512]); err != nil {
			break
		}
	}
	return path
}

// postResources posts n Gym processes (service.name PREFIX-i), one rollout each, in bodies
// of 100, and returns how many rollouts were accepted.
func postResources(t *testing.T, col *harness.Collector, prefix string, n int) int {
	t.Helper()
	accepted := 0
	for from := 0; from < n; from += 100 {
		var body strings.Builder
		for i := from; i < min(from+100, n); i++ {
			body.WriteString(lines(fmt.Sprintf("%s-%d", prefix, i), 0, 1, true))
		}
		code, ans := col.PostEvents(t, body.String())
		require.Equal(t, http.StatusOK, code)
		accepted += ans.Accepted - (min(from+100, n) - from) // less the resource lines
	}
	return accepted
}

func serviceHasPrefix(prefix string) func(pcommon.Map) bool {
	return func(m pcommon.Map) bool {
		v, ok := m.Get("service.name")
		return ok && strings.HasPrefix(v.Str(), prefix)
	}
}

// waitNewest waits until the newest point of each matching series, over every export (a
// queue delivers out of order), sums to want.
func waitNewest(t *testing.T, sink *harness.OTLPSink, what string, match func(pcommon.Map) bool, want float64) {
	t.Helper()
	var got float64
	err := harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		if got = newestCompleted(sink.Exports(), match); got != want {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "%s: gym.rollout.completed_total is %v, want %v", what, got, want)
}

type healthAnswer struct {
	code int
	body string
}

// healthBody is the component-status health check's verbose answer.
func healthBody(t *testing.T, col *harness.Collector) healthAnswer {
	t.Helper()
	resp, err := http.Get(col.HealthURL + "?verbose")
	if err != nil {
		return healthAnswer{body: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		return healthAnswer{body: err.Error()}
	}
	return healthAnswer{resp.StatusCode, string(b)}
}
