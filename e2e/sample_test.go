//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// sendSample sends testdata/sample-run.jsonl (a Gym run's events) to the collector with the
// gymevents CLI, quiet, with more flags, and returns the file's path and the CLI's output.
func sendSample(t *testing.T, col *harness.Collector, flags ...string) (sample, out string) {
	t.Helper()
	sample = filepath.Join(harness.Root, "testdata", "sample-run.jsonl")
	b, err := exec.Command(gymeventsBin, append([]string{"send", sample, "--endpoint", col.GymURL, "--quiet"}, flags...)...).CombinedOutput()
	require.NoError(t, err, "gymevents send:\n%s", b)
	return sample, string(b)
}

// TestSampleRun does what `make run` does, on free ports: the shipped default configuration,
// testdata/sample-run.jsonl sent with the gymevents CLI, in small batches so that many HTTP
// bodies start in the middle of a process's events (gymevents repeats the resource line).
// Every line must be accepted, and the prometheus exporter must show, per process (job),
// the rollouts and sandboxes the file gives each process.
func TestSampleRun(t *testing.T) {
	t.Parallel()
	col, ports := harness.StartDefaultCollector(t)

	sample, out := sendSample(t, col, "--batch", "37")
	lines := countLines(t, sample)
	assert.Contains(t, out, fmt.Sprintf("%d lines in %d requests: accepted %d, rejected 0, unknown 0\n",
		lines, (lines+36)/37, lines))

	wantRollouts, wantSandboxes := expectedPerProcess(t, sample)
	require.NotEmpty(t, wantRollouts)
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Prometheus)
	var gotRollouts, gotSandboxes map[string]float64
	err := harness.Eventually(30*time.Second, 300*time.Millisecond, func() error {
		text, err := harness.HTTPGet(metricsURL)
		if err != nil {
			return err
		}
		gotRollouts = sumByLabel(text, "gym_rollout_completed_total", "job")
		gotSandboxes = sumByLabel(text, "gym_sandbox_active", "job")
		if !equalVectors(gotRollouts, wantRollouts) || !equalVectors(gotSandboxes, wantSandboxes) {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "rollouts by job: got %v, want %v; sandboxes by job: got %v, want %v",
		gotRollouts, wantRollouts, gotSandboxes, wantSandboxes)
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return bytes.Count(data, []byte("\n"))
}

var pyNumbers = regexp.MustCompile(`:\s*-?(NaN|Infinity)`)

// expectedPerProcess reads the sample file as the receiver would (one stream; a resource line
// sets the process of the lines after it) and counts, per service.name, rollout.completed
// lines and the sum of sandbox.active deltas.
func expectedPerProcess(t *testing.T, path string) (rollouts, sandboxes map[string]float64) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rollouts, sandboxes = map[string]float64{}, map[string]float64{}
	job := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Event      string         `json:"event"`
			Attributes map[string]any `json:"attributes"`
			Delta      float64        `json:"delta"`
		}
		require.NoError(t, json.Unmarshal(pyNumbers.ReplaceAll(sc.Bytes(), []byte(":null")), &ev), sc.Text())
		switch ev.Event {
		case "resource":
			job, _ = ev.Attributes["service.name"].(string)
		case "rollout.completed":
			rollouts[fmt.Sprintf("{job=%q}", job)]++
		case "sandbox.active":
			sandboxes[fmt.Sprintf("{job=%q}", job)] += ev.Delta
		}
	}
	require.NoError(t, sc.Err())
	return rollouts, sandboxes
}

// sumByLabel sums the samples of one metric in the Prometheus text format by its labels,
// keyed like harness.PromQuery: {a="x",b="y"} in the order given.
func sumByLabel(text, metric string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		ls, value := harness.ParseSample(line[len(metric):])
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		parts := make([]string, len(labels))
		for i, l := range labels {
			parts[i] = fmt.Sprintf("%s=%q", l, ls[l])
		}
		out["{"+strings.Join(parts, ",")+"}"] += v
	}
	return out
}

// TestREADMEPython runs the README's Python example (the otelcol_gym package, from python/)
// against a collector, with a recorder call after it; skipped where python3 is missing.
func TestREADMEPython(t *testing.T) {
	t.Parallel()
	python := harness.Python(t)
	data, err := os.ReadFile(filepath.Join(harness.Root, "README.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(data), "```python\n")
	require.True(t, ok, "README.md has no python block")
	snippet, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	require.Contains(t, snippet, "from otelcol_gym")

	col, _ := harness.StartDefaultCollector(t)
	snippet += `
import json, otelcol_gym
gym_metrics.record_rollout_completed("scored", "math")
gym_metrics.record_rollout_reward(1.0, "math", False)
assert otelcol_gym.flush(20)
print(json.dumps(otelcol_gym.stats()))
`
	cmd := exec.Command(python, "-c", snippet)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(harness.Root, "python"), "OTELCOL_GYM_ENDPOINT="+col.GymURL)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "python3:\n%s", out)
	var st map[string]int
	require.NoError(t, json.Unmarshal(out, &st), "%s", out)
	assert.Equal(t, 2, st["sent"], "%s", out)
	assert.Zero(t, st["rejected"]+st["dropped"]+st["invalid"]+st["lost"], "%s", out)
}
