//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago. It picks below the
// usual ephemeral range (32768-60999), where the :0 listeners of tests running in parallel
// land, and never hands out the same port twice; a collision is still possible, and
// startCollector and startPrometheus retry on "address already in use".
func freePort(t *testing.T) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		if portsGiven[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		portsGiven[port] = true
		return port
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startAttempts is how often a server is started on new ports when the ones picked were
// taken in the meantime.
const startAttempts = 3

func addressInUse(p *process) bool {
	return strings.Contains(p.logTail(1<<16), "address already in use")
}

// process is a child process of a test, in its own process group, with its output in a file.
// t.Cleanup kills the group when the test did not stop it, whatever the outcome.
type process struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error // set when done is closed
}

func startProcess(t *testing.T, name string, args ...string) *process {
	t.Helper()
	return startProcessEnv(t, name, nil, args...)
}

// startProcessEnv is startProcess with env (KEY=value) added to the test's environment.
func startProcessEnv(t *testing.T, name string, env []string, args ...string) *process {
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
	p := &process{t: t, name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s output (%s) ---\n%s", name, logPath, p.logTail(12000))
		}
	})
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits for a graceful exit (SIGKILL to the group after the timeout).
func (p *process) stop(timeout time.Duration) error {
	if p.exited() {
		return fmt.Errorf("%s had already exited: %w", p.name, p.err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %s after SIGTERM", p.name, timeout)
	}
}

func (p *process) logTail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	if len(data) > n {
		data = append([]byte("...\n"), data[len(data)-n:]...)
	}
	return string(data)
}

// waitReady polls url until it answers 200, the process exits, or the timeout passes.
func (p *process) waitReady(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	last := "no answer"
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited before %s answered: %w\n%s", p.name, url, p.err, p.logTail(8000))
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
	return fmt.Errorf("%s: %s not ready after %s (%s)", p.name, url, timeout, last)
}

// collector is a running otelcol-gym.
type collector struct {
	*process
	gymURL    string // http://127.0.0.1:PORT, the gym receiver
	healthURL string
}

// collectorPorts are the loopback ports of one collector; the config template refers to them
// as {{.Gym}}, {{.Health}}, {{.Telemetry}} and so on.
type collectorPorts struct {
	Gym, Health, Telemetry, Prometheus, OTLPSink int
	// The otlp receiver's endpoints in the default configuration.
	OTLPGRPC, OTLPHTTP int
}

func newPorts(t *testing.T) collectorPorts {
	return collectorPorts{
		Gym:        freePort(t),
		Health:     freePort(t),
		Telemetry:  freePort(t),
		Prometheus: freePort(t),
		OTLPGRPC:   freePort(t),
		OTLPHTTP:   freePort(t),
	}
}

// startCollector starts otelcol-gym with the configurations that configs gives for a set of
// free ports (a string holding a newline is YAML, written to a file; else a path; later ones
// override earlier ones, as the collector merges --config files), waits for its health
// check, and starts it again on other ports when one was taken in the meantime. flags are
// command-line flags given before the configurations (a feature gate).
func startCollector(t *testing.T, configs func(collectorPorts) []string, flags ...string) (*collector, collectorPorts) {
	t.Helper()
	return startCollectorCommand(t, configs, append([]string{collectorBin}, flags...))
}

// startCollectorCommand is startCollector with the command that runs the collector, its
// arguments before the --config files (another user's: setpriv ... BIN).
func startCollectorCommand(t *testing.T, configs func(collectorPorts) []string, command []string) (*collector, collectorPorts) {
	t.Helper()
	useCollector()
	dir := t.TempDir()
	for attempt := 1; ; attempt++ {
		ports := newPorts(t)
		args := append([]string(nil), command...)
		for i, c := range configs(ports) {
			path := c
			if strings.Contains(c, "\n") {
				path = filepath.Join(dir, fmt.Sprintf("config-%d-%d.yaml", attempt, i))
				require.NoError(t, os.WriteFile(path, []byte(c), 0o600))
			}
			args = append(args, "--config", path)
		}
		c := &collector{
			process:   startProcess(t, "otelcol-gym", args...),
			gymURL:    fmt.Sprintf("http://127.0.0.1:%d", ports.Gym),
			healthURL: fmt.Sprintf("http://127.0.0.1:%d/", ports.Health),
		}
		err := c.waitReady(c.healthURL, 60*time.Second)
		if err == nil {
			return c, ports
		}
		if attempt < startAttempts && c.exited() && addressInUse(c.process) {
			t.Logf("otelcol-gym: a port was taken, starting again on others (attempt %d)", attempt+1)
			continue
		}
		t.Fatal(err)
	}
}

// gymAnswer is the gym receiver's JSON answer to POST /v1/events.
type gymAnswer struct {
	Accepted int `json:"accepted"`
	Rejected int `json:"rejected"`
	Unknown  int `json:"unknown"`
	Errors   []struct {
		Line  int    `json:"line"`
		Error string `json:"error"`
	} `json:"errors"`
}

// postEvents sends one NDJSON body to the gym receiver.
func (c *collector) postEvents(t *testing.T, body string) (int, gymAnswer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.gymURL+"/v1/events", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var ans gymAnswer
	require.NoError(t, json.Unmarshal(data, &ans), "answer %d: %s", resp.StatusCode, data)
	return resp.StatusCode, ans
}

// readLines reads a testdata NDJSON file as one HTTP body per `#`-comment-separated section:
// lines starting with `#` separate bodies and are dropped; every other line (blank ones too)
// is kept.
func readBodies(t *testing.T, path string) []string {
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

// eventually retries check every interval until it returns nil or timeout passes, and
// returns its last error.
func eventually(timeout, interval time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(interval)
	}
}

var errNotYet = errors.New("not yet")
