//go:build linux

package e2e

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// gymSpans is one OTLP export of a Gym process of run run-e2e: each span is "rollout id/name/server".
// The sender's clock is skew off the collector's (Gym's hosts' clocks are not the collector's).
func gymSpans(t *testing.T, skew time.Duration, spans ...string) []byte {
	return gymRunSpans(t, "run-e2e", skew, spans...)
}

// gymRunSpans is gymSpans of a Gym process of run.
func gymRunSpans(t *testing.T, run string, skew time.Duration, spans ...string) []byte {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/e2e")
	rs.Resource().Attributes().PutStr("nemo.run.id", run)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("nemo_gym.telemetry")
	end := time.Now().Add(skew)
	for i, s := range spans {
		f := strings.Split(s, "/")
		sp := ss.Spans().AppendEmpty()
		sp.SetName(f[1])
		sp.SetTraceID([16]byte{byte(len(f[0])), f[0][0]})
		sp.SetSpanID([8]byte{1, byte(i + 1), byte(end.UnixNano())})
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(end.Add(-time.Second)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
		sp.Attributes().PutStr("nemo.gym.rollout.id", f[0])
		sp.Attributes().PutStr("nemo.gym.server.name", f[2])
	}
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	require.NoError(t, err)
	return body
}

// flightRollouts is one export of three rollouts: "done" finished (its gym.rollout span came),
// "busy" in a model call, "silent" after a sandbox command.
func flightRollouts(t *testing.T, skew time.Duration) []byte {
	return gymSpans(t, skew, "done/gym.agent.responses/math_agent", "done/gym.rollout/math_agent",
		"busy/gym.model.chat_completions/policy_model", "silent/gym.sandbox.exec/sandbox")
}

// busyRollout sends a model call of the busy rollout to url every 200ms until stop is called.
func busyRollout(t *testing.T, url string, skew time.Duration) (stop func()) {
	done, wg := make(chan struct{}), sync.WaitGroup{}
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				postOK(t, url, gymSpans(t, skew, "busy/gym.model.chat_completions/policy_model"))
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// flightPoints reads the connector's metrics of run-e2e in md: "metric|server|stage" -> value.
func flightPoints(md pmetric.Metrics) map[string]float64 {
	out := map[string]float64{}
	for _, name := range []string{"gym.rollout.in_flight", "gym.rollout.stalled", "gym.rollout.stalls_total", "gym.rollout.oldest_in_flight_age"} {
		for _, m := range metricsNamed(md, attrIs("nemo.run.id", "run-e2e"), name) {
			for _, dp := range numberPoints(m).All() {
				out[name+"|"+attrOf(dp.Attributes(), "nemo.gym.server.name")+"|"+attrOf(dp.Attributes(), "nemo.gym.rollout.stage")] = numberOf(dp)
			}
		}
	}
	return out
}

func attrOf(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok {
		return v.AsString()
	}
	return ""
}

// flightRecords returns the connector's log records in the file exporter's output, by event
// name and rollout id: "gym.rollout.stalled silent" -> the record's attributes.
func flightRecords(t *testing.T, path string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, line := range jsonLines(t, path) {
		ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs([]byte(line))
		require.NoError(t, err, line)
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					a := lr.Attributes().AsRaw()
					a["body"] = lr.Body().Str()
					a["trace_id"] = lr.TraceID()
					out[fmt.Sprintf("%s %v", lr.EventName(), a["nemo.gym.rollout.id"])] = a
				}
			}
		}
	}
	return out
}

// TestFlightRecorder: the real binary takes the spans of three rollouts of Gym's processes by
// OTLP (a sender whose clock is three hours behind): one finished (its gym.rollout span came),
// one busy (a model call every 200ms), one silent after a sandbox command. With stall_after 3s,
// the sink receives exact gauges (two in flight, the silent one stalled, not the busy one) and
// the logs file the stall's record; the silent one's next span resumes it (logged), and with
// both ended nothing is in flight.
func TestFlightRecorder(t *testing.T) {
	t.Parallel()
	sink, dir := harness.NewOTLPSink(t), t.TempDir()
	_, ports := harness.StartCollector(t, func(p harness.Ports) []string {
		return []string{harness.Config(t, "gymrollouts.yaml", harness.Data{P: p, Sink: sink.URL(), Dir: dir,
			X: map[string]any{"stall_after": "3s"}})}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/traces", ports.OTLPHTTP)
	const skew = -3 * time.Hour
	logs := filepath.Join(dir, "logs.jsonl")

	postOK(t, url, flightRollouts(t, skew))
	stopBusy := busyRollout(t, url, skew)

	var got map[string]float64
	err := harness.Eventually(60*time.Second, 100*time.Millisecond, func() error {
		exports := sink.Exports()
		if len(exports) == 0 {
			return harness.ErrNotYet
		}
		got = flightPoints(exports[len(exports)-1])
		if got["gym.rollout.stalled|sandbox|sandbox"] != 1 {
			return harness.ErrNotYet
		}
		return nil
	})
	stopBusy()
	require.NoError(t, err, "the silent rollout stalls: %v", got)
	age := got["gym.rollout.oldest_in_flight_age||"]
	assert.GreaterOrEqual(t, age, 3.0, "the oldest in flight is at least as old as its stall")
	delete(got, "gym.rollout.oldest_in_flight_age||")
	assert.Equal(t, map[string]float64{
		"gym.rollout.in_flight|policy_model|model_call": 1,
		"gym.rollout.in_flight|sandbox|sandbox":         1,
		"gym.rollout.stalled|sandbox|sandbox":           1,
		"gym.rollout.stalls_total|sandbox|sandbox":      1,
	}, got, "the finished one is not in flight, the busy one is not stalled")

	var records map[string]map[string]any
	require.NoError(t, harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		if records = flightRecords(t, logs); records["gym.rollout.stalled silent"] == nil {
			return harness.ErrNotYet
		}
		return nil
	}))
	stall := records["gym.rollout.stalled silent"]
	assert.Equal(t, "run-e2e", stall["nemo.run.id"])
	assert.Equal(t, "sandbox", stall["nemo.gym.server.name"])
	assert.Equal(t, "sandbox", stall["nemo.gym.rollout.stage"])
	assert.Equal(t, "gym.sandbox.exec", stall["nemo.gym.rollout.last_span"])
	assert.GreaterOrEqual(t, stall["nemo.gym.rollout.idle_s"], 3.0)
	assert.Contains(t, stall["body"], "rollout silent stalled")
	assert.Equal(t, pcommon.TraceID{byte(len("silent")), 's'}, stall["trace_id"], "linked to the trace of its last span")
	assert.Len(t, records, 1, "only the silent rollout stalled: %v", records)

	// The silent one's next span resumes it; the busy one ends; then the silent one ends.
	postOK(t, url, gymSpans(t, skew, "silent/gym.verify/math_resources", "busy/gym.rollout/math_agent"))
	require.NoError(t, harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		if records = flightRecords(t, logs); records["gym.rollout.resumed silent"] == nil {
			return harness.ErrNotYet
		}
		return nil
	}))
	assert.Equal(t, "verify", records["gym.rollout.resumed silent"]["nemo.gym.rollout.stage"])
	postOK(t, url, gymSpans(t, skew, "silent/gym.rollout/math_agent"))
	err = harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		exports := sink.Exports()
		got = flightPoints(exports[len(exports)-1])
		if _, ok := got["gym.rollout.oldest_in_flight_age||"]; ok || got["gym.rollout.stalls_total|sandbox|sandbox"] != 1 {
			return harness.ErrNotYet // a collection after both ended: no age, the counter kept
		}
		return nil
	})
	require.NoError(t, err, "%v", got)
	for k, v := range got {
		if !strings.HasPrefix(k, "gym.rollout.stalls_total") {
			assert.Zero(t, v, "%s: nothing in flight", k)
		}
	}
}

// TestDefaultConfigFlightRecorder: the shipped configuration has the flight recorder between
// its traces pipeline and its metrics pipeline: a silent rollout's spans by OTLP become
// gym_rollout_in_flight and gym_rollout_stalled on its Prometheus endpoint, the run a label
// (stall_after and collection_interval shortened by an override).
func TestDefaultConfigFlightRecorder(t *testing.T) {
	t.Parallel()
	_, ports := harness.StartDefaultCollector(t, "connectors:\n  gymrollouts:\n    collection_interval: 200ms\n    stall_after: 1s\n")
	postOK(t, fmt.Sprintf("http://127.0.0.1:%d/v1/traces", ports.OTLPHTTP),
		gymSpans(t, 0, "quiet/gym.model.responses/policy_model"))
	want := map[string]string{"nemo_run_id": "run-e2e", "nemo_gym_server_name": "policy_model", "nemo_gym_rollout_stage": "model_call"}
	var text string
	err := harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		text = exposition(t, ports.Prometheus)
		if v, ok := sampleOf(text, "gym_rollout_stalled", want); !ok || v != 1 {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "%s", text)
	v, ok := sampleOf(text, "gym_rollout_in_flight", want)
	assert.True(t, ok && v == 1, "gym_rollout_in_flight %v %v", v, ok)
	v, ok = sampleOf(text, "gym_rollout_stalls_total", want)
	assert.True(t, ok && v == 1, "gym_rollout_stalls_total %v %v", v, ok)
}

// sampleOf is the value of the sample of metric in an exposition whose labels include want.
func sampleOf(text, metric string, want map[string]string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") {
			continue
		}
		match := true
		for k, v := range want {
			match = match && strings.Contains(line, k+`="`+v+`"`)
		}
		if !match {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, "}")+1:], &v); err == nil {
			return v, true
		}
	}
	return 0, false
}

// TestDefaultConfigRunsKeptApart: Gym names a rollout <task>-<rollout> in every run, so two runs
// reuse ids. Through the default configuration: run A finishes 3-0 while its 5-0 stays busy;
// run B's 3-0 and 5-0 start and go quiet. Each run's gauges are its own (in flight A=1, B=2;
// stalled A=0, B=2: B's 3-0 is no late span of A's, the two 5-0s are not one), and the stall
// records name run B.
func TestDefaultConfigRunsKeptApart(t *testing.T) {
	t.Parallel()
	logs := filepath.Join(t.TempDir(), "logs.jsonl")
	_, ports := harness.StartDefaultCollector(t, "connectors:\n  gymrollouts:\n    collection_interval: 200ms\n    stall_after: 2s\n"+
		"exporters:\n  file/logs:\n    path: "+logs+"\n")
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/traces", ports.OTLPHTTP)
	postOK(t, url, gymRunSpans(t, "run-a", 0, "3-0/gym.verify/math_agent", "5-0/gym.verify/math_agent"))
	postOK(t, url, gymRunSpans(t, "run-a", 0, "3-0/gym.rollout/math_agent"))
	postOK(t, url, gymRunSpans(t, "run-b", 0, "3-0/gym.verify/math_agent", "5-0/gym.verify/math_agent"))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				postOK(t, url, gymRunSpans(t, "run-a", 0, "5-0/gym.verify/math_agent"))
			}
		}
	}()
	want := map[string]float64{
		"gym_rollout_in_flight run-a": 1, "gym_rollout_in_flight run-b": 2,
		"gym_rollout_stalled run-a": 0, "gym_rollout_stalled run-b": 2,
		"gym_rollout_stalls_total run-a": 0, "gym_rollout_stalls_total run-b": 2,
	}
	got := map[string]float64{}
	var text string
	err := harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		text = exposition(t, ports.Prometheus)
		for k := range want {
			f := strings.Fields(k)
			v, _ := sampleOf(text, f[0], map[string]string{"nemo_run_id": f[1], "nemo_gym_rollout_stage": "verify"})
			got[k] = v
		}
		if !maps.Equal(got, want) {
			return harness.ErrNotYet
		}
		return nil
	})
	close(stop)
	<-done
	require.NoError(t, err, "%v\n%s", got, text)

	var records []map[string]any
	require.NoError(t, harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		records = nil
		for _, line := range jsonLines(t, logs) {
			ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs([]byte(line))
			require.NoError(t, err)
			for _, rl := range ld.ResourceLogs().All() {
				for _, sl := range rl.ScopeLogs().All() {
					for _, lr := range sl.LogRecords().All() {
						if lr.EventName() == "gym.rollout.stalled" {
							records = append(records, lr.Attributes().AsRaw())
						}
					}
				}
			}
		}
		if len(records) < 2 {
			return harness.ErrNotYet
		}
		return nil
	}))
	require.Len(t, records, 2)
	ids := []any{}
	for _, r := range records {
		assert.Equal(t, "run-b", r["nemo.run.id"])
		ids = append(ids, r["nemo.gym.rollout.id"])
	}
	assert.ElementsMatch(t, []any{"3-0", "5-0"}, ids)
}
