package rollouts

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// response is what a main row's response gave, comparable.
type response struct {
	Err        string
	Has        bool
	Model      string
	Finish     string
	Output     bool
	Calls      int64
	Tokens     string // type=count of the types given, in gen_ai.token.type order
	Latency    string // "" when none
	EventCount int
}

func responses(t *testing.T, in string, bufBytes int) []response {
	t.Helper()
	r := NewRowDecoder(bufBytes)
	r.Reset(strings.NewReader(in), 0, 0, 0)
	var row Row
	var evs [MaxRowEvents]events.Event
	var out []response
	for {
		err := r.Next(Main, &row)
		if errors.Is(err, io.EOF) {
			return out
		}
		var re *RowError
		if errors.As(err, &re) {
			out = append(out, response{Err: re.Reason + ": " + re.Msg})
			continue
		}
		require.NoError(t, err)
		res := response{Has: row.HasResponse, Model: string(row.Model), Output: row.HasOutput, Calls: row.FunctionCalls}
		if row.HasResponse {
			res.Finish = string(row.FinishReason())
		}
		var tok []string
		for ty := range NumTokenTypes {
			if v, ok := row.Tokens(ty); ok {
				tok = append(tok, fmt.Sprintf("%s=%d", TokenTypes(ty), v))
			}
		}
		res.Tokens = strings.Join(tok, " ")
		if row.HasLatency {
			res.Latency = fmt.Sprint(row.Latency)
		}
		res.EventCount = row.Events(Main, &evs)
		out = append(out, res)
	}
}

// TokenTypes names a token type by the schema's gen_ai.token.type.
func TokenTypes(t int) string { return schema.Attr(schema.AttrGenAiTokenType).Values[t] }

func TestResponseTokensFinishAndCalls(t *testing.T) {
	content := strings.Repeat(`{\"k\":[1,2,{\"type\":\"function_call\"}]} `, 2000) // a big text that looks like calls
	in := strings.Join([]string{
		// Responses spelling, with details, truncated, two function calls among other items.
		`{"response":{"id":"resp_1","model":"gpt-4.1","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},` +
			`"output":[{"type":"reasoning","summary":[]},{"type":"function_call","name":"bash","arguments":"{\"cmd\":\"ls\"}"},{"type":"message","content":[{"type":"output_text","text":"` + content + `"}]},{"type":"function_call"}],` +
			`"usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":512},"output_tokens":350,"output_tokens_details":{"reasoning_tokens":120},"total_tokens":1550}},"reward":1}`,
		// Chat spelling; status completed, no incomplete details.
		`{"response":{"model":"Qwen/Qwen3-8B","status":"completed","incomplete_details":null,"output":[],"usage":{"prompt_tokens":90,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":null}},"reward":0}`,
		// Both spellings: the Responses one wins type by type.
		`{"response":{"usage":{"prompt_tokens":1,"input_tokens":2,"completion_tokens":3}}}`,
		// No status, no reason: unknown; a model that is empty or not a string names none.
		`{"response":{"model":"","status":null,"output":null}}`,
		`{"response":{"model":7,"status":["x"],"incomplete_details":"cut","usage":"lots","output":{"type":"function_call"}}}`,
		// Token counts that are not numbers, or null or NaN, give nothing; a reported 0 is given.
		`{"response":{"usage":{"input_tokens":"12","output_tokens":null,"output_tokens_details":{"reasoning_tokens":NaN},"input_tokens_details":{"cached_tokens":0}}}}`,
		// A response that is not an object is no response; no response at all.
		`{"response":"oops","ng_perf":{"total_latency_ms":1500.25}}`,
		`{"reward":1,"ng_perf":{"total_latency_ms":null,"num_turns":2}}`,
		// Out of the domain: the row is rejected.
		`{"response":{"usage":{"input_tokens":-3}}}`,
		`{"response":{"usage":{"output_tokens":2.5}}}`,
		`{"ng_perf":{"total_latency_ms":-1}}`,
		`{"ng_perf":{"total_latency_ms":Infinity}}`,
		// Duplicate response: the last wins whole.
		`{"response":{"model":"a","usage":{"input_tokens":5}},"response":{"model":"b"}}`,
		// Items that are not objects are no calls; a type that is not a string is none.
		`{"response":{"output":["function_call",{"type":1},{"type":"function_call","type":"message"},{"type":"message","type":"function_call"}]}}`,
	}, "\n") + "\n"
	want := []response{
		{Has: true, Model: "gpt-4.1", Finish: "max_output_tokens", Output: true, Calls: 2, Tokens: "input=1200 output=350 reasoning=120 cached_input=512", EventCount: 2},
		{Has: true, Model: "Qwen/Qwen3-8B", Finish: "completed", Output: true, Tokens: "input=90 output=10 cached_input=0", EventCount: 2},
		{Has: true, Finish: "unknown", Tokens: "input=2 output=3", EventCount: 2},
		{Has: true, Finish: "unknown", EventCount: 2},
		{Has: true, Finish: "unknown", EventCount: 2},
		{Has: true, Finish: "unknown", Tokens: "cached_input=0", EventCount: 2},
		{Latency: "1500.25", EventCount: 2},
		{EventCount: 2},
		{Err: `out_of_range: key "response.usage.input_tokens": want an integer >= 0, got -3`},
		{Err: `wrong_type: key "response.usage.output_tokens": want an integer, got 2.5`},
		{Err: `out_of_range: key "ng_perf.total_latency_ms": want a finite number >= 0, got -1`},
		{Err: `out_of_range: key "ng_perf.total_latency_ms": want a finite number >= 0, got Infinity`},
		{Has: true, Model: "b", Finish: "unknown", EventCount: 2},
		{Has: true, Finish: "unknown", Output: true, Calls: 1, EventCount: 2},
	}
	for _, buf := range []int{0, 64, 7} { // a row straddles many reads of a small buffer
		t.Run(fmt.Sprint(buf), func(t *testing.T) {
			assert.Equal(t, want, responses(t, in, buf))
		})
	}
}

func TestResponseEvents(t *testing.T) {
	r := NewRowDecoder(0)
	r.Reset(strings.NewReader(`{"_ng_environment_server":"swe","response":{"model":"m1","status":"completed","output":[{"type":"function_call"}],"usage":{"input_tokens":7,"output_tokens":0}},"ng_perf":{"num_turns":4,"total_latency_ms":90}}`+"\n"), 0, 0, 0)
	var row Row
	require.NoError(t, r.Next(Main, &row))
	var evs [MaxRowEvents]events.Event
	require.Equal(t, 4, row.Events(Main, &evs))
	assert.Equal(t, events.EventRolloutCompleted, evs[0].Type)
	assert.Equal(t, events.EventRolloutSize, evs[1].Type)
	resp := evs[2]
	assert.Equal(t, events.EventRolloutResponse, resp.Type)
	assert.Equal(t, "swe", string(resp.DispatchName))
	assert.Equal(t, "m1", string(resp.Model))
	assert.Equal(t, "completed", string(resp.FinishReason))
	assert.True(t, resp.HasOutput)
	assert.EqualValues(t, 1, resp.ToolCalls)
	assert.Equal(t, [events.NumResponseTokenTypes]bool{true, true, false, false}, resp.HasResponseTokens)
	assert.Equal(t, int64(7), resp.ResponseTokens[TokenInput])
	assert.Equal(t, events.Event{Type: events.EventRolloutDuration, DurationMS: 90}, evs[3])
}

// The token types of the events are the schema's gen_ai.token.type values, in order.
func TestTokenTypesAreTheSchemas(t *testing.T) {
	assert.Equal(t, []string{"input", "output", "reasoning", "cached_input"}, schema.Attr(schema.AttrGenAiTokenType).Values)
	assert.Equal(t, 0, TokenInput)
	assert.Equal(t, 1, TokenOutput)
	assert.Equal(t, 2, TokenReasoning)
	assert.Equal(t, 3, TokenCachedInput)
}

// TestRolloutsResponseInstruments: a run file's rows through the rollouts source give the
// response instruments under the run's resource, values worked out by hand.
func TestRolloutsResponseInstruments(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "eval.jsonl")
	followtest.AppendFile(t, out,
		`{"_ng_environment_server":"math","response":{"model":"gpt-4.1","status":"completed","output":[{"type":"function_call"},{"type":"function_call"},{"type":"message"}],"usage":{"input_tokens":100,"output_tokens":20,"input_tokens_details":{"cached_tokens":64}}},"reward":1,"ng_perf":{"total_latency_ms":1500}}`+"\n"+
			`{"_ng_environment_server":"math","response":{"model":"gpt-4.1","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[],"usage":{"input_tokens":300,"output_tokens":4096}},"reward":0,"ng_perf":{"total_latency_ms":90000}}`+"\n"+
			`{"agent_ref":{"name":"swe_agent"},"response":{"status":"weird","usage":{"prompt_tokens":7,"completion_tokens":1}},"reward":0}`+"\n")
	agg := newTestAggregator(t)
	_, got := newTestSource(t, agg, filepath.Join(dir, "*.jsonl"), true, nil, 0)
	require.EqualValues(t, 3, got.Accepted)
	md := agg.Collect(aggregate.Scope{})
	require.Equal(t, 1, md.ResourceMetrics().Len(), "one run, one resource")

	tokens := map[string][2]float64{} // type|model|dispatch -> count, sum
	eachPoint(md, "gym.rollout.tokens", func(a map[string]any, p pmetric.HistogramDataPoint) {
		model, _ := a["gen_ai.response.model"].(string)
		tokens[a["gen_ai.token.type"].(string)+"|"+model+"|"+a["nemo.gym.rollout.dispatch.name"].(string)] = [2]float64{float64(p.Count()), p.Sum()}
	})
	assert.Equal(t, map[string][2]float64{
		"input|gpt-4.1|math":        {2, 400},
		"output|gpt-4.1|math":       {2, 4116},
		"cached_input|gpt-4.1|math": {1, 64},
		"input||swe_agent":          {1, 7},
		"output||swe_agent":         {1, 1},
	}, tokens)

	finish := map[string]int64{}
	for _, rm := range resourceMetrics(md) {
		ms := rm.ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if m := ms.At(j); m.Name() == "gym.rollout.finish_total" {
				for k := range m.Sum().DataPoints().Len() {
					dp := m.Sum().DataPoints().At(k)
					r, _ := dp.Attributes().Get("nemo.gym.rollout.finish_reason")
					finish[r.Str()] += dp.IntValue()
				}
			}
		}
	}
	assert.Equal(t, map[string]int64{"completed": 1, "max_output_tokens": 1, "other": 1}, finish)

	var calls []float64
	eachPoint(md, "gym.rollout.tool_calls", func(_ map[string]any, p pmetric.HistogramDataPoint) {
		calls = append(calls, float64(p.Count()), p.Sum())
	})
	assert.Equal(t, []float64{2, 2}, calls, "two rows with an output list, two calls in all")

	var dur []float64
	eachPoint(md, "gym.rollout.duration_ms", func(_ map[string]any, p pmetric.HistogramDataPoint) {
		dur = append(dur, float64(p.Count()), p.Sum(), p.Min(), p.Max())
	})
	assert.Equal(t, []float64{2, 91500, 1500, 90000}, dur)
}
