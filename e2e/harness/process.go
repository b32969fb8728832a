//go:build linux

package harness

import (
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/stretchr/testify/require"
)

// StartAttempts is how often a server is started on new ports when the ones picked were
// taken in the meantime.
const StartAttempts = 3

// AddressInUse tells whether p failed because a port it was given was taken meanwhile.
func AddressInUse(p *Process) bool {
	return strings.Contains(p.LogTail(1<<16), "address already in use")
}

// Process is a child process of a test, in its own process group, with its output in a file.
// t.Cleanup kills the group when the test did not stop it, whatever the outcome.
type Process struct {
	t       *testing.T
	Name    string
	Cmd     *exec.Cmd
	LogPath string
	done    chan struct{}
	err     error // set when done is closed
}

// StartProcess starts args (the command and its arguments) as a child of the test, named name.
func StartProcess(t *testing.T, name string, args ...string) *Process {
	t.Helper()
	return StartProcessEnv(t, name, nil, args...)
}

// StartProcessEnv is StartProcess with env (KEY=value) added to the test's environment.
func StartProcessEnv(t *testing.T, name string, env []string, args ...string) *Process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(args[0], args[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If this test binary dies (a -timeout panic), the child dies with it.
		Pdeathsig: syscall.SIGKILL,
	}
	require.NoError(t, cmd.Start(), "starting %s", name)
	logf.Close()
	p := &Process{t: t, Name: name, Cmd: cmd, LogPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.Exited() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s output (%s) ---\n%s", name, logPath, p.LogTail(12000))
		}
	})
	return p
}

// Exited tells whether the process has exited.
func (p *Process) Exited() bool { return closed(p.done) }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit error, once Done is closed.
func (p *Process) Err() error { return p.err }

// Stop sends SIGTERM and waits for a graceful exit (SIGKILL to the group after the timeout).
func (p *Process) Stop(timeout time.Duration) error {
	if p.Exited() {
		return fmt.Errorf("%s had already exited: %w", p.Name, p.err)
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %s after SIGTERM", p.Name, timeout)
	}
}

func (p *Process) LogTail(n int) string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	if len(data) > n {
		data = append([]byte("...\n"), data[len(data)-n:]...)
	}
	return string(data)
}

// WaitReady polls url until it answers 200, the process exits, or the timeout passes.
func (p *Process) WaitReady(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	last := "no answer"
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("%s exited before %s answered: %w\n%s", p.Name, url, p.err, p.LogTail(8000))
		}
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s: %s not ready after %s (%s)", p.Name, url, timeout, last)
}

// Collector is a running otelcol-gym.
type Collector struct {
	*Process
	GymURL    string // http://127.0.0.1:PORT, the gym receiver
	HealthURL string
}

// StartCollector starts otelcol-gym with the configurations that configs gives for a set of
// free ports (a string holding a newline is YAML, written to a file; else a path; later ones
// override earlier ones, as the collector merges --config files), waits for its health
// check, and starts it again on other ports when one was taken in the meantime. flags are
// command-line flags given before the configurations (a feature gate).
func StartCollector(t *testing.T, configs func(Ports) []string, flags ...string) (*Collector, Ports) {
	t.Helper()
	return StartCollectorCommand(t, configs, append([]string{Bin}, flags...))
}

// StartCollectorCommand is StartCollector with the command that runs the collector, its
// arguments before the --config files (another user's: setpriv ... BIN).
func StartCollectorCommand(t *testing.T, configs func(Ports) []string, command []string) (*Collector, Ports) {
	t.Helper()
	UseCollector()
	dir := t.TempDir()
	for attempt := 1; ; attempt++ {
		ports := NewPorts(t)
		args := append([]string(nil), command...)
		for i, c := range configs(ports) {
			path := c
			if strings.Contains(c, "\n") {
				path = filepath.Join(dir, fmt.Sprintf("config-%d-%d.yaml", attempt, i))
				require.NoError(t, os.WriteFile(path, []byte(c), 0o600))
			}
			args = append(args, "--config", path)
		}
		c := &Collector{
			Process:   StartProcess(t, "otelcol-gym", args...),
			GymURL:    fmt.Sprintf("http://127.0.0.1:%d", ports.Gym),
			HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", ports.Health),
		}
		err := c.WaitReady(c.HealthURL, 60*time.Second)
		if err == nil {
			return c, ports
		}
		if attempt < StartAttempts && c.Exited() && AddressInUse(c.Process) {
			t.Logf("otelcol-gym: a port was taken, starting again on others (attempt %d)", attempt+1)
			continue
		}
		t.Fatal(err)
	}
}

// GymAnswer is the gym receiver's JSON answer to POST /v1/events.
type GymAnswer struct {
	Accepted int `json:"accepted"`
	Rejected int `json:"rejected"`
	Unknown  int `json:"unknown"`
	Errors   []struct {
		Line  int    `json:"line"`
		Error string `json:"error"`
	} `json:"errors"`
}

// PostEvents sends one NDJSON body to the gym receiver.
func (c *Collector) PostEvents(t *testing.T, body string) (int, GymAnswer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.GymURL+"/v1/events", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var ans GymAnswer
	require.NoError(t, json.Unmarshal(data, &ans), "answer %d: %s", resp.StatusCode, data)
	return resp.StatusCode, ans
}

// ReadBodies reads a testdata NDJSON file as one HTTP body per `#`-comment-separated section:
// lines starting with `#` separate bodies and are dropped; every other line (blank ones too)
// is kept.
func ReadBodies(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var bodies []string
	var cur bytes.Buffer
	flush := func() {
		if s := strings.TrimRight(cur.String(), "\n"); strings.TrimSpace(s) != "" {
			bodies = append(bodies, s+"\n")
		}
		cur.Reset()
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "#") {
			flush()
			continue
		}
		cur.WriteString(l)
		cur.WriteByte('\n')
	}
	flush()
	return bodies
}

// Eventually retries check every interval until it returns nil or timeout passes, and
// returns its last error.
func Eventually(timeout, interval time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(interval)
	}
}

// ErrNotYet is what a check given to Eventually returns while the condition does not hold.
var ErrNotYet = errors.New("not yet")

// Python is python3's path. It is required in CI (.ci/run's machine has it); elsewhere a
// test that needs it is skipped.
func Python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is needed")
		}
		t.Skip("python3 is not installed")
	}
	return p
}

// Tool is the path of the first of names on PATH: a Debian package's command a test needs
// (.ci/run installs it). It is required in CI; elsewhere the test is skipped without it.
func Tool(t *testing.T, pkg string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, fmt.Sprintf("%s is not installed: `apt-get install %s` (.ci/run does it)", names[0], pkg))
	return ""
}
