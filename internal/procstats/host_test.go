package procstats_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
)

// The test binary doubles as the processes it reads:
//
//	PROCSTATS_HELPER=threads,files  a process with that many extra locked OS threads and open
//	                                files, which burns some CPU, prints "ready", and lives until
//	                                its stdin closes.
//	PROCSTATS_SCRAPE=pid            scrapes pid once and prints the Result as JSON (run as another
//	                                user to meet real permission errors).
const (
	helperEnv = "PROCSTATS_HELPER"
	scrapeEnv = "PROCSTATS_SCRAPE"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		runHelper(spec)
		return
	}
	if pid := os.Getenv(scrapeEnv); pid != "" {
		runScrape(pid)
		return
	}
	os.Exit(m.Run())
}

func runHelper(spec string) {
	var threads, files int
	if _, err := fmt.Sscanf(spec, "%d,%d", &threads, &files); err != nil {
		panic(err)
	}
	var open []*os.File
	for range files {
		f, err := os.Open(os.DevNull)
		if err != nil {
			panic(err)
		}
		open = append(open, f)
	}
	locked := make(chan struct{})
	block := make(chan struct{})
	for range threads {
		go func() {
			runtime.LockOSThread() // never unlocked: this goroutine owns its thread until exit
			locked <- struct{}{}
			<-block
		}()
	}
	for range threads {
		<-locked
	}
	// Use some CPU, so that its time is > 0 at the kernel's 10 ms granularity.
	x := 0
	for deadline := time.Now().Add(150 * time.Millisecond); time.Now().Before(deadline); {
		for i := range 100_000 {
			x ^= i * i
		}
	}
	fmt.Println("ready", x&1)
	_, _ = io.Copy(io.Discard, os.Stdin)
	runtime.KeepAlive(open)
	os.Exit(0)
}

func runScrape(pidText string) {
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		panic(err)
	}
	s, err := procstats.NewScraper(procstats.NewHostSource(), procstats.Options{})
	if err != nil {
		panic(err)
	}
	res, err := s.Scrape(context.Background(), []procstats.Target{{PID: int32(pid), Key: "k"}})
	if err != nil {
		panic(err)
	}
	out := struct {
		Readings []procstats.Reading
		Errors   []string
		Kinds    []procstats.ErrorKind
		Counts   procstats.Counts
	}{Readings: res.Readings, Counts: res.Counts}
	for _, e := range res.Errors {
		out.Errors = append(out.Errors, e.Error())
		out.Kinds = append(out.Kinds, procstats.Classify(e))
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		panic(err)
	}
	os.Exit(0)
}

type helper struct {
	cmd          *exec.Cmd
	stdin        io.WriteCloser
	pid          int32
	started      time.Time
	ready        time.Time
	threads      int
	files        int
	marker       string
	executable   string
	waitReturned bool
}

func startHelper(t *testing.T, threads, files int) *helper {
	t.Helper()
	return startHelperWith(t, threads, files, nil)
}

// startHelperWith is startHelper with prep applied to the command before it starts.
func startHelperWith(t *testing.T, threads, files int, prep func(*exec.Cmd)) *helper {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("real process tests run on Linux and macOS")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	h := &helper{threads: threads, files: files, executable: exe,
		marker: fmt.Sprintf("procstats-helper-%d-%d", os.Getpid(), time.Now().UnixNano())}
	h.cmd = exec.Command(exe, "-test.run=^$", h.marker)
	h.cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d", helperEnv, threads, files))
	h.cmd.Stderr = os.Stderr
	if prep != nil {
		prep(h.cmd)
	}
	h.stdin, err = h.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := h.cmd.StdoutPipe()
	require.NoError(t, err)
	h.started = time.Now()
	require.NoError(t, h.cmd.Start())
	h.pid = int32(h.cmd.Process.Pid)
	t.Cleanup(func() {
		_ = h.stdin.Close()
		if !h.waitReturned {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
	})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		require.True(t, strings.HasPrefix(l, "ready"), "helper said %q", l)
	case <-time.After(60 * time.Second):
		t.Fatal("helper did not get ready")
	}
	h.ready = time.Now()
	return h
}

// stop kills the helper and reaps it, so that its pid is gone.
func (h *helper) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, h.cmd.Process.Kill())
	_ = h.cmd.Wait()
	h.waitReturned = true
}

func TestHostReadsARealProcess(t *testing.T) {
	const threads, files = 8, 16
	h := startHelper(t, threads, files)
	s, err := procstats.NewScraper(procstats.NewHostSource(), procstats.Options{})
	require.NoError(t, err)

	res, err := s.Scrape(context.Background(), []procstats.Target{{PID: h.pid, Key: "gym-resource"}})
	require.NoError(t, err)
	assert.Empty(t, res.Errors)
	require.Len(t, res.Readings, 1)
	r := res.Readings[0]
	t.Logf("reading: %+v", r)
	assert.Equal(t, h.pid, r.PID)
	assert.Equal(t, "gym-resource", r.Key)
	assert.Equal(t, procstats.OriginAnnounced, r.Origin)
	assert.True(t, r.New)
	assert.Equal(t, filepath.Base(h.executable), r.ExecutableName)

	// Create time: milliseconds since the epoch, when the process started (the boot time it is
	// computed from has one-second resolution).
	ct := time.UnixMilli(r.CreateTime)
	assert.WithinRange(t, ct, h.started.Add(-2*time.Second), h.ready.Add(2*time.Second))

	require.True(t, r.HasThreads)
	assert.GreaterOrEqual(t, r.Threads, int64(threads+1), "locked threads plus the main one")
	assert.Less(t, r.Threads, int64(1000))
	require.True(t, r.HasFDs)
	assert.GreaterOrEqual(t, r.FDs, int64(files+3), "the opened files plus stdin, stdout, stderr")
	assert.Less(t, r.FDs, int64(files+100))
	require.True(t, r.HasRSS)
	assert.Greater(t, r.RSS, int64(1<<20), "bytes, not pages or KiB")
	assert.Less(t, r.RSS, int64(4<<30))
	require.True(t, r.HasCPU)
	assert.GreaterOrEqual(t, r.CPU.User, 0.0)
	assert.GreaterOrEqual(t, r.CPU.System, 0.0)
	assert.Greater(t, r.CPU.User+r.CPU.System, 0.0, "it burned 150 ms")
	assert.Less(t, r.CPU.User+r.CPU.System, time.Since(h.started).Seconds()*float64(runtime.NumCPU())+0.1, "seconds, not ticks")
	assert.Equal(t, runtime.GOOS == "linux", r.CPU.HasWait)
	assert.GreaterOrEqual(t, r.CPU.Wait, 0.0)

	// The same process next time: not new, CPU time does not go down.
	res, err = s.Scrape(context.Background(), []procstats.Target{{PID: h.pid, Key: "gym-resource"}})
	require.NoError(t, err)
	require.Len(t, res.Readings, 1)
	assert.False(t, res.Readings[0].New)
	assert.Equal(t, r.CreateTime, res.Readings[0].CreateTime, "create time is stable across reads")
	assert.GreaterOrEqual(t, res.Readings[0].CPU.User, r.CPU.User)
	last := res.Readings[0]

	// Killed (and reaped): not found, and reported ended once.
	h.stop(t)
	res, err = s.Scrape(context.Background(), []procstats.Target{{PID: h.pid, Key: "gym-resource"}})
	require.NoError(t, err)
	assert.Empty(t, res.Readings)
	assert.Equal(t, procstats.Counts{NotFound: 1}, res.Counts)
	require.Len(t, res.Errors, 1)
	assert.Equal(t, fmt.Sprintf("pid %d (%s): no such process", h.pid, r.ExecutableName), res.Errors[0].Error())
	assert.Equal(t, []procstats.Reading{last}, res.Ended)
}

func TestHostSelf(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("real process tests run on Linux and macOS")
	}
	s, err := procstats.NewScraper(procstats.NewHostSource(), procstats.Options{IncludeSelf: true})
	require.NoError(t, err)
	res, err := s.Scrape(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, res.Errors)
	require.Len(t, res.Readings, 1)
	r := res.Readings[0]
	exe, err := os.Executable()
	require.NoError(t, err)
	assert.Equal(t, int32(os.Getpid()), r.PID)
	assert.Equal(t, procstats.OriginSelf, r.Origin)
	assert.Equal(t, filepath.Base(exe), r.ExecutableName)
	assert.True(t, r.HasThreads && r.Threads >= 1)
	assert.True(t, r.HasFDs && r.FDs >= 3)
	assert.True(t, r.HasRSS && r.RSS > 0)
	assert.True(t, r.HasCPU && r.CPU.User+r.CPU.System > 0)
	assert.LessOrEqual(t, r.CreateTime, time.Now().UnixMilli())
}

func TestHostInclude(t *testing.T) {
	h := startHelper(t, 1, 1)
	opts := procstats.Options{Include: []procstats.IncludeRule{{CommandLine: regexp.QuoteMeta(h.marker) + "$"}}}
	s, err := procstats.NewScraper(procstats.NewHostSource(), opts)
	require.NoError(t, err)
	res, err := s.Scrape(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, []int32{h.pid}, pidsOf(res.Readings), "errors: %v", res.Errors)
	assert.Equal(t, procstats.OriginInclude, res.Readings[0].Origin)

	// By executable name: the helper and this test process run the same binary.
	opts = procstats.Options{Include: []procstats.IncludeRule{{Executable: filepath.Base(h.executable)}}}
	s, err = procstats.NewScraper(procstats.NewHostSource(), opts)
	require.NoError(t, err)
	res, err = s.Scrape(context.Background(), nil)
	require.NoError(t, err)
	assert.Contains(t, pidsOf(res.Readings), h.pid)
	assert.Contains(t, pidsOf(res.Readings), int32(os.Getpid()))
	for _, r := range res.Readings {
		assert.Equal(t, filepath.Base(h.executable), r.ExecutableName)
	}

	// It ends: reported ended, without an error.
	h.stop(t)
	res, err = s.Scrape(context.Background(), nil)
	require.NoError(t, err)
	assert.NotContains(t, pidsOf(res.Readings), h.pid)
	assert.Contains(t, pidsOf(res.Ended), h.pid)
	assert.Empty(t, res.Errors)
}

func TestHostNotFound(t *testing.T) {
	src := procstats.NewHostSource()
	p, err := src.Open(1 << 30) // above any pid_max
	require.NoError(t, err)
	_, err = p.CreateTime(context.Background())
	assert.Equal(t, procstats.KindNotFound, procstats.Classify(err), "%v", err)
	_, err = p.Times(context.Background())
	assert.Equal(t, procstats.KindNotFound, procstats.Classify(err), "%v", err)
	_, err = p.NumFDs(context.Background())
	assert.Equal(t, procstats.KindNotFound, procstats.Classify(err), "%v", err)
	_, err = src.Open(0)
	assert.Equal(t, procstats.KindNotFound, procstats.Classify(err))

	s, err := procstats.NewScraper(src, procstats.Options{})
	require.NoError(t, err)
	res, err := s.Scrape(context.Background(), []procstats.Target{{PID: 1 << 30}})
	require.NoError(t, err)
	assert.Equal(t, procstats.Counts{NotFound: 1}, res.Counts)
	assert.Equal(t, []string{"pid 1073741824: no such process"}, errorStrings(res))

	host, err := src.Hostname()
	require.NoError(t, err)
	want, _ := os.Hostname()
	assert.Equal(t, want, host)
}
