//go:build linux

package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// tmuxServer is a tmux server of the test's own (its own socket), killed at the end.
type tmuxServer struct {
	bin, socket string
}

func newTmux(t *testing.T) *tmuxServer {
	t.Helper()
	s := &tmuxServer{bin: harness.Tool(t, "tmux", "tmux"), socket: filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() { _ = exec.Command(s.bin, "-S", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxServer) run(args ...string) (string, error) {
	out, err := exec.Command(s.bin, append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	return string(out), err
}

// TestGymrunTop: after the sample run, `gymrun top` in an 80x24 tmux window shows the run with
// the number of completed rollouts the Prometheus endpoint holds, in at most 80 columns, and
// quits on q.
func TestGymrunTop(t *testing.T) {
	t.Parallel()
	tmux := newTmux(t)
	col, ports := harness.StartDefaultCollector(t)
	sendSample(t, col)
	const runID = "r-20261130-demo"
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Prometheus)
	var want float64
	require.NoError(t, harness.Eventually(30*time.Second, 300*time.Millisecond, func() error {
		text, err := harness.HTTPGet(metricsURL)
		if err != nil {
			return err
		}
		if want = sumByLabel(text, "gym_rollout_completed_total")["{}"]; want == 0 {
			return harness.ErrNotYet
		}
		return nil
	}))

	cmd := fmt.Sprintf("%s top --url http://127.0.0.1:%d --run %s --interval 300ms", gymrunBin, ports.Live, runID)
	_, err := tmux.run("new-session", "-d", "-x", "80", "-y", "24", "-s", "top", cmd)
	require.NoError(t, err)
	completed := regexp.MustCompile(`rollouts\s+(\d+) completed`)
	var screen string
	require.NoError(t, harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		if screen, err = tmux.run("capture-pane", "-p", "-t", "top"); err != nil {
			return err
		}
		m := completed.FindStringSubmatch(screen)
		if m == nil {
			return fmt.Errorf("no run on the screen yet:\n%s", screen)
		}
		if n, _ := strconv.ParseFloat(m[1], 64); n != want {
			return fmt.Errorf("%v completed on the screen, the Prometheus endpoint has %v", n, want)
		}
		return nil
	}))
	assert.Contains(t, screen, "run "+runID)
	assert.Contains(t, screen, "failures")
	assert.Contains(t, screen, "collector")
	for _, line := range strings.Split(screen, "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(strings.TrimRight(line, " ")), 80, "%q", line)
	}

	_, err = tmux.run("send-keys", "-t", "top", "q")
	require.NoError(t, err)
	require.NoError(t, harness.Eventually(10*time.Second, 100*time.Millisecond, func() error {
		if _, err := tmux.run("has-session", "-t", "top"); err == nil {
			return fmt.Errorf("gymrun top still runs after q")
		}
		return nil
	}))
}
