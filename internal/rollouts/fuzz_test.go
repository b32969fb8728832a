package rollouts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// FuzzRowDecoder: any bytes, any kind. The reader never panics; it gives the same rows whatever
// the read boundaries and its buffer size; it consumes exactly the complete lines; and on a
// line that encoding/json accepts as an object it agrees with encoding/json on the mapped
// values (and never calls it invalid JSON).
//
//	go test ./internal/rollouts -run '^$' -fuzz FuzzRowDecoder -fuzztime 60s
func FuzzRowDecoder(f *testing.F) {
	seeds := []string{
		`{"reward":1.0,"_ng_environment_server":"math"}` + "\n",
		`{"reward":NaN,"mask_sample":true,"agent_ref":{"name":"a"},"ng_perf":{"num_turns":3,"num_tool_calls":2.0}}` + "\n",
		`{"_ng_failure_class":"timeout","_ng_failure_record":{"failure":{"failure_kind":"agent_timeout"}}}` + "\n",
		`{"verdict":"unhealthy","findings":["a",{"check":"b"},{"check_id":"c"},null]}` + "\n",
		`{"x":"\\\"}","y":[{"z":"]"}],"reward":-Infinity}` + "\n",
		`{"_ng_run_id":"\ud83d\ude00\ud800"}` + "\n\n  \n",
		"[1]\n{\"reward\":\"1\"}\n{\"reward\":1e400}\n",
		"{\"_ng_environment_server\":\"\xff\"}\n{\"reward\":0}",
		`{"reward":1,"reward":null}` + "\n",
	}
	for k := range 3 {
		for _, s := range seeds {
			f.Add([]byte(s), uint8(k))
		}
	}
	// Rows with their rollout evidence (shaped like Gym's, and broken on purpose).
	if data, err := os.ReadFile(evidenceGolden); err == nil {
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			f.Add(line, uint8(Main))
		}
	}
	// Rows of the sample runs, as Gym writes them.
	for _, name := range []string{"run1/eval.jsonl", "run1/eval_failures.jsonl", "run1/rollout_verdicts.jsonl", "run2/train.jsonl"} {
		kind := Main
		switch {
		case filepath.Base(name) == "eval_failures.jsonl":
			kind = Failures
		case filepath.Base(name) == "rollout_verdicts.jsonl":
			kind = Verdicts
		}
		file, err := os.Open(filepath.Join("..", "..", "testdata", "rollouts", name))
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(file)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 0; sc.Scan() && n < 4; n++ {
			f.Add(append(sc.Bytes(), '\n'), uint8(kind))
		}
		_ = file.Close()
	}
	f.Fuzz(func(t *testing.T, data []byte, k uint8) {
		kind := Kind(k % 3)
		want, wantOff, wantEnd := fuzzRead(kind, bytes.NewReader(data), 0)
		for _, bufBytes := range []int{1, 3, 17} {
			got, off, end := fuzzRead(kind, iotest.OneByteReader(bytes.NewReader(data)), bufBytes)
			if !equalResults(got, want) || off != wantOff || !errors.Is(end, wantEnd) {
				t.Fatalf("buffer %d: %v %d %v, whole: %v %d %v", bufBytes, got, off, end, want, wantOff, wantEnd)
			}
		}
		last := bytes.LastIndexByte(data, '\n')
		if int64(last+1) != wantOff {
			t.Fatalf("consumed %d bytes, the complete lines are %d", wantOff, last+1)
		}
		if (last == len(data)-1) != errors.Is(wantEnd, io.EOF) {
			t.Fatalf("end %v with the last newline at %d of %d", wantEnd, last, len(data))
		}
		// Compare with encoding/json, line by line.
		lines := bytes.Split(data[:last+1], []byte("\n"))
		i := 0
		for _, line := range lines[:len(lines)-1] {
			if len(bytes.Trim(line, " \t\r")) == 0 {
				continue
			}
			res := want[i]
			i++
			checkAgainstJSON(t, kind, line, res)
		}
	})
}

type fuzzResult struct {
	reason string
	row    Row
	ev     string // the row's evidence events, printed
}

// evidenceString prints a row's evidence events (nil: none).
func evidenceString(e *Evidence) string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	for i := range e.Len() {
		it := *e.Event(i).Evidence
		fmt.Fprintf(&b, "%+v;", it)
	}
	if e.Problems() > 0 {
		kind, detail := e.FirstProblem()
		fmt.Fprintf(&b, "first %s: %s", kind, detail)
	}
	return b.String()
}

func fuzzRead(kind Kind, src io.Reader, bufBytes int) (out []fuzzResult, offset int64, end error) {
	offset, end = eachRow(kind, src, 0, bufBytes, func(_ *RowDecoder, row *Row, re *RowError) {
		if re != nil {
			out = append(out, fuzzResult{reason: re.Reason})
		} else {
			out = append(out, fuzzResult{row: cloneRow(*row), ev: evidenceString(row.Evidence)})
		}
	})
	return out, offset, end
}

func cloneRow(r Row) Row {
	c := r
	cp := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		return append([]byte{}, b...)
	}
	c.EnvironmentServer, c.AgentName, c.RunID = cp(r.EnvironmentServer), cp(r.AgentName), cp(r.RunID)
	c.FailureClass, c.FailureType, c.Verdict = cp(r.FailureClass), cp(r.FailureType), cp(r.Verdict)
	for i := range c.kinds {
		c.kinds[i] = cp(r.kinds[i])
	}
	c.Findings = nil
	for _, x := range r.Findings {
		c.Findings = append(c.Findings, cp(x))
	}
	return c
}

func equalResults(a, b []fuzzResult) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.reason != y.reason || x.ev != y.ev || !sameFloat(x.row.Reward, y.row.Reward) || x.row.HasReward != y.row.HasReward ||
			x.row.Masked != y.row.Masked || x.row.Turns != y.row.Turns || x.row.ToolCalls != y.row.ToolCalls ||
			x.row.TaskIndex != y.row.TaskIndex || x.row.HasTaskIndex != y.row.HasTaskIndex ||
			x.row.RolloutIndex != y.row.RolloutIndex || x.row.HasRolloutIndex != y.row.HasRolloutIndex ||
			!bytes.Equal(x.row.DispatchName(), y.row.DispatchName()) || !bytes.Equal(x.row.RunID, y.row.RunID) ||
			!bytes.Equal(x.row.FailureKind(), y.row.FailureKind()) || !bytes.Equal(x.row.FailureClass, y.row.FailureClass) ||
			!bytes.Equal(x.row.FailureType, y.row.FailureType) || !bytes.Equal(x.row.Verdict, y.row.Verdict) ||
			len(x.row.Findings) != len(y.row.Findings) {
			return false
		}
		for j := range x.row.Findings {
			if !bytes.Equal(x.row.Findings[j], y.row.Findings[j]) {
				return false
			}
		}
	}
	return true
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// checkAgainstJSON: on a line encoding/json reads as an object of valid UTF-8, the reader's
// verdict and mapped values agree with it.
func checkAgainstJSON(t *testing.T, kind Kind, line []byte, res fuzzResult) {
	if !utf8.Valid(line) || !json.Valid(line) {
		return
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(line, &top) != nil || top == nil { // null unmarshals into a nil map
		if res.reason != ReasonNotObject {
			t.Fatalf("%q is JSON but not an object: reason %q", line, res.reason)
		}
		return
	}
	if res.reason == ReasonInvalidJSON || res.reason == ReasonNotObject {
		t.Fatalf("%q is a JSON object, rejected as %q", line, res.reason)
	}
	if res.reason != "" {
		return // a mapped key of a wrong type, or a bad verdict
	}
	str := func(key string, got []byte) {
		raw, ok := top[key]
		var want *string
		if ok && json.Unmarshal(raw, &want) != nil {
			t.Fatalf("%q: %s is not a string, accepted", line, key)
		}
		w := ""
		if want != nil {
			w = *want
			if len(w) > MaxValueBytes {
				return
			}
		}
		if w != string(got) {
			t.Fatalf("%q: %s is %q, encoding/json says %q", line, key, got, w)
		}
	}
	// An index is given exactly when encoding/json reads the value as an integer >= 0 within
	// int64 (written as an integer: 3.0 and 3e0 are integers to the decoder, not to it).
	index := func(key string, got int64, has bool) {
		raw, ok := top[key]
		var want uint64
		if !ok || json.Unmarshal(raw, &want) != nil || want > math.MaxInt64 {
			if has && ok && bytes.ContainsAny(raw, ".eE") {
				return
			}
			if has {
				t.Fatalf("%q: %s is %d, encoding/json reads no integer", line, key, got)
			}
			return
		}
		if !has || uint64(got) != want {
			t.Fatalf("%q: %s is %d (%v), encoding/json says %d", line, key, got, has, want)
		}
	}
	switch kind {
	case Main:
		index("_ng_task_index", res.row.TaskIndex, res.row.HasTaskIndex)
		index("_ng_rollout_index", res.row.RolloutIndex, res.row.HasRolloutIndex)
		str("_ng_run_id", res.row.RunID)
		str("_ng_environment_server", res.row.EnvironmentServer)
		if raw, ok := top["reward"]; ok {
			var want *float64
			if json.Unmarshal(raw, &want) == nil {
				if (want != nil) != res.row.HasReward || want != nil && *want != res.row.Reward {
					t.Fatalf("%q: reward %v %v, encoding/json says %v", line, res.row.HasReward, res.row.Reward, want)
				}
			}
		}
	case Failures:
		index("_ng_task_index", res.row.TaskIndex, res.row.HasTaskIndex)
		index("_ng_rollout_index", res.row.RolloutIndex, res.row.HasRolloutIndex)
		str("_ng_failure_class", res.row.FailureClass)
		str("_ng_failure_type", res.row.FailureType)
	case Verdicts:
		str("verdict", res.row.Verdict)
	}
}
