//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/live"
)

// The live page's API, as the test reads it (the fields it compares).
type liveRun struct {
	ID        string             `json:"id"`
	Completed map[string]float64 `json:"completed"`
	Total     float64            `json:"completed_total"`
	Failures  []live.Count       `json:"failures_by_kind"`
	Rewards   []live.RewardRow   `json:"rewards"`
	Servers   []struct {
		Instance string     `json:"instance"`
		Lag      *live.Dist `json:"event_loop_lag_ms"`
		GC       *live.Dist `json:"gc_pause_ms"`
	} `json:"server_list"`
}

func liveGet(t *testing.T, url string, v any) http.Header {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v), url)
	return resp.Header
}

// TestLivePage does what `make run` does (the shipped default configuration on free ports, the
// sample run sent with gymevents), then checks the gymlive exporter's page against the
// prometheus exporter beside it: every number the API gives for the run equals the sum of
// the Prometheus endpoint's series, the collector's health equals its own telemetry, and
// headless Chromium renders those numbers with no error and no request off 127.0.0.1.
func TestLivePage(t *testing.T) {
	t.Parallel()
	col, ports := harness.StartDefaultCollector(t, "exporters:\n  gymlive:\n    resolution: 1s\n    horizon: 1h\n")
	sample, _ := sendSample(t, col)
	lines := float64(countLines(t, sample))

	base := fmt.Sprintf("http://127.0.0.1:%d/", ports.Live)
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Prometheus)
	const runID = "r-20261130-demo"

	// The numbers of one moment: the page's run and the Prometheus text, read until both hold
	// every rollout of the sample (the same export).
	var run liveRun
	var text string
	require.NoError(t, harness.Eventually(30*time.Second, 300*time.Millisecond, func() error {
		var v struct {
			Version int     `json:"version"`
			Run     liveRun `json:"run"`
		}
		body, err := harness.HTTPGet(base + "api/v1/runs/" + runID)
		if err != nil {
			return err // the run is not there yet
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			return err
		}
		if text, err = harness.HTTPGet(metricsURL); err != nil {
			return err
		}
		run = v.Run
		if v.Version != live.APIVersion || run.Total == 0 || run.Total != sumByLabel(text, "gym_rollout_completed_total")["{}"] {
			return harness.ErrNotYet
		}
		return nil
	}))

	byOutcome := sumByLabel(text, "gym_rollout_completed_total", "nemo_gym_rollout_outcome")
	require.Len(t, byOutcome, 3, "the sample has every outcome")
	for k, want := range byOutcome {
		outcome := strings.TrimSuffix(strings.TrimPrefix(k, `{nemo_gym_rollout_outcome="`), `"}`)
		assert.Equal(t, want, run.Completed[outcome], "completed %s", outcome)
	}
	byKind := sumByLabel(text, "gym_rollout_completed_total", "nemo_gym_failure_kind")
	require.NotEmpty(t, run.Failures)
	for _, f := range run.Failures {
		assert.Equal(t, byKind[fmt.Sprintf("{nemo_gym_failure_kind=%q}", f.Name)], f.Value, "failures of kind %s", f.Name)
	}
	rewards := sumByLabel(text, "gym_rollout_rewarded_total", "nemo_gym_rollout_dispatch_name", "nemo_gym_rollout_reward_range")
	got := map[string]float64{}
	for _, r := range run.Rewards {
		for rg, n := range r.ByRange {
			got[fmt.Sprintf("{nemo_gym_rollout_dispatch_name=%q,nemo_gym_rollout_reward_range=%q}", r.Dispatch, rg)] = n
		}
	}
	assert.Equal(t, rewards, got, "rewards by benchmark and range")
	lag := sumByLabel(text, "gym_event_loop_lag_ms_count", "instance")
	gc := sumByLabel(text, "gym_gc_pause_duration_ms_count", "instance")
	require.NotEmpty(t, run.Servers)
	for _, s := range run.Servers {
		key := fmt.Sprintf("{instance=%q}", s.Instance)
		require.NotNil(t, s.Lag, s.Instance)
		require.NotNil(t, s.GC, s.Instance)
		assert.Equal(t, lag[key], float64(s.Lag.Count), "event-loop lag samples of %s", s.Instance)
		assert.Equal(t, gc[key], float64(s.GC.Count), "GC pauses of %s", s.Instance)
	}

	// The collector's own health, as its telemetry endpoint gives it.
	var health struct {
		Collector live.CollectorHealth `json:"collector"`
		Live      live.Status          `json:"live"`
	}
	h := liveGet(t, base+"api/v1/health", &health)
	assert.Equal(t, "no-store", h.Get("Cache-Control"))
	require.Empty(t, health.Collector.Error)
	accepted := map[string]float64{}
	for _, f := range health.Collector.Families {
		accepted[f.Name] = f.Total
	}
	assert.Equal(t, lines, accepted["otelcol_receiver_gym_lines_accepted"], "event lines accepted (the page)")
	assert.Equal(t, lines, harness.TelemetryValue(t, ports, "otelcol_receiver_gym_lines_accepted"), "event lines accepted (telemetry)")
	assert.Zero(t, health.Live.Dropped.Series)

	// The charts: one point a second once the run is there.
	require.NoError(t, harness.Eventually(30*time.Second, 300*time.Millisecond, func() error {
		var hist struct {
			History live.History `json:"history"`
		}
		liveGet(t, base+"api/v1/runs/"+runID+"/history", &hist)
		if len(hist.History.T) < 2 || len(hist.History.Charts["completed"].Series) != 3 {
			return harness.ErrNotYet
		}
		return nil
	}))

	renderLivePage(t, base, run)
}

// renderLivePage opens the page in headless Chromium, every host but 127.0.0.1 unresolvable,
// and checks the numbers it shows, its error collector and Chromium's console.
func renderLivePage(t *testing.T, base string, run liveRun) {
	chromium := harness.Chromium(t)
	resp, err := http.Get(base)
	require.NoError(t, err)
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'self'")
	assert.Contains(t, csp, "script-src 'self'")
	assert.NotContains(t, csp, "unsafe-inline")
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))

	cmd := exec.Command(chromium, append(harness.Headless(t), "--virtual-time-budget=5000",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--enable-logging=stderr", "--v=0", "--dump-dom", base)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "chromium:\n%s", stderr.String())
	dom := stdout.String()

	shown := map[string]string{}
	for _, m := range regexp.MustCompile(`data-k="([^"]+)"[^>]*>([^<]*)<`).FindAllStringSubmatch(dom, -1) {
		shown[m[1]] = m[2]
	}
	num := func(v float64) string { return fmt.Sprint(v) }
	assert.Equal(t, num(run.Total), shown["completed_total"], "completed on the page")
	for _, o := range []string{"scored", "failed", "omitted"} {
		assert.Equal(t, num(run.Completed[o]), shown["completed."+o], "%s on the page", o)
	}
	for _, f := range run.Failures {
		assert.Equal(t, num(f.Value), shown["failures."+f.Name], "failures of %s on the page", f.Name)
	}
	for _, r := range run.Rewards {
		for rg, n := range r.ByRange {
			assert.Equal(t, num(n), shown["rewards."+r.Dispatch+"."+rg], "rewards %s %s on the page", r.Dispatch, rg)
		}
	}
	assert.Regexp(t, `^\d+$`, shown["health.otelcol_receiver_gym_lines_accepted"], "the collector's health on the page")
	assert.Contains(t, dom, `class="uplot`, "the charts are drawn")
	assert.Regexp(t, `<ul id="page-errors" class="errors">\s*</ul>`, dom, "errors the page collected")
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("chromium console: %s", line)
		}
	}
}
