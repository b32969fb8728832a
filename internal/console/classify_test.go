package console

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		line string
		want Kind
	}{
		// The first bytes of each shape as json.dumps(indent=None) writes them.
		{`{"resource_metrics": [{"resource": {"attributes": {}, "schema_url": ""}, "scope_metrics": []}]}`, Metrics},
		{`{"name": "rollout", "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x5fb397be34d26b51", "trace_state": "[]"}}`, Span},
		{`{"name": "a \"quoted\" name", "context": null}`, Span},
		{`{"body": "judge did not answer", "severity_number": 17}`, Log},
		{`{"body": null}`, Log},
		{"{", BlockStart},
		{"{\r", BlockStart},
		// Not telemetry.
		{"INFO:     Started server process [4242]", Text},
		{"Traceback (most recent call last):", Text},
		{`  File "/opt/gym/app.py", line 88, in verify`, Text},
		{"", Text},
		{"   ", Text},
		{`{"level": "info", "msg": "judge model loaded"}`, Text},
		{`{"name": "structlog-style", "level": "info"}`, Text},
		{`{"name": 12, "context": {}}`, Text},
		{`    "resource_metrics": [`, Text},
		{`}`, Text},
		{`[{"body": 1}]`, Text},
		{`{"bo\u0064y": 1}`, Text},
		// One of the shapes, however badly it goes on: a record to decode (and reject).
		{`{"resource_metrics": [{"resource": {"attr`, Metrics},
		{`{"body": `, Log},
	} {
		assert.Equal(t, c.want, Classify([]byte(c.line)), "%q", c.line)
	}
}

func TestClassifyAllocs(t *testing.T) {
	lines := [][]byte{
		[]byte("INFO:     127.0.0.1:53422 - \"POST /verify HTTP/1.1\" 200 OK"),
		[]byte(`{"name": "rollout", "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736"}}`),
		[]byte(`{"resource_metrics": []}`),
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		for _, l := range lines {
			Classify(l)
		}
	}))
}

// FuzzClassify: the classifier and the stream behind it never panic; trailing white space
// never changes a kind; each line that is not part of a block is counted exactly once, as
// accepted, skipped or rejected; a line classified as text never yields data.
func FuzzClassify(f *testing.F) {
	for _, l := range bytes.Split(readSample(f), []byte("\n")) {
		f.Add(l)
	}
	for _, s := range []string{
		"", "{", "}", `{"body": NaN}`, `{"resource_metrics": [Infinity]}`, `{"name": "x", "context": -Infinity}`,
		`{"name": "\\", "context": {}}`, `{"name": "unterminated`, `{"body": "\u0000Infinity"}`,
		`{"resource_metrics": [{"resource": {"attributes": {"a": [1, 2.5, "x", true, null]}, "schema_url": ""}, "scope_metrics": [{"scope": {"name": "s"}, "metrics": [{"name": "m", "data": {"data_points": [{"attributes": {}, "start_time_unix_nano": 0, "time_unix_nano": 1, "count": 1, "sum": 1, "scale": 99, "zero_count": 0, "positive": {"offset": 0, "bucket_counts": [1]}}], "aggregation_temporality": 2}}]}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // lines come split
		}
		k := Classify(line)
		if k2 := Classify(append(append([]byte{}, line...), " \t\r"...)); k2 != k {
			t.Fatalf("trailing white space changed %q from %v to %v", line, k, k2)
		}
		c := &capture{}
		s := NewLineDecoder("fuzz", 1<<16, c, ratelog.NewLogger(zap.NewNop(), 1, 1))
		_, _ = s.Line(line)
		st := s.Flush()
		var rejected int64
		for _, n := range st.Rejected {
			rejected += n
		}
		total := st.Accepted + st.Unknown + rejected
		switch {
		case k == BlockStart:
			if total != 0 {
				t.Fatalf("a block's first line is counted with its block, got %d", total)
			}
		case total != 1:
			t.Fatalf("%q (%v) counted %d times: %+v", line, k, total, st)
		case k == Text && (st.Unknown != 1 || len(c.metrics)+len(c.traces)+len(c.logs) != 0):
			t.Fatalf("text %q yielded data or was not skipped", line)
		case k != Text && st.Unknown != 0:
			t.Fatalf("a %v record %q was skipped as text", k, line)
		}
	})
}
