package rollouts

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

var updateSpans = flag.Bool("update", false, "rewrite testdata/evidence/spans.json (then check it by hand)")

// spansOf decodes rows of a main output with KeepSpans and builds each row's trace, as the
// source does: one resource, the evidence scope.
func spansOf(t testing.TB, data []byte, runID string) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	ss.Scope().SetName(schema.EvidenceScopeName)
	r := NewRowDecoder(0)
	r.KeepSpans(true)
	r.Reset(bytes.NewReader(data), 0, 0, 0)
	var row Row
	var b SpanBuilder
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	for {
		start := r.Offset()
		err := r.Next(Main, &row)
		if errors.Is(err, io.EOF) {
			break
		}
		if _, ok := err.(*RowError); ok { //nolint:errorlint // as rowfile.go
			continue
		}
		require.NoError(t, err)
		b.Append(ss.Spans(), &row, RowSpans{RunID: runID, RowStart: start, Now: now})
	}
	return td
}

func spansJSON(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	raw, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, json.Indent(&out, raw, "", " "))
	return append(out.Bytes(), '\n')
}

// TestEvidenceSpansGolden: the golden rows' traces (row 0 whole, row 1 without evidence, row 2
// broken: a parent cycle, a duplicate invocation, skewed and missing times).
func TestEvidenceSpansGolden(t *testing.T) {
	data, err := os.ReadFile(evidenceGolden)
	require.NoError(t, err)
	got := spansJSON(t, spansOf(t, data, "run-ev"))
	const golden = "testdata/evidence/spans.json"
	if *updateSpans {
		require.NoError(t, os.WriteFile(golden, got, 0o600))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}

// TestEvidenceSpansStable: two reads of the same rows give the same spans, byte for byte; the
// trace id is the run's and rollout's, so another run gives other ids.
func TestEvidenceSpansStable(t *testing.T) {
	data, err := os.ReadFile(evidenceGolden)
	require.NoError(t, err)
	a, b := spansJSON(t, spansOf(t, data, "run-ev")), spansJSON(t, spansOf(t, data, "run-ev"))
	assert.Equal(t, string(a), string(b))
	td := spansOf(t, data, "run-ev")
	other := spansOf(t, data, "run-other")
	s0, s1 := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans(), other.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	require.Equal(t, s0.Len(), s1.Len())
	assert.NotEqual(t, s0.At(0).TraceID(), s1.At(0).TraceID())
}

// TestEvidenceSpansShape checks the golden row 0 by its spans' names, parents and attributes.
func TestEvidenceSpansShape(t *testing.T) {
	data, err := os.ReadFile(evidenceGolden)
	require.NoError(t, err)
	td := spansOf(t, data, "run-ev")
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	byTrace := map[string][]ptrace.Span{}
	for i := range spans.Len() {
		s := spans.At(i)
		byTrace[s.TraceID().String()] = append(byTrace[s.TraceID().String()], s)
	}
	require.Len(t, byTrace, 2, "rows 0 and 2 have evidence, row 1 none")
	byName := map[string]ptrace.Span{}
	ids := map[string]string{}
	for i := range spans.Len() {
		s := spans.At(i)
		if v, _ := s.Attributes().Get(schema.SpanRolloutID); v.Str() != "0-0" {
			continue
		}
		byName[s.Name()+"|"+attr(s, "gen_ai.agent.id")+attr(s, "gen_ai.tool.call.id")+attr(s, schema.SpanModelCallID)+attr(s, schema.SpanSandboxID)] = s
		ids[s.SpanID().String()] = s.Name()
		assert.Equal(t, "run-ev", attr(s, schema.SpanRunID))
		assert.GreaterOrEqual(t, s.EndTimestamp(), s.StartTimestamp(), s.Name())
	}
	root := byName["gym.rollout|"]
	require.NotEqual(t, ptrace.NewSpan(), root)
	rootInv := byName["invoke_agent swe_agent|inv-root"]
	sub := byName["invoke_agent|inv-sub"]
	tc0, tc1 := byName["execute_tool bash|tc-0sb-0"], byName["execute_tool spawn_agent|tc-1"]
	mc0, mc2 := byName["chat gpt-oss-120b|mc-0"], byName["chat gpt-oss-120b|mc-2"]
	sb1 := byName["gym.sandbox|sb-1"]
	assert.Equal(t, root.SpanID(), rootInv.ParentSpanID())
	assert.Equal(t, rootInv.SpanID(), sub.ParentSpanID(), "a subagent under its parent")
	assert.Equal(t, rootInv.SpanID(), tc0.ParentSpanID())
	assert.Equal(t, rootInv.SpanID(), tc1.ParentSpanID())
	assert.Equal(t, rootInv.SpanID(), mc0.ParentSpanID(), "invocation.model_calls")
	assert.Equal(t, sub.SpanID(), mc2.ParentSpanID(), "by response_id")
	assert.Equal(t, root.SpanID(), sb1.ParentSpanID())
	assert.Equal(t, ptrace.SpanKindClient, mc0.Kind())
	assert.Equal(t, ptrace.SpanKindInternal, tc0.Kind())
	assert.Equal(t, "rate_limit", attr(mc2, "error.type"))
	assert.Equal(t, ptrace.StatusCodeError, mc2.Status().Code())
	assert.Equal(t, "TimeoutError", attr(tc1, "error.type"))
	assert.Equal(t, "TimeoutError", attr(sub, "error.type"))
	assert.Equal(t, "OOMKilled", attr(sb1, "error.type"))
	assert.Empty(t, attr(tc0, "error.type"))
	in, _ := mc0.Attributes().Get("gen_ai.usage.input_tokens")
	assert.Equal(t, int64(1000), in.Int())
	fr, _ := mc0.Attributes().Get("gen_ai.response.finish_reasons")
	assert.Equal(t, []any{"tool_calls"}, fr.Slice().AsRaw())
	reward, _ := root.Attributes().Get(schema.SpanReward)
	assert.InDelta(t, 1.0, reward.Double(), 0)
	for _, s := range []ptrace.Span{rootInv, sub, tc0, tc1, mc0, mc2, sb1} {
		assert.GreaterOrEqual(t, s.StartTimestamp(), root.StartTimestamp(), s.Name())
		assert.LessOrEqual(t, s.EndTimestamp(), root.EndTimestamp(), s.Name())
	}
}

func attr(s ptrace.Span, k string) string {
	v, ok := s.Attributes().Get(k)
	if !ok {
		return ""
	}
	return v.AsString()
}

// payloadKeys are the evidence's payloads (and the row's own large values).
var payloadKeys = map[string]bool{"request": true, "response": true, "output": true, "conversation": true, "summary": true,
	"question": true, "answer": true, "reasoning_content": true, "responses_create_params": true}

const marker = "PAYLOAD-MARKER-7f3a"

// mark puts the marker into every payload under v.
func mark(v any, inEvidence bool) any {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if payloadKeys[k] && (inEvidence || k == "responses_create_params") {
				x[k] = map[string]any{"text": marker, "list": []any{marker, map[string]any{"content": marker}}}
				continue
			}
			x[k] = mark(c, inEvidence || k == "ng_trajectory" || k == "ng_agent_observations")
		}
	case []any:
		for i, c := range x {
			x[i] = mark(c, inEvidence)
		}
	}
	return v
}

// TestEvidenceSpansNoPayload: a marker in every payload of the golden rows reaches no span.
func TestEvidenceSpansNoPayload(t *testing.T) {
	data, err := os.ReadFile(evidenceGolden)
	require.NoError(t, err)
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var row any
		require.NoError(t, json.Unmarshal(line, &row))
		b, err := json.Marshal(mark(row, false))
		require.NoError(t, err)
		require.Contains(t, string(b), marker)
		out.Write(append(b, '\n'))
	}
	td := spansOf(t, out.Bytes(), "run-ev")
	got := spansJSON(t, td)
	assert.Greater(t, td.SpanCount(), 10)
	assert.NotContains(t, string(got), marker)
	assert.False(t, strings.Contains(string(got), "solve"), "the conversation")
}

// badEvidenceRows: a subagent spawned by its own tool call (a cycle through a tool), no
// timestamp at all, absurd and skewed times, a sandbox id twice, references to nothing.
var badEvidenceRows = []string{
	`{"ng_trajectory":{"rollout_id":"c","invocations":[{"invocation_id":"a","spawned_by_tool_call_id":"t"}],"tool_calls":[{"invocation_id":"a","tool_call_id":"t","tool_name":"spawn"}]}}`,
	`{"ng_trajectory":{"rollout_id":"n","invocations":[{"invocation_id":"a","parent_invocation_id":"a","model_calls":[{"model_call_id":"zz"},{"response_id":"none"},7,{}]}],"model_calls":[{"duration_ms":5},{"model_call_id":"m","duration_ms":1e300}]}}`,
	`{"ng_trajectory":{"rollout_id":"t","model_calls":[{"model_call_id":"m","started_at":1e12,"completed_at":-5},{"model_call_id":"k","started_at":1767225600,"completed_at":1767225500,"duration_ms":10}],"tool_calls":[{"invocation_id":"x","tool_call_id":"y","completed_at":1767225700,"duration_ms":1000,"status":"timeout"}]}}`,
	`{"ng_agent_observations":{"records":[{"kind":"sandbox","sandbox_id":"s","wall_time_s":3},{"kind":"sandbox","sandbox_id":"s","outcome":"oom","exit_code":"x"},{"kind":"sandbox"}]}}`,
	`{"ng_trajectory":{"rollout_id":"d","turns":[{"invocation_id":"b","timestamp":1767225600,"model_calls":[{"model_call_id":"m"}]}],"invocations":[{"invocation_id":"b","parent_invocation_id":"c"},{"invocation_id":"c","parent_invocation_id":"b"}],"model_calls":[{"model_call_id":"m"}]}}`,
}

// checkSpans: every span valid (ids, end >= start, a parent in the trace or none for the
// root), unique ids, one root per trace.
func checkSpans(t testing.TB, td ptrace.Traces) {
	t.Helper()
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	ids := map[string]bool{}
	for i := range spans.Len() {
		s := spans.At(i)
		ids[s.TraceID().String()+s.SpanID().String()] = true
	}
	require.Len(t, ids, spans.Len(), "span ids unique")
	for i := range spans.Len() {
		s := spans.At(i)
		require.False(t, s.TraceID().IsEmpty())
		require.False(t, s.SpanID().IsEmpty())
		require.GreaterOrEqual(t, s.EndTimestamp(), s.StartTimestamp(), s.Name())
		if s.ParentSpanID().IsEmpty() {
			require.Equal(t, "gym.rollout", s.Name())
			continue
		}
		require.True(t, ids[s.TraceID().String()+s.ParentSpanID().String()], "parent of %s in its trace", s.Name())
	}
}

// TestEvidenceSpansBadInput: broken evidence never panics and still makes valid spans.
func TestEvidenceSpansBadInput(t *testing.T) {
	td := spansOf(t, []byte(strings.Join(badEvidenceRows, "\n")+"\n"), "run")
	checkSpans(t, td)
	assert.Equal(t, 5, countRoots(td))
}

func countRoots(td ptrace.Traces) int {
	n := 0
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range spans.Len() {
		if spans.At(i).ParentSpanID().IsEmpty() {
			n++
		}
	}
	return n
}

func FuzzEvidenceSpans(f *testing.F) {
	data, err := os.ReadFile(evidenceGolden)
	require.NoError(f, err)
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		f.Add(l)
	}
	for _, l := range badEvidenceRows {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, row []byte) {
		if bytes.IndexByte(row, '\n') >= 0 {
			return
		}
		checkSpans(t, spansOf(t, append(row, '\n'), "run"))
	})
}
