//go:build linux

package e2e

import (
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// consoleSample is a Gym server's stdout with console telemetry (ordinary output, spans, two
// metrics batches, log records, a traceback and a cut line), written by hand from the
// Python SDK's to_json methods.
var consoleSample = filepath.Join("..", "testdata", "console", "gym-server-stdout.log")

// TestConsoleTelemetry: the real binary follows a Gym server's stdout log as it grows. Its
// metrics, bounded by the gymattrs rules and never counted twice, are asked of Debian's
// Prometheus; its spans, with their parent link, and its log records reach an OTLP backend.
func TestConsoleTelemetry(t *testing.T) {
	t.Parallel()
	harness.PrometheusBinary(t)
	sink := &harness.OTLPBackend{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	dir := t.TempDir()
	_, ports := harness.StartCollector(t, func(p harness.Ports) []string {
		return []string{harness.Config(t, "console.yaml", harness.Data{P: p, Sink: srv.URL, Dir: dir})}
	})
	prom := harness.StartPrometheus(t, fmt.Sprintf("127.0.0.1:%d", ports.Prometheus))

	data, err := os.ReadFile(consoleSample)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	// The first part: ordinary output, the first metrics batch, both spans.
	cut := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "Traceback") {
			cut = i
			break
		}
	}
	require.NotZero(t, cut)
	log := filepath.Join(dir, "math_with_judge.log")
	harness.AppendFile(t, log, strings.Join(lines[:cut], ""))

	failed := `sum by (nemo_gym_failure_kind) (gym_rollout_completed_total{nemo_run_id="run-7f3a",nemo_gym_rollout_outcome="failed"})`
	waitVector(t, prom, failed, map[string]float64{`{nemo_gym_failure_kind="unregistered"}`: 1})

	// The rest, with its traceback, its cut line and the second batch, which re-sends the
	// cumulative totals: the counter is 3, not 1 + 3.
	harness.AppendFile(t, log, strings.Join(lines[cut:], ""))
	waitVector(t, prom, failed, map[string]float64{`{nemo_gym_failure_kind="unregistered"}`: 3})
	waitVector(t, prom, `sum by (job, instance) (gym_rollout_completed_total{nemo_run_id="run-7f3a"})`,
		map[string]float64{`{instance="run-7f3a-rank0-pid4242",job="nemo-gym/math_with_judge"}`: 5}) // one instance per process (gymattrs)
	waitVector(t, prom, `gym_event_loop_lag_ms_count{nemo_gym_event_loop="main"}`, nil)
	got, err := harness.PromQuery(prom, `gym_event_loop_lag_ms_count{nemo_gym_event_loop="main"}`)
	require.NoError(t, err)
	for _, v := range got {
		assert.Equal(t, 7.0, v, "the histogram's count in the last batch")
	}
	// No free-text label: the gymattrs rules removed failure_reason.
	series, err := harness.PromQuery(prom, `count({__name__="gym_rollout_completed_total",failure_reason!=""})`)
	require.NoError(t, err)
	assert.Empty(t, series)

	require.NoError(t, harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		if len(sink.Spans()) < 2 || sink.LogRecords() < 2 {
			return harness.ErrNotYet
		}
		return nil
	}))
	spans := sink.Spans()
	client, server := spans["POST /verify"], spans["rollout"]
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", client.TraceID().String())
	assert.Equal(t, server.SpanID(), client.ParentSpanID(), "the parent link")
	assert.Equal(t, ptrace.StatusCodeError, client.Status().Code())
	assert.Equal(t, 1, client.Events().Len())
	assert.Equal(t, 1, server.Links().Len())
	assert.Equal(t, 2, sink.LogRecords())
	assert.Empty(t, sink.Errors())

	// The receiver's own counts: the cut metrics line rejected, the text skipped.
	assert.Equal(t, 1.0, harness.TelemetryValue(t, ports, "otelcol_receiver_gym_console_records_rejected", "reason", "invalid_json"))
	assert.Equal(t, 6.0, harness.TelemetryValue(t, ports, "otelcol_receiver_gym_console_records_accepted"))
}

// waitVector waits until a PromQL query returns want (nil: any non-empty answer).
func waitVector(t *testing.T, prom, query string, want map[string]float64) {
	t.Helper()
	var got map[string]float64
	err := harness.Eventually(60*time.Second, 300*time.Millisecond, func() error {
		var err error
		if got, err = harness.PromQuery(prom, query); err != nil {
			return err
		}
		if (want == nil && len(got) == 0) || (want != nil && !equalVectors(got, want)) {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "PromQL %s\n got:  %v\n want: %v", query, got, want)
}

// TestConsoleStream: a real Python process (the sample's generator, which prints its records
// with json.dumps as the SDK's console exporters do) writes its stdout into the receiver's Unix
// socket; every record reaches the OTLP backend, the re-sent total once.
func TestConsoleStream(t *testing.T) {
	t.Parallel()
	sink := &harness.OTLPBackend{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	dir := t.TempDir()
	harness.StartCollector(t, func(p harness.Ports) []string {
		return []string{harness.Config(t, "console-stream.yaml", harness.Data{P: p, Sink: srv.URL, Dir: dir})}
	})
	conn, err := net.Dial("unix", filepath.Join(dir, "console.sock"))
	require.NoError(t, err)
	py := exec.Command(harness.Python(t), filepath.Join(filepath.Dir(consoleSample), "gym_stdout.py"))
	var stderr strings.Builder
	py.Stdout, py.Stderr = conn, &stderr
	require.NoError(t, py.Run(), "%s", stderr.String())
	require.NoError(t, conn.Close())

	require.NoError(t, harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		if sink.Count() < 2 || len(sink.Spans()) < 2 || sink.LogRecords() < 2 {
			return harness.ErrNotYet
		}
		return nil
	}))
	assert.Empty(t, sink.Errors())
	exports := sink.Exports()
	require.Len(t, exports, 2, "one export per metrics line")
	var totals []int64
	for _, md := range exports {
		if v, ok := completed(md, service("nemo-gym/math_with_judge")); ok {
			totals = append(totals, int64(v))
		}
	}
	// failed 1 + scored 2, then failed 3 + scored 2: each export carries the totals.
	assert.Equal(t, []int64{3, 5}, totals)
}
