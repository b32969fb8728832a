package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strconv"
	"testing"
)

// emitterCorpus is the events-v1 corpus the Python emitter writes (python/tests/test_corpus.py
// fails when it writes another line; OTELCOL_GYM_UPDATE_CORPUS=1 rewrites the file).
const emitterCorpus = "../../testdata/events-v1/emitter-corpus.jsonl"

// corpusCase is one line of the corpus: the line the emitter writes and what it decodes to.
type corpusCase struct {
	Name string          `json:"name"`
	Line string          `json:"line"`
	Want json.RawMessage `json:"want"`
}

func readCorpus(t *testing.T) []corpusCase {
	t.Helper()
	f, err := os.Open(emitterCorpus)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c corpusCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s line %d: %v", emitterCorpus, len(cases)+1, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s has no case", emitterCorpus)
	}
	return cases
}

// TestEmitterCorpus decodes every line the Python emitter writes (Accepted) and compares the
// event with the case's want: every field that is set, and no other.
func TestEmitterCorpus(t *testing.T) {
	covered := map[EventType]bool{}
	for _, c := range readCorpus(t) {
		t.Run(c.Name, func(t *testing.T) {
			var ev Event
			if err := NewDecoder(0).Decode([]byte(c.Line), &ev); err != nil {
				t.Fatalf("Decode(%s): %v (%s)", c.Line, err, Reason(err))
			}
			covered[ev.Type] = true
			got, err := json.Marshal(wantOf(reflect.ValueOf(ev)))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normalJSON(t, got), normalJSON(t, c.Want); !reflect.DeepEqual(g, w) {
				t.Errorf("line %s\ngot  %s\nwant %s", c.Line, got, c.Want)
			}
		})
	}
	// Every event the decoder knows has a case: a new event needs its line in the emitter.
	for typ := EventResource; typ < numEventTypes; typ++ {
		if !covered[typ] {
			t.Errorf("no case of the emitter corpus decodes to %s", typ)
		}
	}
}

// wantOf renders a decoded value as the corpus writes want: the fields that are set, by their
// Go names; bytes as strings, event types and value kinds by name, NaN and the infinities as
// "NaN", "+Inf", "-Inf".
func wantOf(v reflect.Value) any {
	switch x := v.Interface().(type) {
	case EventType:
		return x.String()
	case ValueKind:
		return [...]string{ValueString: "string", ValueInt: "int", ValueBool: "bool"}[x]
	case []byte:
		return string(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return x
	}
	switch v.Kind() {
	case reflect.Struct:
		m := map[string]any{}
		for i := range v.NumField() {
			if f := v.Field(i); !f.IsZero() {
				m[v.Type().Field(i).Name] = wantOf(f)
			}
		}
		return m
	case reflect.Slice, reflect.Array:
		l := make([]any, v.Len())
		for i := range l {
			l[i] = wantOf(v.Index(i))
		}
		return l
	}
	return v.Interface()
}

// normalJSON decodes b with every number as the same text whatever way it was written (1,
// 1.0 and 1e0 are one number; integers beyond float64's exact range are kept whole).
func normalJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var norm func(any) any
	norm = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
				return strconv.FormatInt(i, 10)
			}
			f, err := strconv.ParseFloat(string(x), 64)
			if err != nil {
				t.Fatalf("%s: %v", x, err)
			}
			if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
				return strconv.FormatInt(int64(f), 10)
			}
			return strconv.FormatFloat(f, 'g', -1, 64)
		case map[string]any:
			for k, e := range x {
				x[k] = norm(e)
			}
		case []any:
			for i, e := range x {
				x[i] = norm(e)
			}
		}
		return v
	}
	return norm(v)
}
