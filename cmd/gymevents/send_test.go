package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeReceiver answers POST /v1/events like docs/receiver.md says: it numbers every line of the
// body from 1 (blank ones included), accepts known events and well-formed resource lines,
// counts unknown events, and rejects the rest.
type fakeReceiver struct {
	mu     sync.Mutex
	bodies [][]string
	// status503 makes the first N requests answer 503 with Retry-After: retryAfter.
	status503  int
	retryAfter string
	// maxLines makes a body of more lines than this answer 413.
	maxLines int
	calls    int
}

func (f *fakeReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if r.Method != http.MethodPost || r.URL.Path != "/v1/events" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if f.status503 > 0 {
		f.status503--
		w.Header().Set("Retry-After", f.retryAfter)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rd = zr
	}
	data, _ := io.ReadAll(rd)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if f.maxLines > 0 && len(lines) > f.maxLines {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	f.bodies = append(f.bodies, lines)
	var ans answer
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var ev map[string]any
		err := json.Unmarshal([]byte(l), &ev)
		name, _ := ev["event"].(string)
		switch {
		case err != nil:
			err = fmt.Errorf("not JSON: %w", err)
		case name == "resource":
			if _, ok := ev["attributes"].(map[string]any); !ok {
				err = fmt.Errorf("resource: attributes: want an object")
			}
		case name == "sandbox.active" || name == "rollout.completed" || name == "event_loop.lag":
		default:
			ans.Unknown++
			continue
		}
		if err != nil {
			ans.Rejected++
			if len(ans.Errors) < 10 {
				ans.Errors = append(ans.Errors, struct {
					Line  int64  `json:"line"`
					Error string `json:"error"`
				}{int64(i + 1), err.Error()})
			}
			continue
		}
		ans.Accepted++
	}
	if ans.Rejected > 0 && ans.Accepted+ans.Unknown == 0 {
		w.WriteHeader(http.StatusBadRequest)
	}
	_ = json.NewEncoder(w).Encode(ans)
}

func startFake(t *testing.T, f *fakeReceiver) string {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL
}

func writeFile(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "events.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	return p
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

const (
	resA = `{"event":"resource","attributes":{"service.name":"a","process.pid":1}}`
	resB = `{"event":"resource","attributes":{"service.name":"b","process.pid":2}}`
	ev1  = `{"event":"sandbox.active","provider":"docker","delta":1}`
	ev2  = `{"event":"event_loop.lag","loop":"main","lag_ms":1.5}`
)

func TestSendBatchesKeepResources(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	p := writeFile(t, ev1, resA, ev1, ev2, ev1, resB, ev2, "", ev1)
	code, out, stderr := runCLI(t, "send", p, "--endpoint", url, "--batch", "2")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, stderr)

	// Lines 1..9 in batches of two; each body that does not start with a resource line gets
	// the latest resource line read before it.
	assert.Equal(t, [][]string{
		{ev1, resA},       // no resource before line 1: no prefix
		{resA, ev1, ev2},  // lines 3-4
		{resA, ev1, resB}, // lines 5-6
		{resB, ev2, ""},   // lines 7-8
		{resB, ev1},       // line 9
	}, f.bodies)
	assert.Contains(t, out, ": 9 lines in 5 requests: accepted 8, rejected 0, unknown 0\n")
}

func TestSendFlagsBeforeFile(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	p := writeFile(t, resA, ev1)
	code, out, _ := runCLI(t, "send", "--endpoint", strings.TrimPrefix(url, "http://"), "--gzip", p)
	require.Equal(t, 0, code, out)
	assert.Equal(t, [][]string{{resA, ev1}}, f.bodies)
}

func TestSendReportsRejectedWithFileLineNumbers(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	p := writeFile(t, resA, ev1, ev2, ev1, `{"event":`, ev1, `{"event":"future.thing"}`)
	code, out, _ := runCLI(t, "send", p, "--endpoint", url, "--batch", "3")
	assert.Equal(t, 1, code, out)
	// Line 5 is the second line of the second batch, which the prefix pushed to body line 3.
	assert.Contains(t, out, "line 5: not JSON")
	assert.NotContains(t, out, "line 6:")
	assert.Contains(t, out, "7 lines in 3 requests: accepted 5, rejected 1, unknown 1\n")
}

func TestSendUnknownOnlyExitsZero(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	p := writeFile(t, resA, `{"event":"future.thing"}`)
	code, out, _ := runCLI(t, "send", p, "--endpoint", url)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "accepted 1, rejected 0, unknown 1")
}

func TestSendRejectedResourcePrefixCountedOnce(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	bad := `{"event":"resource","attributes":null}`
	p := writeFile(t, bad, ev1, ev1, ev1)
	code, out, _ := runCLI(t, "send", p, "--endpoint", url, "--batch", "2")
	assert.Equal(t, 1, code, out)
	// The second body repeats the bad resource line (so its events stay under the default
	// resource, as in the file); its rejection is reported once, for line 1.
	assert.Equal(t, [][]string{{bad, ev1}, {bad, ev1, ev1}}, f.bodies)
	assert.Equal(t, 1, strings.Count(out, "line 1: resource"))
	assert.Contains(t, out, "4 lines in 2 requests: accepted 3, rejected 1, unknown 0\n")
}

func TestSendAllRejectedBody400(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	p := writeFile(t, "nope", "nope either")
	code, out, _ := runCLI(t, "send", p, "--endpoint", url)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "line 1: not JSON")
	assert.Contains(t, out, "line 2: not JSON")
	assert.Contains(t, out, "HTTP 400")
	assert.Contains(t, out, "accepted 0, rejected 2, unknown 0")
}

func TestSendRetries503(t *testing.T) {
	f := &fakeReceiver{status503: 2, retryAfter: "0"}
	url := startFake(t, f)
	p := writeFile(t, resA, ev1)
	code, out, _ := runCLI(t, "send", p, "--endpoint", url)
	require.Equal(t, 0, code, out)
	assert.Equal(t, 3, f.calls)
	assert.Equal(t, 2, strings.Count(out, "retrying in 0s"))
	assert.Contains(t, out, "accepted 2")
}

func TestSendGivesUpAfterRetries(t *testing.T) {
	f := &fakeReceiver{status503: 100, retryAfter: "0"}
	url := startFake(t, f)
	p := writeFile(t, resA, ev1)
	code, out, _ := runCLI(t, "send", p, "--endpoint", url, "--retries", "3")
	assert.Equal(t, 1, code)
	assert.Equal(t, 4, f.calls)
	assert.Contains(t, out, "lines 1-2: not delivered: HTTP 503")
	assert.Contains(t, out, "NOT DELIVERED 2")
}

func TestSendHonoursRetryAfter(t *testing.T) {
	f := &fakeReceiver{status503: 1, retryAfter: "7"}
	url := startFake(t, f)
	var slept []time.Duration
	s := &sender{
		url:    url + "/v1/events",
		opts:   sendOptions{batch: 10, maxBytes: 1 << 20, retries: 2, maxWait: 5 * time.Second},
		client: http.DefaultClient,
		out:    io.Discard,
		sleep: func(_ context.Context, d time.Duration) error {
			slept = append(slept, d)
			return nil
		},
	}
	tot, err := s.sendStream(context.Background(), strings.NewReader(resA+"\n"+ev1+"\n"))
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{5 * time.Second}, slept, "Retry-After 7 capped by --max-wait 5s")
	assert.Equal(t, int64(2), tot.accepted)
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	def := time.Second
	assert.Equal(t, def, retryAfter("", def, now))
	assert.Equal(t, def, retryAfter("soon", def, now))
	assert.Equal(t, 3*time.Second, retryAfter(" 3 ", def, now))
	assert.Equal(t, time.Duration(0), retryAfter("-1", def, now))
	assert.Equal(t, 10*time.Second, retryAfter(now.Add(10*time.Second).Format(http.TimeFormat), def, now))
	assert.Equal(t, time.Duration(0), retryAfter(now.Add(-time.Minute).Format(http.TimeFormat), def, now))
}

func TestSendSplitsOn413(t *testing.T) {
	f := &fakeReceiver{maxLines: 3}
	url := startFake(t, f)
	p := writeFile(t, resA, ev1, ev1, resB, ev2, ev2)
	code, out, _ := runCLI(t, "send", p, "--endpoint", url)
	require.Equal(t, 0, code, out)
	assert.Equal(t, [][]string{
		{resA, ev1, ev1},
		{resB, ev2, ev2},
	}, f.bodies)
	assert.Contains(t, out, "6 lines in 3 requests: accepted 6")
}

func TestSendSplitOn413CarriesResource(t *testing.T) {
	f := &fakeReceiver{maxLines: 2}
	url := startFake(t, f)
	p := writeFile(t, resA, ev1, ev2, ev1)
	code, out, _ := runCLI(t, "send", p, "--endpoint", url)
	require.Equal(t, 0, code, out)
	assert.Equal(t, [][]string{{resA, ev1}, {resA, ev2}, {resA, ev1}}, f.bodies)
	assert.Contains(t, out, "accepted 4")
}

func TestSendMaxBytes(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	p := writeFile(t, resA, ev1, ev1, ev1)
	// resA+ev1 fit; then each body holds the prefix and one event.
	limit := len(resA) + len(ev1) + 2
	code, out, _ := runCLI(t, "send", p, "--endpoint", url, "--max-bytes", fmt.Sprint(limit))
	require.Equal(t, 0, code, out)
	assert.Equal(t, [][]string{{resA, ev1}, {resA, ev1}, {resA, ev1}}, f.bodies)
}

func TestSendConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	p := writeFile(t, resA, ev1)
	code, out, _ := runCLI(t, "send", p, "--endpoint", url, "--retries", "0")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "not delivered")
	assert.Contains(t, out, "NOT DELIVERED 2")
}

func TestSendNon200(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	p := writeFile(t, resA)
	code, out, _ := runCLI(t, "send", p, "--endpoint", url+"/elsewhere/")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "HTTP 404")
}

func TestSendStdin(t *testing.T) {
	f := &fakeReceiver{}
	url := startFake(t, f)
	var out, errb bytes.Buffer
	code := run([]string{"send", "-", "--endpoint", url}, strings.NewReader(resA+"\n"+ev1), &out, &errb)
	require.Equal(t, 0, code, out.String()+errb.String())
	assert.Equal(t, [][]string{{resA, ev1}}, f.bodies, "a last line without newline is sent too")
}

func TestUsage(t *testing.T) {
	code, _, stderr := runCLI(t)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "usage: gymevents send FILE")
	code, _, _ = runCLI(t, "frobnicate")
	assert.Equal(t, 2, code)
	code, _, _ = runCLI(t, "send")
	assert.Equal(t, 2, code)
	code, _, _ = runCLI(t, "send", "a", "b")
	assert.Equal(t, 2, code)
	code, _, _ = runCLI(t, "send", "a", "--batch", "0")
	assert.Equal(t, 2, code)
	code, _, stderr = runCLI(t, "send", filepath.Join(t.TempDir(), "missing.jsonl"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "missing.jsonl")
}

func TestEventsURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4390":  "http://127.0.0.1:4390/v1/events",
		"http://127.0.0.1:4390/": "http://127.0.0.1:4390/v1/events",
		"127.0.0.1:4390":         "http://127.0.0.1:4390/v1/events",
		"http://h:1/gym":         "http://h:1/gym/v1/events",
		"https://h/v1/events":    "https://h/v1/events",
	} {
		got, err := eventsURL(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := eventsURL("ftp://h")
	assert.Error(t, err)
}

func TestIsResourceLine(t *testing.T) {
	assert.True(t, isResourceLine([]byte(resA)))
	assert.True(t, isResourceLine([]byte(`{"event":"resource","attributes":{"a":1},"x":NaN}`)))
	assert.True(t, isResourceLine([]byte(` {"attributes":{},"event":"resource"}`)))
	assert.False(t, isResourceLine([]byte(ev1)))
	assert.False(t, isResourceLine([]byte(`{"event":"sandbox.active","provider":"resource"}`)))
	assert.False(t, isResourceLine([]byte(`{"event":"x","note":"\"event\":\"resource\""}`)))
}

func TestWait(t *testing.T) {
	var n int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	code, out, stderr := runCLI(t, "wait", srv.URL, "--interval", "1ms")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "is up")

	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv2.Close)
	// Long enough for a first answer on a loaded machine under -race.
	code, _, stderr = runCLI(t, "wait", "--timeout", "1s", "--interval", "5ms", srv2.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "503 Service Unavailable")

	code, _, _ = runCLI(t, "wait")
	assert.Equal(t, 2, code)

	// A server that has exited: no need to wait for the timeout.
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	start := time.Now()
	code, _, stderr = runCLI(t, "wait", "--timeout", "30s", "--pid", fmt.Sprint(cmd.Process.Pid), srv2.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "exited")
	assert.Less(t, time.Since(start), 10*time.Second)
}
