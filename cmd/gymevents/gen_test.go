package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/gymgen"
)

// runGenJSON runs `gymevents gen --json ARGS` and decodes its report.
func runGenJSON(t *testing.T, args ...string) (int, genReport, string) {
	t.Helper()
	code, out, stderr := runCLI(t, append([]string{"gen", "--json"}, args...)...)
	var rep genReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "stdout:\n%s\nstderr:\n%s", out, stderr)
	return code, rep, stderr
}

func genFile(t *testing.T, args ...string) ([]byte, genReport) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gen.jsonl")
	code, rep, stderr := runGenJSON(t, append([]string{"--out", p}, args...)...)
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	return data, rep
}

func TestGenFileIsSeededAndShaped(t *testing.T) {
	shape := []string{"--events", "5000", "--seed", "7", "--processes", "3", "--batch", "100"}
	a, rep := genFile(t, shape...)
	b, _ := genFile(t, append(shape, "--pregen")...)
	assert.Equal(t, a, b, "--pregen writes the same stream")
	c, _ := genFile(t, "--events", "5000", "--seed", "8", "--processes", "3", "--batch", "100")
	assert.NotEqual(t, a, c, "another seed, another stream")

	// 5000 events in bodies of 100 lines: 99 events and a resource line each.
	bodies := gymgen.Bodies(a)
	assert.Len(t, bodies, 51)
	assert.Equal(t, int64(5000), rep.Events)
	assert.Equal(t, int64(5051), rep.Lines)
	assert.Equal(t, int64(51), rep.Bodies)
	assert.Equal(t, int64(len(a)), rep.Bytes)
	assert.Equal(t, "events", rep.Stopped)
	assert.False(t, rep.Answered)
	resources := map[string]bool{}
	for i, body := range bodies {
		lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		want := 100
		if i == len(bodies)-1 {
			want = 5000 - 50*99 + 1
		}
		assert.Len(t, lines, want, "body %d", i)
		resources[lines[0]] = true
		for _, l := range lines {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &m), l)
			assert.NotEmpty(t, m["event"], l)
		}
	}
	assert.Len(t, resources, 3, "three processes in turn")
}

// The same stream over HTTP: every body arrives (in any order across connections, in order
// within a process), and the report counts what the answers accepted.
func TestGenHTTPSendsTheStreamAndCountsAnswers(t *testing.T) {
	shape := []string{"--events", "3000", "--seed", "5", "--processes", "5", "--batch", "200"}
	want, _ := genFile(t, shape...)

	f := &fakeReceiver{}
	url := startFake(t, f)
	code, rep, stderr := runGenJSON(t, append(shape, "--endpoint", url, "--concurrency", "3")...)
	require.Equal(t, 0, code, stderr)

	var got []string
	perProcess := map[string][]string{}
	for _, b := range f.bodies {
		body := strings.Join(b, "\n") + "\n"
		got = append(got, body)
		perProcess[b[0]] = append(perProcess[b[0]], body)
	}
	wantBodies := gymgen.Bodies(want)
	wantPerProcess := map[string][]string{}
	for _, b := range wantBodies {
		first, _, _ := strings.Cut(b, "\n")
		wantPerProcess[first] = append(wantPerProcess[first], b)
	}
	assert.Equal(t, wantPerProcess, perProcess, "each process's bodies in order")
	slices.Sort(got)
	slices.Sort(wantBodies)
	assert.Equal(t, wantBodies, got)

	assert.True(t, rep.Answered)
	assert.Equal(t, "events", rep.Stopped)
	assert.Equal(t, 3, rep.Connections)
	assert.Equal(t, int64(3000), rep.Events)
	assert.Equal(t, int64(len(wantBodies)), rep.Bodies)
	// The fake receiver knows three events; it counts the others as unknown.
	assert.Equal(t, rep.Events, rep.AcceptedEvents+rep.Unknown)
	assert.Equal(t, rep.AcceptedEvents+rep.Bodies, rep.AcceptedLines)
	assert.Positive(t, rep.AcceptedEvents)
	assert.Zero(t, rep.Rejected)
	assert.Zero(t, rep.FailedLines)
	assert.Positive(t, rep.EventsPerSec)
}

func TestGenTextReport(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	code, out, stderr := runCLI(t, "gen", "--endpoint", strings.TrimPrefix(url, "http://"), "--events", "500", "--batch", "100", "--processes", "2")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "sent 500 events (506 lines with the resource lines, 6 bodies")
	assert.Contains(t, out, "accepted ")
	assert.Contains(t, out, "(+6 resource lines), rejected 0")
	assert.Contains(t, out, "stopped: events")
}

func TestGenRetries503(t *testing.T) {
	f := &fakeReceiver{status503: 2, retryAfter: "0"}
	url := startFake(t, f)
	code, rep, stderr := runGenJSON(t, "--endpoint", url, "--events", "99", "--batch", "100", "--concurrency", "1")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, int64(2), rep.Retries503)
	assert.Equal(t, int64(1), rep.Bodies)
	assert.Equal(t, int64(100), rep.AcceptedLines+rep.Unknown)
}

func TestGenRejectedLinesFailTheRun(t *testing.T) {
	f := &fakeReceiver{maxLines: 10} // every body of more lines answers 413
	url := startFake(t, f)
	code, rep, _ := runGenJSON(t, "--endpoint", url, "--events", "198", "--batch", "100", "--concurrency", "1")
	assert.Equal(t, 1, code)
	assert.Equal(t, int64(200), rep.FailedLines)
	assert.Zero(t, rep.AcceptedLines)
}

func TestGenReceiverDownStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	start := time.Now()
	code, rep, _ := runGenJSON(t, "--endpoint", "http://"+addr, "--events", "100000", "--retries", "1", "--max-wait", "10ms")
	assert.Equal(t, 1, code)
	assert.Equal(t, "error", rep.Stopped)
	assert.Contains(t, rep.Error, "connect")
	assert.Less(t, time.Since(start), 10*time.Second)
}

func TestGenRate(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	// 4,000 events at 20,000/s in bodies of 99 events: the last body is due after ~0.2 s.
	code, rep, stderr := runGenJSON(t, "--endpoint", url, "--events", "4000", "--rate", "20000", "--batch", "100", "--concurrency", "2")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, int64(4000), rep.Events)
	assert.GreaterOrEqual(t, rep.Seconds, 0.15)
	assert.Less(t, rep.EventsPerSec, 30000.0)
}

func TestGenDuration(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	code, rep, stderr := runGenJSON(t, "--endpoint", url, "--events", "0", "--duration", "400ms", "--rate", "10000", "--batch", "100")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "duration", rep.Stopped)
	// At most 10,000/s for 0.4 s (and a body ahead); at least one body, however slow the machine.
	assert.GreaterOrEqual(t, rep.Events, int64(99))
	assert.Less(t, rep.Events, int64(4200))
	assert.Equal(t, rep.Events, rep.AcceptedEvents+rep.Unknown, "every body sent was answered")
}

// streamServer accepts connections, reads each to its end, then closes it.
type streamServer struct {
	mu    sync.Mutex
	conns [][]byte
	wg    sync.WaitGroup
}

func startStreamServer(t *testing.T, network, addr string, s *streamServer) string {
	t.Helper()
	ln, err := net.Listen(network, addr)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() {
				defer c.Close()
				data, _ := io.ReadAll(c)
				s.mu.Lock()
				s.conns = append(s.conns, data)
				s.mu.Unlock()
			})
		}
	})
	return ln.Addr().String()
}

func (s *streamServer) received() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.conns)
}

func TestGenStreamTCPAndUnix(t *testing.T) {
	shape := []string{"--events", "3000", "--seed", "9", "--processes", "4", "--batch", "250"}
	want, _ := genFile(t, shape...)
	wantBodies := gymgen.Bodies(want)
	slices.Sort(wantBodies)

	sock := filepath.Join(t.TempDir(), "gym.sock")
	for _, target := range []func(*streamServer) string{
		func(s *streamServer) string { return "tcp://" + startStreamServer(t, "tcp", "127.0.0.1:0", s) },
		func(s *streamServer) string { startStreamServer(t, "unix", sock, s); return "unix://" + sock },
	} {
		s := &streamServer{}
		url := target(s)
		code, rep, stderr := runGenJSON(t, append(shape, "--stream", url, "--concurrency", "2")...)
		require.Equal(t, 0, code, stderr)
		assert.False(t, rep.Answered)
		assert.Equal(t, 2, rep.Connections)
		assert.Equal(t, int64(3000), rep.Events)
		// gen waits for the receiver to close each connection: everything has been read.
		conns := s.received()
		require.Len(t, conns, 2, url)
		var got []string
		var total int64
		for _, c := range conns {
			got = append(got, gymgen.Bodies(c)...)
			total += int64(len(c))
		}
		slices.Sort(got)
		assert.Equal(t, wantBodies, got, url)
		assert.Equal(t, rep.Bytes, total)
	}
}

func TestGenStreamReceiverNeverCloses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // never read to the end, never closed
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20)) }()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	code, rep, _ := runGenJSON(t, "--stream", "tcp://"+ln.Addr().String(), "--events", "10", "--timeout", "200ms")
	assert.Equal(t, 1, code)
	assert.Contains(t, rep.Error, "did not close the connection")
}

func TestSendStream(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "gym.sock")
	s := &streamServer{}
	startStreamServer(t, "unix", sock, s)
	// The last line has no newline: send adds one (the receiver rejects a partial last line).
	p := filepath.Join(t.TempDir(), "events.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(resA+"\n"+ev1+"\n\n"+ev2), 0o600))
	code, out, stderr := runCLI(t, "send", p, "--stream", "unix://"+sock)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "4 lines (")
	assert.Contains(t, out, "a stream does not answer")
	require.Len(t, s.received(), 1)
	assert.Equal(t, resA+"\n"+ev1+"\n\n"+ev2+"\n", string(s.received()[0]))

	// TCP, standard input, a line longer than the read buffer.
	s2 := &streamServer{}
	addr := startStreamServer(t, "tcp", "127.0.0.1:0", s2)
	long := `{"event":"x","pad":"` + strings.Repeat("a", 600<<10) + `"}`
	var o, e bytes.Buffer
	code = run([]string{"send", "-", "--stream", "tcp://" + addr}, strings.NewReader(long+"\n"+ev1+"\n"), &o, &e)
	require.Equal(t, 0, code, e.String())
	assert.Contains(t, o.String(), "2 lines")
	require.Len(t, s2.received(), 1)
	assert.Equal(t, long+"\n"+ev1+"\n", string(s2.received()[0]))
}

func TestSendStreamUsage(t *testing.T) {
	p := writeFile(t, resA)
	code, _, stderr := runCLI(t, "send", p, "--stream", "udp://127.0.0.1:1")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--stream")
	code, _, stderr = runCLI(t, "send", p, "--stream", "unix:///x.sock", "--endpoint", "http://127.0.0.1:1")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "exclude")
	// Nobody listens: exit 1 with the reason.
	code, _, stderr = runCLI(t, "send", p, "--stream", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "none.sock")
}

func TestParseStreamURL(t *testing.T) {
	for in, want := range map[string][2]string{
		"unix:///tmp/gym.sock":  {"unix", "/tmp/gym.sock"},
		"unix:gym.sock":         {"unix", "gym.sock"},
		"tcp://127.0.0.1:4391":  {"tcp", "127.0.0.1:4391"},
		"tcp://127.0.0.1:4391/": {"tcp", "127.0.0.1:4391"},
		"tcp6://[::1]:4391":     {"tcp6", "[::1]:4391"},
	} {
		network, addr, err := parseStreamURL(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, [2]string{network, addr}, in)
	}
	for _, bad := range []string{"", "gym.sock", "unix://", "tcp://127.0.0.1", "tcp:127.0.0.1:1", "http://h:1"} {
		_, _, err := parseStreamURL(bad)
		assert.Error(t, err, bad)
	}
}

func TestGenUsage(t *testing.T) {
	for _, args := range [][]string{
		{"gen"}, // no output
		{"gen", "--out", "x", "--endpoint", "http://127.0.0.1:1"},
		{"gen", "--out", "x", "--events", "0"}, // no bound
		{"gen", "--out", "x", "--batch", "1"},
		{"gen", "--out", "x", "--concurrency", "0"},
		{"gen", "--out", "x", "--rate", "-1"},
		{"gen", "--out", "x", "--events", "0", "--duration", "1s", "--pregen"},
		{"gen", "--out", "x", "--pregen", "--events", "1000000000"},
		{"gen", "--endpoint", "http://10.1.2.3:4390"}, // not loopback
		{"gen", "--stream", "tcp://192.0.2.1:4391"},
		{"gen", "--stream", "ftp://x"},
		{"gen", "stray"},
	} {
		code, _, stderr := runCLI(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
	}
	o := genOptions{endpoint: "http://10.1.2.3:4390", events: 1, batch: 2, concurrency: 1, processes: 1, allowRemote: true}
	target, err := o.check()
	require.NoError(t, err)
	assert.Equal(t, "http://10.1.2.3:4390/v1/events", target)
	for _, h := range []string{"127.0.0.1", "127.8.9.1", "::1", "localhost"} {
		assert.True(t, loopbackHost(h), h)
	}
	assert.False(t, loopbackHost("example.com"))
	code, _, stderr := runCLI(t, "gen", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "-pregen")
}

func TestPacer(t *testing.T) {
	p := pacer{start: time.Now(), rate: 1000}
	ctx := t.Context()
	start := time.Now()
	for range 5 {
		require.NoError(t, p.wait(ctx, 50)) // due at 0, 50, 100, 150, 200 ms
	}
	assert.GreaterOrEqual(t, time.Since(start), 190*time.Millisecond)
	unlimited := pacer{start: time.Now()}
	require.NoError(t, unlimited.wait(ctx, 1<<40))
	require.NoError(t, unlimited.wait(ctx, 1<<40))
}
