package rollouts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// result is what one row gave, comparable.
type result struct {
	Err          string // reason of a rejected row
	Dispatch     string
	RunID        string
	Reward       string // fmt %v, "" when absent
	Masked       bool
	Turns        int64
	ToolCalls    int64
	HasTurns     bool
	HasToolCalls bool
	Class, Kind  string
	Type         string
	Verdict      string
	Findings     string
	Line         int64
}

func collect(t testing.TB, kind Kind, src io.Reader, max int64, bufBytes int) (out []result, offset int64, end error) {
	offset, end = eachRow(kind, src, max, bufBytes, func(r *RowDecoder, row *Row, re *RowError) {
		if re != nil {
			out = append(out, result{Err: re.Reason, Line: r.Lines()})
			return
		}
		res := result{
			Dispatch: string(row.DispatchName()), RunID: string(row.RunID), Masked: row.Masked,
			Turns: row.Turns, ToolCalls: row.ToolCalls, HasTurns: row.HasTurns, HasToolCalls: row.HasToolCalls,
			Class: string(row.FailureClass), Kind: string(row.FailureKind()), Type: string(row.FailureType),
			Verdict: string(row.Verdict), Line: r.Lines(),
		}
		if row.HasReward {
			res.Reward = fmt.Sprint(row.Reward)
		}
		var f []string
		for _, x := range row.Findings {
			f = append(f, string(x))
		}
		res.Findings = strings.Join(f, ",")
		out = append(out, res)
	})
	if !errors.Is(end, io.EOF) && !errors.Is(end, ErrIncomplete) {
		t.Fatalf("unexpected error %v", end)
	}
	return out, offset, end
}

// eachRow decodes the rows of src (rows of at most max bytes, through a buffer of bufBytes),
// calling each with every row applied (re nil) or rejected; it returns the offset after the
// last complete line and what ended the stream (io.EOF, ErrIncomplete or a read error).
func eachRow(kind Kind, src io.Reader, max int64, bufBytes int, each func(r *RowDecoder, row *Row, re *RowError)) (offset int64, end error) {
	r := NewRowDecoder(bufBytes)
	r.Reset(src, 0, 0, max)
	var row Row
	for {
		err := r.Next(kind, &row)
		var re *RowError
		switch {
		case errors.As(err, &re):
			each(r, nil, re)
		case err != nil:
			return r.Offset(), err
		default:
			each(r, &row, nil)
		}
	}
}

func TestMainRows(t *testing.T) {
	big := strings.Repeat("x\\\"y\\\\", 5000)
	in := strings.Join([]string{
		`{"responses_create_params":{"input":[{"role":"user","content":"2+2?"}]},"response":{"output":[{"type":"message","content":[{"type":"output_text","text":"` + big + `"}]}]},"reward":1.0,"_ng_environment_server":"math","agent_ref":{"type":"responses_api_agents","name":"math_agent"},"_ng_run_id":"run-7","ng_perf":{"num_turns":3,"num_tool_calls":2.0,"total_latency_ms":1234.5},"mask_sample":false}`,
		`{"reward":0.25,"agent_ref":{"name":"simple_agent"},"mask_sample":true}`,
		``,
		`   {"reward":NaN}`,
		`{"reward":null,"ng_perf":null,"agent_ref":null}`,
		`{"reward":-Infinity,"failure_kind":"judge_failed","failure_reason":"soft"}`,
		`{"reward":1e400}`,
		`{"rew\u0061rd":0,"_ng_environment_server":""}`,
		"", // the last newline
	}, "\n")
	want := []result{
		{Dispatch: "math", RunID: "run-7", Reward: "1", Turns: 3, ToolCalls: 2, HasTurns: true, HasToolCalls: true, Line: 1},
		{Dispatch: "simple_agent", Reward: "0.25", Masked: true, Line: 2},
		{Dispatch: "unknown", Reward: "NaN", Line: 4},
		{Dispatch: "unknown", Line: 5},
		{Dispatch: "unknown", Reward: "-Inf", Line: 6},
		{Dispatch: "unknown", Reward: "+Inf", Line: 7},
		{Dispatch: "unknown", Reward: "0", Line: 8},
	}
	for _, bufBytes := range []int{0, 1, 7, 64} {
		for name, src := range map[string]func() io.Reader{
			"whole":   func() io.Reader { return strings.NewReader(in) },
			"onebyte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
			"half":    func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
		} {
			got, off, end := collect(t, Main, src(), 0, bufBytes)
			assert.Equal(t, want, got, "%s buf %d", name, bufBytes)
			assert.Equal(t, int64(len(in)), off)
			assert.ErrorIs(t, end, io.EOF)
		}
	}
}

func TestFailureRows(t *testing.T) {
	in := strings.Join([]string{
		`{"_ng_failure_class":"agent_run_error","_ng_failure_type":"httpx.ReadTimeout","failure_kind":"transport_timeout","_ng_failure_kind":"x","_ng_environment_server":"swe","_ng_failure_message":"read timed out"}`,
		`{"_ng_failure_class":"judge_failed","_ng_failure_kind":"judge_unparseable","_ng_failure_record":{"failure":{"failure_kind":"x"}},"agent_ref":{"name":"judge_agent"}}`,
		`{"_ng_failure_class":"timeout","_ng_failure_record":{"stage":"agent","failure":{"failure_reason":"slow","failure_kind":"agent_timeout"}},"failure_kind":null,"_ng_failure_kind":""}`,
		`{"_ng_failure_class":"agent_request_failed"}`,
		"",
	}, "\n")
	got, _, _ := collect(t, Failures, strings.NewReader(in), 0, 0)
	assert.Equal(t, []result{
		{Dispatch: "swe", Class: "agent_run_error", Kind: "transport_timeout", Type: "httpx.ReadTimeout", Line: 1},
		{Dispatch: "judge_agent", Class: "judge_failed", Kind: "judge_unparseable", Line: 2},
		{Dispatch: "unknown", Class: "timeout", Kind: "agent_timeout", Line: 3},
		{Dispatch: "unknown", Class: "agent_request_failed", Line: 4},
	}, got)
}

func TestVerdictRows(t *testing.T) {
	in := strings.Join([]string{
		`{"_ng_task_index":0,"_ng_rollout_index":1,"rollout_id":"r","verdict":"unhealthy","findings":["agent_turn_hollow",{"check":"model_call_failed","subject":{"_ng_task_index":0},"detail":{"status":500}},{"check_id":"agent_turn_hollow"},null,{"detail":{}}],"unobserved":["trajectory_capture_mismatch"]}`,
		`{"verdict":"healthy","findings":[]}`,
		`{"verdict":"unobserved"}`,
		`{"findings":["x"]}`,
		`{"verdict":"sick"}`,
		`{"verdict":"healthy","findings":"agent_turn_hollow"}`,
		`{"verdict":"healthy","findings":[3]}`,
		"",
	}, "\n")
	got, _, _ := collect(t, Verdicts, strings.NewReader(in), 0, 0)
	assert.Equal(t, []result{
		{Dispatch: "unknown", Verdict: "unhealthy", Findings: "agent_turn_hollow,model_call_failed", Line: 1},
		{Dispatch: "unknown", Verdict: "healthy", Line: 2},
		{Dispatch: "unknown", Verdict: "unobserved", Line: 3},
		{Err: ReasonMissingField, Line: 4},
		{Err: ReasonInvalidValue, Line: 5},
		{Err: ReasonWrongType, Line: 6},
		{Err: ReasonWrongType, Line: 7},
	}, got)
}

func TestBadRowsAlone(t *testing.T) {
	rows := []struct{ line, reason string }{
		{`[1,2]`, ReasonNotObject},
		{`"row"`, ReasonNotObject},
		{`{"reward":"0.5"}`, ReasonWrongType},
		{`{"mask_sample":1}`, ReasonWrongType},
		{`{"agent_ref":"math"}`, ReasonWrongType},
		{`{"agent_ref":{"name":7}}`, ReasonWrongType},
		{`{"ng_perf":{"num_turns":3.5}}`, ReasonWrongType},
		{`{"ng_perf":{"num_turns":-1}}`, ReasonOutOfRange},
		{`{"ng_perf":{"num_turns":1e30}}`, ReasonOutOfRange},
		{"{\"_ng_environment_server\":\"m\xffth\"}", ReasonInvalidUTF8},
		{`{"reward":1,}`, ReasonInvalidJSON},
		{`{"reward":1} x`, ReasonInvalidJSON},
		{`{"response":{"a":"unterminated}`, ReasonInvalidJSON},
		{`{"reward":0x10}`, ReasonInvalidJSON},
		{`{"_ng_run_id":"a\qb"}`, ReasonInvalidJSON},
	}
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(`{"reward":1,"_ng_environment_server":"ok"}` + "\n")
		b.WriteString(r.line + "\n")
	}
	b.WriteString(`{"reward":1,"_ng_environment_server":"ok"}` + "\n")
	// Invalid UTF-8 in a skipped value is not looked at.
	b.WriteString("{\"response\":\"caf\xe9\",\"reward\":0}\n")
	got, off, end := collect(t, Main, strings.NewReader(b.String()), 0, 16)
	require.ErrorIs(t, end, io.EOF)
	assert.Equal(t, int64(b.Len()), off)
	require.Len(t, got, 2*len(rows)+2)
	for i, r := range rows {
		assert.Equal(t, "ok", got[2*i].Dispatch)
		assert.Equal(t, r.reason, got[2*i+1].Err, "%s", r.line)
		assert.Equal(t, int64(2*i+2), got[2*i+1].Line)
	}
	assert.Equal(t, "0", got[len(got)-1].Reward)
}

func TestIncompleteRowWaits(t *testing.T) {
	full := `{"reward":0.5,"response":"` + strings.Repeat("a", 1000) + `"}` + "\n"
	for cut := 1; cut < len(full); cut += 37 {
		in := `{"reward":1}` + "\n" + full[:cut]
		got, off, end := collect(t, Main, strings.NewReader(in), 0, 64)
		require.ErrorIs(t, end, ErrIncomplete, "cut %d", cut)
		assert.Len(t, got, 1)
		assert.Equal(t, int64(13), off, "the offset stays before the partial row")
	}
	// White space only, without its newline: not a row yet either.
	_, off, end := collect(t, Main, strings.NewReader("  "), 0, 0)
	assert.ErrorIs(t, end, ErrIncomplete)
	assert.Zero(t, off)
}

func TestTooLong(t *testing.T) {
	long := `{"reward":1,"response":"` + strings.Repeat("z", 5000) + `"}`
	in := `{"reward":1}` + "\n" + long + "\n" + `{"reward":0}` + "\n" + strings.Repeat(" ", 300) + "\n"
	got, off, _ := collect(t, Main, strings.NewReader(in), 256, 64)
	assert.Equal(t, []string{"", ReasonTooLong, "", ReasonTooLong}, []string{got[0].Err, got[1].Err, got[2].Err, got[3].Err})
	assert.Equal(t, int64(len(in)), off)
	// Exactly max bytes is fine.
	row := `{"reward":1,"x":"` + strings.Repeat("q", 256-len(`{"reward":1,"x":""}`)) + `"}`
	require.Len(t, row, 256)
	got, _, _ = collect(t, Main, strings.NewReader(row+"\n"), 256, 64)
	assert.Equal(t, "1", got[0].Reward)
	// Too long while still incomplete: waits for the newline, then rejects.
	_, _, end := collect(t, Main, strings.NewReader(long), 256, 64)
	assert.ErrorIs(t, end, ErrIncomplete)
}

func TestStrings(t *testing.T) {
	cases := map[string]string{
		`"a\u00e9\ud83d\ude00b"`: "aé😀b",
		`"\ud800x"`:              "\uFFFDx",
		`"\udc00"`:               "\uFFFD",
		`"\ud800\u0041"`:         "\uFFFDA",
		`"\ud800\ud800\udc00"`:   "\uFFFD\U00010000",
		`"\ud800\t"`:             "\uFFFD\t",
		`"\ud800\n"`:             "\uFFFD\n",
		`"\"\\\/\b\f\n\r\t"`:     "\"\\/\b\f\n\r\t",
	}
	cases[`"plain"`], cases[`"café"`] = "plain", "café" // taken as they lie, with the default buffer
	for in, want := range cases {
		for _, bufBytes := range []int{0, 3} {
			got, _, _ := collect(t, Main, strings.NewReader(`{"_ng_environment_server":`+in+"}\n"), 0, bufBytes)
			require.Len(t, got, 1, in)
			assert.Equal(t, want, got[0].Dispatch, "%s buf %d", in, bufBytes)
		}
	}
	// A long value is kept up to MaxValueBytes, cut at a rune boundary.
	for _, v := range []string{strings.Repeat("é", 400), strings.Repeat("a", MaxValueBytes+1)} {
		got, _, _ := collect(t, Main, strings.NewReader(`{"_ng_run_id":"`+v+`"}`+"\n"), 0, 0)
		assert.Equal(t, v[:MaxValueBytes], got[0].RunID)
	}
}

// Skipped values whose strings hold what the compact scan looks for after a string (':' or
// ',' and a quote), at every buffer boundary.
func TestCompactSkippedStrings(t *testing.T) {
	in := `{"x":{"a\\":"b","c":"\",\"","d":[",\"",":\"}","\"]"],"e":{}},"reward":1,"y":"\":\""}` + "\n"
	for _, bufBytes := range []int{0, 1, 2, 3, 4, 5, 7, 8, 13} {
		got, _, _ := collect(t, Main, strings.NewReader(in), 0, bufBytes)
		require.Len(t, got, 1, "buf %d", bufBytes)
		assert.Equal(t, "1", got[0].Reward, "buf %d", bufBytes)
	}
	require.True(t, json.Valid([]byte(in)))
}

func TestEscapedQuotesInSkippedStrings(t *testing.T) {
	// Backslash runs that straddle buffer boundaries.
	for n := 0; n < 9; n++ {
		s := strings.Repeat(`\\`, n) + `\"` + strings.Repeat(`\\`, n)
		in := `{"x":"` + s + `","reward":0.5,"y":["` + s + `",{"z":"}]"}]}` + "\n"
		for _, bufBytes := range []int{1, 2, 3, 5, 8} {
			got, _, _ := collect(t, Main, strings.NewReader(in), 0, bufBytes)
			require.Len(t, got, 1)
			assert.Equal(t, "0.5", got[0].Reward, "n %d buf %d", n, bufBytes)
		}
	}
}

// A row's memory is the reader's buffer, whatever the row's size.
func TestMemoryFlat(t *testing.T) {
	measure := func(size int) uint64 {
		src := newSyntheticRows(size, 2)
		r := NewRowDecoder(0)
		r.Reset(src, 0, 0, 0)
		var row Row
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		n := 0
		for {
			err := r.Next(Main, &row)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			n++
		}
		runtime.ReadMemStats(&after)
		require.Equal(t, 2, n)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := measure(2<<10), measure(64<<20)
	t.Logf("allocated: %d B for 2 KiB rows, %d B for 64 MiB rows", small, large)
	assert.Less(t, large, uint64(1<<20), "a 64 MiB row must not be held")
}

// syntheticRows streams rows of about size bytes in the shape of Gym's main output, without
// holding them: the benchmarks' and tests' source of large rows. The bulk of a row is its
// response items repeated: long texts with escaped newlines and quotes, a tool call whose
// arguments are JSON-encoded code, its output (trajectoryFiller); or, for rows of a few KiB, one
// answer (answerFiller); denseFiller is a worst case of short strings and brackets.
type syntheticRows struct {
	parts [][]byte
	i, j  int
	rep   int // repetitions of the filler part left
	left  int // rows left
	size  int
}

func newSyntheticRows(size, rows int) *syntheticRows {
	filler := trajectoryFiller
	if size <= 8<<10 {
		filler = answerFiller
	}
	return newSyntheticRowsWith(filler, size, rows)
}

func newSyntheticRowsWith(filler []byte, size, rows int) *syntheticRows {
	s := &syntheticRows{size: size, left: rows, parts: [][]byte{rowHead, filler, rowTail}}
	s.start()
	return s
}

var (
	rowHead          = []byte(`{"responses_create_params":{"input":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Solve the task."}],"tools":[]},"response":{"id":"resp_1","output":[`)
	trajectoryFiller = []byte("{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"Step 0: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 1: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 2: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 3: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 4: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 5: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 6: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 7: we expand the\"}]},{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"python\",\"arguments\":\"{\\\"code\\\": \\\"import math\\\\n\\\\ndef solve(n):\\\\n    total = 0\\\\n    for k in range(1, n + 1):\\\\n        total += math.comb(n, k) * (-1) ** k\\\\n    return total\\\\n\\\\nprint(solve(12))\\\\n\\\"}\"},{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"row 0: value=0 ok\\nrow 1: value=1 ok\\nrow 2: value=4 ok\\nrow 3: value=9 ok\\nrow 4: value=16 ok\\nrow 5: value=25 ok\\nrow 6: value=36 ok\\nrow 7: value=49 ok\\nrow 8: value=64 ok\\nrow 9: value=81 ok\\nrow 10: value=100 ok\\nrow 11: value=121 ok\\nrow 12: value=144 ok\\nrow 13: value=169 ok\\nrow 14: value=196 ok\\nrow 15: value=225 ok\\nrow 16: value=256 ok\\nrow 17: value=289 ok\\nrow 18: value=324 ok\\nrow 19: value=361 ok\\n\"},{\"type\":\"message\",\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"text\":\"Step 0: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 1: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 2: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 3: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 4: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 5: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 6: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 7: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 8: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 9: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 10: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 11: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 12: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\nStep 13: we expand the expression, collect the terms and check the bound against the \\\"edge\\\" case.\\n\",\"annotations\":[]}]},")
	answerFiller     = []byte("{\"type\":\"message\",\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"text\":\"Line 0 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 1 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 2 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 3 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 4 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 5 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 6 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 7 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 8 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 9 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 10 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 11 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 12 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 13 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 14 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 15 of the answer: the sum telescopes, so the bound holds for every n.\\nLine 16 of the answer: the sum telescopes, so the bound holds for every n.\\n\",\"annotations\":[]}]},")
	denseFiller      = []byte(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me think about this step by step. The answer uses \"quotes\" and a \\ backslash, then more text. ","annotations":[]}],"status":"completed"},`)
	rowTail          = []byte(`{"type":"message","role":"assistant","content":[]}]},"reward":0.75,"mask_sample":false,"_ng_environment_server":"math","agent_ref":{"type":"responses_api_agents","name":"math_agent"},"_ng_run_id":"run-1","_ng_task_index":3,"_ng_rollout_index":0,"ng_perf":{"num_turns":4,"num_tool_calls":3,"total_latency_ms":812.5}}` + "\n")
)

func (s *syntheticRows) start() {
	s.i, s.j = 0, 0
	s.rep = max(1, (s.size-len(rowHead)-len(rowTail))/len(s.parts[1]))
}

func (s *syntheticRows) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if s.left == 0 {
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		part := s.parts[s.i]
		c := copy(p[n:], part[s.j:])
		n += c
		s.j += c
		if s.j == len(part) {
			s.j = 0
			switch {
			case s.i == 1 && s.rep > 1:
				s.rep--
			case s.i == 2:
				s.left--
				s.start()
			default:
				s.i++
			}
		}
	}
	return n, nil
}

func TestSyntheticRowsShape(t *testing.T) {
	b, err := io.ReadAll(newSyntheticRows(10<<10, 3))
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	require.Len(t, lines, 3)
	assert.InDelta(t, 10<<10, len(lines[0]), float64(len(trajectoryFiller)))
	got, _, _ := collect(t, Main, bytes.NewReader(b), 0, 0)
	assert.Equal(t, result{Dispatch: "math", RunID: "run-1", Reward: "0.75", Turns: 4, ToolCalls: 3, HasTurns: true, HasToolCalls: true, Line: 1}, got[0])
	assert.False(t, math.IsNaN(0))
}

// A row's decoded strings are bounded whatever the row repeats: a finding it has already, one
// past MaxFindings, and every earlier value of a repeated mapped key leave nothing behind.
func TestScratchBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"verdict":"unhealthy","findings":[`)
	for i := range MaxFindings + 20000 { // distinct ids, the ones past MaxFindings dropped
		fmt.Fprintf(&b, `"c%d",`, i)
	}
	for range 100000 { // the same ids again, as strings and as objects with repeated keys
		b.WriteString(`"c1",{"check_id":"c2","check":"c3","check":"c4"},`)
	}
	b.WriteString(`null]`)
	for range 50000 {
		b.WriteString(`,"_ng_run_id":"run-1","verdict":"healthy"`)
	}
	b.WriteString("}\n")
	b.WriteString("{")
	for range 20000 {
		b.WriteString(`"_ng_failure_class":"timeout","failure_kind":"k","_ng_failure_kind":"k2","_ng_failure_type":"T","_ng_environment_server":"env",`)
	}
	b.WriteString(`"agent_ref":{"name":"a","name":"b"},"_ng_failure_record":{"failure":{"failure_kind":"x","failure_kind":"y"}}}` + "\n")
	require.Greater(t, b.Len(), 2<<20)

	r := NewRowDecoder(0)
	r.Reset(strings.NewReader(b.String()), 0, 0, 0)
	var row Row
	require.NoError(t, r.Next(Verdicts, &row))
	assert.Len(t, row.Findings, MaxFindings)
	assert.Equal(t, "c0", string(row.Findings[0]))
	assert.Equal(t, fmt.Sprintf("c%d", MaxFindings-1), string(row.Findings[MaxFindings-1]))
	assert.Equal(t, "healthy", string(row.Verdict))
	assert.Equal(t, "run-1", string(row.RunID))
	// The kept findings and one string being decoded: 1024 ids of at most 5 bytes here.
	assert.LessOrEqual(t, cap(r.scratch), 16<<10, "scratch grew with the row")

	require.NoError(t, r.Next(Failures, &row))
	assert.Equal(t, "env", string(row.DispatchName()))
	assert.Equal(t, "k", string(row.FailureKind()))
	assert.Equal(t, "timeout", string(row.FailureClass))
	assert.LessOrEqual(t, cap(r.scratch), 16<<10, "scratch grew with the row")
	for i, s := range r.slots {
		assert.Equal(t, MaxValueBytes, cap(s), "slot %d", i)
	}
}

// A duplicate key's last value wins, for objects and arrays too: nothing of the earlier value
// is kept or merged.
func TestDuplicateKeysLastWins(t *testing.T) {
	main := strings.Join([]string{
		`{"agent_ref":{"name":"a"},"agent_ref":{}}`,
		`{"agent_ref":{"name":"a"},"agent_ref":null}`,
		`{"agent_ref":{"name":"a"},"agent_ref":{"name":"b"}}`,
		`{"ng_perf":{"num_turns":3},"ng_perf":{"num_tool_calls":2}}`,
		`{"ng_perf":{"num_turns":3},"ng_perf":null}`,
		"",
	}, "\n")
	got, _, _ := collect(t, Main, strings.NewReader(main), 0, 0)
	assert.Equal(t, []result{
		{Dispatch: "unknown", Line: 1},
		{Dispatch: "unknown", Line: 2},
		{Dispatch: "b", Line: 3},
		{Dispatch: "unknown", ToolCalls: 2, HasToolCalls: true, Line: 4},
		{Dispatch: "unknown", Line: 5},
	}, got)

	failures := strings.Join([]string{
		`{"_ng_failure_record":{"failure":{"failure_kind":"x"}},"_ng_failure_record":{}}`,
		`{"_ng_failure_record":{"failure":{"failure_kind":"x"},"failure":{}}}`,
		`{"_ng_failure_record":{"failure":{"failure_kind":"x"}},"_ng_failure_record":{"failure":{"failure_kind":"y"}}}`,
		"",
	}, "\n")
	got, _, _ = collect(t, Failures, strings.NewReader(failures), 0, 0)
	assert.Equal(t, []result{
		{Dispatch: "unknown", Line: 1},
		{Dispatch: "unknown", Line: 2},
		{Dispatch: "unknown", Kind: "y", Line: 3},
	}, got)

	verdicts := strings.Join([]string{
		`{"verdict":"unhealthy","findings":["a"],"findings":["b"]}`,
		`{"verdict":"unhealthy","findings":["a",{"check":"c"}],"findings":null}`,
		`{"verdict":"unhealthy","findings":["a"],"findings":[],"findings":["b","a"]}`,
		"",
	}, "\n")
	got, _, _ = collect(t, Verdicts, strings.NewReader(verdicts), 0, 0)
	assert.Equal(t, []result{
		{Dispatch: "unknown", Verdict: "unhealthy", Findings: "b", Line: 1},
		{Dispatch: "unknown", Verdict: "unhealthy", Line: 2},
		{Dispatch: "unknown", Verdict: "unhealthy", Findings: "b,a", Line: 3},
	}, got)
}

// The outcomes and verdicts the rows give are the schema's.
func TestSchemaValues(t *testing.T) {
	assert.Equal(t, []string{"scored", "failed"}, []string{string(scored), string(failed)})
	var v []string
	for _, x := range verdicts {
		v = append(v, string(x))
	}
	assert.Equal(t, []string{"healthy", "unhealthy", "unobserved"}, v)
	got, _, _ := collect(t, Verdicts, strings.NewReader(`{"verdict":"sick"}`+"\n"), 0, 0)
	assert.Equal(t, []result{{Err: ReasonInvalidValue, Line: 1}}, got)
	attrs, cut := Resource("/r/"+strings.Repeat("p", 300), strings.Repeat("i", 300))
	assert.Len(t, attrs[2].Str, 256)
	assert.Len(t, attrs[3].Str, 256)
	assert.Equal(t, 2, cut, "both cuts counted")
	attrs, cut = Resource("/r/a.jsonl", "run\xffid") // not UTF-8: made valid, counted
	assert.Equal(t, "run", string(attrs[3].Str))
	assert.Equal(t, 1, cut)
	_, cut = Resource("/r/a.jsonl", "run-1")
	assert.Zero(t, cut)
}

// Run-file numbers follow the events decoder's rules (gymjson): JSON's grammar plus Python's
// NaN and infinities, exact integers.
func TestNumberRules(t *testing.T) {
	d128 := strings.Repeat("9", 128)
	rows := []struct {
		row  string
		want result
	}{
		{`{"reward":01}`, result{Err: ReasonInvalidJSON}},
		{`{"reward":1.}`, result{Err: ReasonInvalidJSON}},
		{`{"reward":+1}`, result{Err: ReasonWrongType}},
		{`{"reward":.5}`, result{Err: ReasonWrongType}},
		{`{"reward":1e}`, result{Err: ReasonInvalidJSON}},
		{`{"reward":nan}`, result{Err: ReasonInvalidJSON}},
		{`{"reward":-NaN}`, result{Err: ReasonInvalidJSON}},
		{`{"reward":Inf}`, result{Err: ReasonInvalidJSON}},
		{`{"reward":1e-400}`, result{Dispatch: "unknown", Reward: "0"}},
		{`{"reward":-1e400}`, result{Dispatch: "unknown", Reward: "-Inf"}},
		{`{"reward":` + d128 + `}`, result{Dispatch: "unknown", Reward: "1e+128"}},
		{`{"reward":` + d128 + `9}`, result{Err: ReasonInvalidJSON}}, // over maxNumberBytes
		{`{"ng_perf":{"num_turns":3e0,"num_tool_calls":0.3e1}}`, result{Dispatch: "unknown", Turns: 3, ToolCalls: 3, HasTurns: true, HasToolCalls: true}},
		{`{"ng_perf":{"num_turns":9223372036854775807.0}}`, result{Dispatch: "unknown", Turns: math.MaxInt64, HasTurns: true}},
		{`{"ng_perf":{"num_turns":9223372036854775808}}`, result{Err: ReasonOutOfRange}},
		{`{"ng_perf":{"num_turns":` + d128 + `}}`, result{Err: ReasonOutOfRange}},
		{`{"ng_perf":{"num_turns":1e-400}}`, result{Err: ReasonWrongType}},
		{`{"ng_perf":{"num_turns":3.5}}`, result{Err: ReasonWrongType}},
		{`{"ng_perf":{"num_turns":NaN}}`, result{Err: ReasonWrongType}},
		{`{"ng_perf":{"num_turns":Infinity}}`, result{Err: ReasonOutOfRange}},
		{`{"ng_perf":{"num_turns":-3.0}}`, result{Err: ReasonOutOfRange}},
		{`{"ng_perf":{"num_turns":-0}}`, result{Dispatch: "unknown", HasTurns: true}},
	}
	for _, c := range rows {
		got, _, _ := collect(t, Main, strings.NewReader(c.row+"\n"), 0, 0)
		c.want.Line = 1
		assert.Equal(t, []result{c.want}, got, c.row)
	}
}
