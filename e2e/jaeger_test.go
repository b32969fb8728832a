//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// jaegerScope is the instrumentation scope of the synthetic rollout traces.
const jaegerScope = "github.com/gym-telemetry/otelcol-gym/e2e"

// rolloutTraces are n traces shaped like a Gym rollout's, one per rollout, each under a
// resource of its own (service.name, nemo.run.id, nemo.gym.rollout.id): the rollout's root
// span, invoke_agent under it, then two chat spans (client), an execute_tool span and the
// sandbox's span under the tool call; the last rollout's sandbox fails (status error, an
// exception event). Attributes of every type: strings, ints, doubles, bools, a list.
func rolloutTraces(n int, end time.Time, rng *rand.Rand) ptrace.Traces {
	td := ptrace.NewTraces()
	ts := func(d time.Duration) pcommon.Timestamp { return pcommon.NewTimestampFromTime(end.Add(d)) }
	for i := range n {
		rollout := fmt.Sprintf("rollout-%d", i)
		rs := td.ResourceSpans().AppendEmpty()
		res := rs.Resource().Attributes()
		res.PutStr("service.name", "nemo-gym")
		res.PutStr("nemo.run.id", "run-jaeger-e2e")
		res.PutStr("nemo.gym.rollout.id", rollout)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(jaegerScope)
		ss.Scope().SetVersion("0.1.0")
		var traceID pcommon.TraceID
		binary.BigEndian.PutUint64(traceID[:8], rng.Uint64())
		binary.BigEndian.PutUint64(traceID[8:], rng.Uint64())
		span := func(parent pcommon.SpanID, name string, kind ptrace.SpanKind, from, to time.Duration) ptrace.Span {
			sp := ss.Spans().AppendEmpty()
			var id pcommon.SpanID
			binary.BigEndian.PutUint64(id[:], rng.Uint64()|1)
			sp.SetTraceID(traceID)
			sp.SetSpanID(id)
			sp.SetParentSpanID(parent)
			sp.SetName(name)
			sp.SetKind(kind)
			sp.SetStartTimestamp(ts(from))
			sp.SetEndTimestamp(ts(to))
			return sp
		}
		root := span(pcommon.SpanID{}, "gym.rollout", ptrace.SpanKindInternal, -20*time.Second, 0)
		root.Attributes().PutStr("nemo.gym.rollout.id", rollout)
		root.Attributes().PutDouble("nemo.gym.reward", 0.25*float64(i))
		root.Attributes().PutBool("nemo.gym.verified", i%2 == 0)
		agent := span(root.SpanID(), "invoke_agent simple_agent", ptrace.SpanKindInternal, -19*time.Second, -time.Second)
		agent.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		agent.Attributes().PutStr("gen_ai.agent.name", "simple_agent")
		for k, at := range []time.Duration{-18 * time.Second, -8 * time.Second} {
			chat := span(agent.SpanID(), "chat gpt-4o-mini", ptrace.SpanKindClient, at, at+4*time.Second)
			a := chat.Attributes()
			a.PutStr("gen_ai.operation.name", "chat")
			a.PutStr("gen_ai.request.model", "gpt-4o-mini")
			a.PutInt("gen_ai.usage.input_tokens", int64(1200+100*k+i))
			a.PutInt("gen_ai.usage.output_tokens", int64(300+i))
			a.PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr("stop")
		}
		tool := span(agent.SpanID(), "execute_tool search", ptrace.SpanKindInternal, -13*time.Second, -9*time.Second)
		tool.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
		tool.Attributes().PutStr("gen_ai.tool.name", "search")
		tool.Attributes().PutStr("gen_ai.tool.call.id", fmt.Sprintf("call-%d", i))
		sandbox := span(tool.SpanID(), "sandbox exec", ptrace.SpanKindInternal, -12*time.Second, -10*time.Second)
		sandbox.Attributes().PutStr("nemo.gym.sandbox.id", fmt.Sprintf("sandbox-%d", i))
		if i == n-1 {
			sandbox.Attributes().PutInt("nemo.gym.sandbox.exit_code", 137)
			sandbox.Status().SetCode(ptrace.StatusCodeError)
			sandbox.Status().SetMessage("killed: out of memory")
			ev := sandbox.Events().AppendEmpty()
			ev.SetName("exception")
			ev.SetTimestamp(ts(-10 * time.Second))
			ev.Attributes().PutStr("exception.message", "killed: out of memory")
		} else {
			sandbox.Attributes().PutInt("nemo.gym.sandbox.exit_code", 0)
		}
	}
	return td
}

// splitExports splits td into two exports as an SDK's batches do: every span but the roots
// first, then the roots (a rollout's span ends last).
func splitExports(td ptrace.Traces) [2]ptrace.Traces {
	out := [2]ptrace.Traces{ptrace.NewTraces(), ptrace.NewTraces()}
	for half := range out {
		td.CopyTo(out[half])
		for _, rs := range out[half].ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				ss.Spans().RemoveIf(func(sp ptrace.Span) bool { return sp.ParentSpanID().IsEmpty() != (half == 1) })
			}
		}
	}
	return out
}

// postTraces sends td to the collector's OTLP/HTTP receiver at base.
func postTraces(t *testing.T, base string, td ptrace.Traces) {
	t.Helper()
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	require.NoError(t, err)
	postOK(t, base+"/v1/traces", body)
}

// docOverrides are the --config 'yaml:...' lines of a command in the section of docs/gym.md
// that starts with heading (lines that start with --config, not one quoted in the text).
func docOverrides(t *testing.T, heading string) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(harness.Root, "docs", "gym.md"))
	require.NoError(t, err)
	i := strings.Index(string(doc), "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "docs/gym.md has %q", heading)
	section := string(doc)[i+1:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	var overrides []string
	for _, line := range strings.Split(section, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "--config '"); ok && strings.HasPrefix(v, "yaml:") {
			v = strings.TrimSuffix(strings.TrimSpace(v), "\\")
			overrides = append(overrides, strings.TrimSuffix(strings.TrimSpace(v), "'"))
		}
	}
	return overrides
}

// Gym's traces through the real otelcol-gym (config/otelcol-gym.yaml) into a real Jaeger
// (v1.75.0, deploy/jaeger/jaeger.yaml on free loopback ports), by the otlp_grpc exporter as
// docs/gym.md ("Gym's traces in Jaeger") configures it and by otlp_http: each rollout's
// trace is found there whole, by its id and by service (api_v3: every span, its parent, name,
// kind, times, status, events, attributes, resource and scope as sent), and as the UI reads it
// (/api/traces: the spans, their parent references, the resource as the process). Jaeger
// listens on its five loopback ports and nowhere else.
func TestJaeger(t *testing.T) {
	t.Parallel()
	for _, exporter := range []string{"otlp_grpc", "otlp_http"} {
		t.Run(exporter, func(t *testing.T) {
			t.Parallel()
			j := harness.StartJaeger(t)

			listening, err := harness.ProcListeners(j.Cmd.Process.Pid)
			require.NoError(t, err)
			var want []string
			for _, p := range []int{j.Ports.OTLPGRPC, j.Ports.OTLPHTTP, j.Ports.QueryHTTP, j.Ports.QueryGRPC, j.Ports.Health} {
				want = append(want, fmt.Sprintf("127.0.0.1:%d", p))
			}
			assert.ElementsMatch(t, want, listening, "Jaeger listens on its loopback ports only")

			var overrides []string
			if exporter == "otlp_grpc" {
				overrides = docOverrides(t, "## Gym's traces in Jaeger")
				require.Len(t, overrides, 4, "the doc's example: the exporter, its TLS, the traces pipelines")
				for i, o := range overrides {
					overrides[i] = strings.Replace(o, "127.0.0.1:4327", j.OTLPGRPC, 1)
				}
				require.Contains(t, overrides[0], j.OTLPGRPC, "the doc's Jaeger address")
			} else {
				overrides = []string{
					"yaml:exporters::otlp_http/jaeger::endpoint: " + j.OTLPHTTP,
					"yaml:service::pipelines::traces::exporters: [file/traces, gymrollouts, otlp_http/jaeger]",
				}
			}
			col, ports := harness.StartDefaultCollector(t, overrides...)

			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
			td := rolloutTraces(3, time.Now().Truncate(time.Millisecond), rng)
			otlp := fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP)
			for _, part := range splitExports(td) {
				postTraces(t, otlp, part)
			}
			sent := harness.TraceSpans(td)
			require.Len(t, sent, 3)

			got := harness.JaegerTraces(t, j, sent, 30*time.Second)
			for id, spans := range sent {
				assert.Equal(t, spans, got[id], "trace %s (%s) whole in Jaeger", id, spans[0].Resource["nemo.gym.rollout.id"])
			}

			ctx := context.Background()
			services, err := j.Services(ctx)
			require.NoError(t, err)
			assert.Equal(t, []string{"nemo-gym"}, services)
			found, err := j.FindTraces(ctx, "nemo-gym", time.Now().Add(-time.Hour), time.Now().Add(time.Minute), 20)
			require.NoError(t, err)
			assert.Equal(t, sent, found, "the rollouts' traces by service")

			for id, spans := range sent {
				ui, err := j.UITrace(ctx, id)
				require.NoError(t, err)
				assert.Equal(t, id, ui.TraceID)
				require.Len(t, ui.Spans, len(spans))
				parents := map[string]string{}
				for _, sp := range ui.Spans {
					assert.Empty(t, sp.Warnings, "span %s", sp.OperationName)
					parent := ""
					for _, ref := range sp.References {
						if ref.RefType == "CHILD_OF" {
							parent = ref.SpanID
						}
					}
					parents[sp.SpanID] = parent
					proc := ui.Processes[sp.ProcessID]
					assert.Equal(t, "nemo-gym", proc.ServiceName)
					assert.Contains(t, proc.Tags, harness.UITag{Key: "nemo.gym.rollout.id", Type: "string", Value: spans[0].Resource["nemo.gym.rollout.id"]})
				}
				for _, sp := range spans {
					assert.Equal(t, sp.ParentID, parents[sp.SpanID], "the UI's parent of %s", sp.Name)
				}
			}
			require.NoError(t, col.Stop(30*time.Second))
		})
	}
}

// TestJaegerScreenshot is no test: it takes a screenshot of one trace in Jaeger's UI, for the
// docs (docs/images/jaeger-trace.sh runs it). Skipped unless JAEGER_SCREENSHOT names the PNG
// to write. JAEGER_UI is a directory of a built Jaeger UI (the binary built from the Go module
// serves a placeholder page); JAEGER_SCREENSHOT_INPUT a file of OTLP JSON lines (otelcol-gym's
// otel-traces.jsonl, the file exporter's) sent through otelcol-gym into Jaeger;
// JAEGER_SCREENSHOT_CONFIG an otelcol-gym configuration merged after the default one and the
// Jaeger exporter (a gym receiver reading a run's files, say), whose traces are shown once
// Jaeger's stop growing; with neither, the synthetic rollouts of TestJaeger.
// JAEGER_SCREENSHOT_TRACE is the trace shown (else the one with the most spans),
// JAEGER_SCREENSHOT_SIZE the window (1400 wide, as high as the trace's rows).
func TestJaegerScreenshot(t *testing.T) {
	out := os.Getenv("JAEGER_SCREENSHOT")
	if out == "" {
		t.Skip("JAEGER_SCREENSHOT is not set (docs/images/jaeger-trace.sh sets it)")
	}
	ui := os.Getenv("JAEGER_UI")
	require.NotEmpty(t, ui, "JAEGER_UI: a directory of a built Jaeger UI")
	_, err := os.Stat(filepath.Join(ui, "index.html"))
	require.NoError(t, err, "JAEGER_UI has no index.html")
	ui, err = filepath.Abs(ui)
	require.NoError(t, err)
	chromium := harness.Chromium(t)

	j := harness.StartJaegerWith(t, harness.JaegerOptions{UIAssets: ui})
	configs := []string{
		"yaml:exporters::otlp_grpc/jaeger::endpoint: " + j.OTLPGRPC,
		"yaml:exporters::otlp_grpc/jaeger::tls::insecure: true",
		"yaml:service::pipelines::traces::exporters: [file/traces, gymrollouts, otlp_grpc/jaeger]",
	}
	extra := os.Getenv("JAEGER_SCREENSHOT_CONFIG")
	if extra != "" {
		extra, err = filepath.Abs(extra)
		require.NoError(t, err)
		configs = append(configs, extra)
	}
	col, ports := harness.StartDefaultCollector(t, configs...)
	otlp := fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP)

	sent := ptrace.NewTraces()
	in := os.Getenv("JAEGER_SCREENSHOT_INPUT")
	switch {
	case in == "" && extra != "":
		// What the configuration's receivers read: every trace in Jaeger, once no span has
		// arrived for 5 s.
		sent = settledTraces(t, j, 5*time.Second, 3*time.Minute)
	case in != "":
		for _, line := range jsonLines(t, in) {
			if strings.TrimSpace(line) == "" {
				continue
			}
			td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(line))
			require.NoError(t, err, "%s: a line is not OTLP JSON traces", in)
			postTraces(t, otlp, td)
			td.ResourceSpans().MoveAndAppendTo(sent.ResourceSpans())
		}
	default:
		td := rolloutTraces(3, time.Now().Truncate(time.Millisecond), rand.New(rand.NewPCG(1, 2)))
		postTraces(t, otlp, td)
		td.ResourceSpans().MoveAndAppendTo(sent.ResourceSpans())
	}
	want := harness.TraceSpans(sent)
	require.NotEmpty(t, want, "no span to show")
	id := os.Getenv("JAEGER_SCREENSHOT_TRACE")
	if id == "" {
		ids := slices.Sorted(func(yield func(string) bool) {
			for id := range want {
				if !yield(id) {
					return
				}
			}
		})
		for _, k := range ids {
			if id == "" || len(want[k]) > len(want[id]) {
				id = k
			}
		}
	}
	require.Contains(t, want, id, "JAEGER_SCREENSHOT_TRACE is not a trace of the input")
	harness.JaegerTraces(t, j, map[string][]harness.TraceSpan{id: want[id]}, 60*time.Second)

	size := os.Getenv("JAEGER_SCREENSHOT_SIZE")
	if size == "" { // the header, then a row of about 29 pixels a span
		size = fmt.Sprintf("1400,%d", min(max(250+29*len(want[id]), 400), 2400))
	}
	out, err = filepath.Abs(out)
	require.NoError(t, err)
	// Every name but 127.0.0.1 is unresolvable: the UI's requests stay on the machine.
	cmd := exec.Command(chromium, append(harness.Headless(t),
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--hide-scrollbars",
		"--window-size="+size, "--virtual-time-budget=15000", "--screenshot="+out,
		j.QueryURL+"/trace/"+id)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "chromium:\n%s", stderr.String())
	t.Logf("trace %s (%d spans) in Jaeger's UI: %s", id, len(want[id]), out)
	require.NoError(t, col.Stop(30*time.Second))
}

// settledTraces are every trace Jaeger has, of every service, once their spans have not
// grown for quiet (at least one span; timeout at most).
func settledTraces(t *testing.T, j *harness.Jaeger, quiet, timeout time.Duration) ptrace.Traces {
	t.Helper()
	ctx := context.Background()
	all := func() ptrace.Traces {
		td := ptrace.NewTraces()
		services, err := j.Services(ctx)
		require.NoError(t, err)
		for _, svc := range services {
			got, err := j.FindTracesOTLP(ctx, svc, time.Unix(0, 0), time.Now().Add(time.Hour), 100000)
			require.NoError(t, err)
			got.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
		}
		return td
	}
	deadline := time.Now().Add(timeout)
	last, since := -1, time.Now()
	for {
		td := all()
		if n := td.SpanCount(); n != last {
			last, since = n, time.Now()
		} else if n > 0 && time.Since(since) >= quiet {
			return td
		}
		require.True(t, time.Now().Before(deadline), "Jaeger's traces did not settle within %s (%d spans)", timeout, last)
		time.Sleep(500 * time.Millisecond)
	}
}
