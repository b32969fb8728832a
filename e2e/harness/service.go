package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Service is a collector (or a stock peer) that a bench program started: context-bound, no *testing.T.
type Service struct {
	Name    string
	Cmd     *exec.Cmd
	Pid     int
	Dir     string // its configuration and log
	LogPath string
	// Loopback endpoints ("" when not configured).
	PprofAddr    string // host:port of the pprof extension
	TelemetryURL string // the collector's own metrics (Prometheus text)
	done         chan struct{}
	exitErr      error
}

// ServiceOptions start a collector.
type ServiceOptions struct {
	Name       string
	Bin        string
	Config     string   // YAML
	Env        []string // added to the harness's environment (e.g. GOMAXPROCS=1)
	Dir        string   // where the config and the log go
	HealthURL  string   // waited for when set
	Ready      func(context.Context) error
	PprofAddr  string
	Telemetry  string
	StartLimit time.Duration
}

// StartService writes the configuration, starts the collector and waits until it is up.
func StartService(ctx context.Context, o ServiceOptions) (*Service, error) {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(o.Dir, o.Name+".yaml")
	if err := os.WriteFile(cfg, []byte(o.Config), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(o.Dir, o.Name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.Bin, "--config", cfg)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	c := &Service{Name: o.Name, Cmd: cmd, Pid: cmd.Process.Pid, Dir: o.Dir, LogPath: logPath,
		PprofAddr: o.PprofAddr, TelemetryURL: o.Telemetry, done: make(chan struct{})}
	go func() {
		c.exitErr = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	limit := o.StartLimit
	if limit == 0 {
		limit = 60 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	ready := o.Ready
	if ready == nil && o.HealthURL != "" {
		ready = func(ctx context.Context) error { return getOK(ctx, o.HealthURL) }
	}
	if ready != nil {
		for {
			err := ready(wctx)
			if err == nil {
				break
			}
			select {
			case <-c.done:
				why := c.exitErr
				if why == nil {
					why = errors.New("exit status 0")
				}
				return nil, fmt.Errorf("%s exited at start-up (%w); its log:\n%s", o.Name, why, c.LogTail(30))
			case <-wctx.Done():
				c.Stop()
				return nil, fmt.Errorf("%s not up within %v (%w); its log:\n%s", o.Name, limit, err, c.LogTail(30))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return c, nil
}

// Listening is a Ready check: addr accepts TCP connections, and, when url is set, url answers
// 200. A collector's own telemetry is served before its receivers start: the receiver's port
// says they did.
func Listening(addr, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		conn.Close()
		if url == "" {
			return nil
		}
		return getOK(ctx, url)
	}
}

func getOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// Alive tells whether the process still runs.
func (c *Service) Alive() bool { return !closed(c.done) }

// closed tells whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Stop stops the collector: SIGTERM, then SIGKILL after 15 s.
func (c *Service) Stop() {
	if !c.Alive() {
		return
	}
	_ = c.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		_ = c.Cmd.Process.Kill()
		<-c.done
	}
}

// CPU is the process's CPU time so far.
func (c *Service) CPU() (time.Duration, error) { return ProcCPU(c.Pid) }

// LogTail returns the last n lines of the collector's log.
func (c *Service) LogTail(n int) string {
	data, _ := os.ReadFile(c.LogPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Goroutines reads the goroutine count from the pprof extension.
func (c *Service) Goroutines(ctx context.Context) (int, error) {
	data, err := Get(ctx, "http://"+c.PprofAddr+"/debug/pprof/goroutine?debug=1", 1<<22)
	if err != nil {
		return 0, err
	}
	first, _, _ := strings.Cut(string(data), "\n")
	var n int
	if _, err := fmt.Sscanf(first, "goroutine profile: total %d", &n); err != nil {
		return 0, fmt.Errorf("goroutine profile: %q", first)
	}
	return n, nil
}

// Heap is the Go heap of the collector (runtime.MemStats).
type Heap struct {
	Alloc, Inuse, Sys int64
}

var memStatRE = regexp.MustCompile(`(?m)^# (HeapAlloc|HeapInuse|Sys) = (\d+)$`)

// HeapAfterGC asks the pprof extension for a heap profile after a garbage collection
// (gc=1) and reads the runtime's memory statistics printed with it: the live heap.
func (c *Service) HeapAfterGC(ctx context.Context) (Heap, error) {
	data, err := Get(ctx, "http://"+c.PprofAddr+"/debug/pprof/heap?gc=1&debug=1", 64<<20)
	if err != nil {
		return Heap{}, err
	}
	var h Heap
	for _, m := range memStatRE.FindAllStringSubmatch(string(data), -1) {
		v, _ := strconv.ParseInt(m[2], 10, 64)
		switch m[1] {
		case "HeapAlloc":
			h.Alloc = v
		case "HeapInuse":
			h.Inuse = v
		case "Sys":
			h.Sys = v
		}
	}
	if h.Alloc == 0 {
		return h, errors.New("no HeapAlloc in the heap profile")
	}
	return h, nil
}

// CPUProfile captures seconds of CPU profile from the pprof extension into path.
func (c *Service) CPUProfile(ctx context.Context, seconds int, path string) error {
	client := &http.Client{Timeout: time.Duration(seconds+30) * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", c.PprofAddr, seconds), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Metrics scrapes the collector's own metrics and sums every sample of each metric name
// (labels dropped).
func (c *Service) Metrics(ctx context.Context) (map[string]float64, error) {
	data, err := Get(ctx, c.TelemetryURL, 16<<20)
	if err != nil {
		return nil, err
	}
	return ParsePrometheusText(data), nil
}

// ParsePrometheusText sums the samples of Prometheus text exposition by metric name.
func ParsePrometheusText(data []byte) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		name, rest := l, ""
		if i := strings.IndexAny(l, "{ "); i >= 0 {
			name, rest = l[:i], l[i:]
		}
		if strings.HasPrefix(rest, "{") {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				continue
			}
			rest = rest[j+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out[name] += v
	}
	return out
}

// Sum adds the values of the metrics whose names start with any of the prefixes.
func Sum(m map[string]float64, prefixes ...string) float64 {
	var s float64
	for k, v := range m {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				s += v
				break
			}
		}
	}
	return s
}

// StatusError is Get's error for an answer other than 200: its status and (the first limit
// bytes of) its body.
type StatusError struct {
	URL, Status string
	Code        int
	Body        []byte
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: %s", e.URL, e.Status) }

// Get reads at most limit bytes of url, which must answer 200 within 30 s (else a
// *StatusError).
func Get(ctx context.Context, url string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{URL: url, Status: resp.Status, Code: resp.StatusCode, Body: data}
	}
	return data, nil
}

// Main runs a bench program's body with a context that SIGINT and SIGTERM cancel, and exits
// with status 1 and the error, prefixed with name, when it fails.
func Main(name string, run func(context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
