//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The shipped configuration takes Gym's spans and logs, which Gym's SDK exports to the same
// OTLP endpoint as its metrics: before, /v1/traces and /v1/logs answered 404 and the SDK logged
// an export error at every interval. They are kept as OTLP JSON lines, where a rollout's spans
// are found by its id, beside the checkpoint in $OTELCOL_GYM_STORAGE_DIR:
// before, the checkpoint went to _build/storage under whatever directory the collector was
// started from.
func TestDefaultConfigKeepsTracesAndLogs(t *testing.T) {
	t.Parallel()
	state, cwd := t.TempDir(), t.TempDir()
	traces, logs := filepath.Join(state, "otel-traces.jsonl"), filepath.Join(state, "otel-logs.jsonl")
	col, ports := harness.StartCollectorCommand(t, func(p harness.Ports) []string {
		return []string{
			filepath.Join(harness.Root, "config", "otelcol-gym.yaml"),
			harness.DefaultOverride(t, p),
		}
	}, []string{"env", "-C", cwd, "OTELCOL_GYM_STORAGE_DIR=" + state, harness.Bin})
	url := fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP)

	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/driver")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("nemo_gym.telemetry")
	now := time.Now()
	for i, name := range []string{"gym.rollout", "gym.verify", "model_call"} {
		sp := ss.Spans().AppendEmpty()
		sp.SetName(name)
		sp.SetTraceID([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
		sp.SetSpanID([8]byte{1, 2, 3, 4, 5, 6, 7, byte(i + 1)})
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		sp.Attributes().PutStr("nemo.gym.rollout.id", "rollout-42")
	}
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	require.NoError(t, err)
	postOK(t, url+"/v1/traces", body)

	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "nemo-gym/driver")
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("rollout rollout-42 verified")
	lr.SetTimestamp(pcommon.NewTimestampFromTime(now))
	body, err = plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	require.NoError(t, err)
	postOK(t, url+"/v1/logs", body)

	// The batch processor sends within a second; the file exporter writes each export as a line.
	var spans []string
	require.NoError(t, harness.Eventually(20*time.Second, 200*time.Millisecond, func() error {
		spans = spans[:0]
		for _, line := range jsonLines(t, traces) {
			if !strings.Contains(line, "rollout-42") {
				continue
			}
			got, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(line))
			require.NoError(t, err, line)
			for _, rs := range got.ResourceSpans().All() {
				for _, ss := range rs.ScopeSpans().All() {
					for _, sp := range ss.Spans().All() {
						spans = append(spans, sp.Name())
					}
				}
			}
		}
		if len(spans) < 3 {
			return harness.ErrNotYet
		}
		return nil
	}))
	assert.ElementsMatch(t, []string{"gym.rollout", "gym.verify", "model_call"}, spans, "the rollout's spans, by its id")
	require.NoError(t, harness.Eventually(20*time.Second, 200*time.Millisecond, func() error {
		for _, line := range jsonLines(t, logs) {
			got, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs([]byte(line))
			require.NoError(t, err, line)
			if got.LogRecordCount() == 1 && strings.Contains(line, "rollout rollout-42 verified") {
				return nil
			}
		}
		return harness.ErrNotYet
	}))
	require.NoError(t, col.Stop(30*time.Second))

	stored, err := filepath.Glob(filepath.Join(state, "receiver_gym_*"))
	require.NoError(t, err)
	assert.NotEmpty(t, stored, "the checkpoint is kept in the storage directory")
	left, err := os.ReadDir(cwd)
	require.NoError(t, err)
	assert.Empty(t, left, "nothing is written where the collector was started")
}

func postOK(t *testing.T, url string, body []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/x-protobuf", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, data)
}

// jsonLines returns the lines of path (none while it does not exist).
func jsonLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	require.NoError(t, sc.Err())
	return out
}

// The override of docs/gym.md ("Traces and logs") forwards Gym's spans and logs to an OTLP
// backend and still keeps them in the files: the --config lines are read from the doc, with the
// backend's address replaced by a test server's.
func TestTracesAndLogsForwardedAsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(harness.Root, "docs", "gym.md"))
	require.NoError(t, err)
	section := string(doc)[strings.Index(string(doc), "## Traces and logs"):]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	var overrides []string
	for _, line := range strings.Split(section, "\n") {
		if i := strings.Index(line, "--config 'yaml:"); i >= 0 {
			v := strings.TrimSuffix(strings.TrimSpace(line[i+len("--config '"):]), "\\")
			overrides = append(overrides, strings.TrimSuffix(strings.TrimSpace(v), "'"))
		}
	}
	require.Len(t, overrides, 4, "the doc's example: the exporter and the three pipelines")

	var mu sync.Mutex
	got := map[string]int{}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" { // otlp_http's default
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			in = zr
		}
		body, err := io.ReadAll(in)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/traces":
			req := ptraceotlp.NewExportRequest()
			if req.UnmarshalProto(body) == nil {
				got["spans"] += req.Traces().SpanCount()
			}
		case "/v1/logs":
			req := plogotlp.NewExportRequest()
			if req.UnmarshalProto(body) == nil {
				got["logs"] += req.Logs().LogRecordCount()
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(backend.Close)
	for i, o := range overrides {
		overrides[i] = strings.Replace(o, "http://127.0.0.1:4328", backend.URL, 1)
	}
	require.Contains(t, overrides[0], backend.URL, "the doc's backend address")

	state := t.TempDir()
	col, ports := harness.StartCollectorCommand(t, func(p harness.Ports) []string {
		return append([]string{
			filepath.Join(harness.Root, "config", "otelcol-gym.yaml"),
			harness.DefaultOverride(t, p),
		}, overrides...)
	}, []string{"env", "OTELCOL_GYM_STORAGE_DIR=" + state, harness.Bin})
	url := fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP)

	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for i := range 5 {
		sp := ss.Spans().AppendEmpty()
		sp.SetName("gym.rollout")
		sp.SetTraceID([16]byte{9, byte(i + 1)})
		sp.SetSpanID([8]byte{9, byte(i + 1)})
	}
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	require.NoError(t, err)
	postOK(t, url+"/v1/traces", body)
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("forwarded")
	body, err = plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	require.NoError(t, err)
	postOK(t, url+"/v1/logs", body)

	require.NoError(t, harness.Eventually(20*time.Second, 200*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if got["spans"] < 5 || got["logs"] < 1 {
			return harness.ErrNotYet
		}
		return nil
	}))
	require.NoError(t, col.Stop(30*time.Second))
	mu.Lock()
	assert.Equal(t, map[string]int{"spans": 5, "logs": 1}, got, "each span and log record forwarded once")
	mu.Unlock()
	assert.NotEmpty(t, jsonLines(t, filepath.Join(state, "otel-traces.jsonl")), "and still kept in the file")
}
