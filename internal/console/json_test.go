package console

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// field matches a key to a field as encoding/json matches one to a struct field (it is the
// oracle here, on the rule alone): the exact name, else the first equal under Unicode simple
// folding.
func TestFieldMatchesEncodingJSON(t *testing.T) {
	type fields struct {
		Kind      *string `json:"kind"`
		SchemaURL *string `json:"schema_url"`
		Name      *string `json:"name"`
	}
	names := []string{"kind", "schema_url", "name"}
	for _, key := range []string{"kind", "KIND", "Kind", "\u212aind", "ſchema_url", "SCHEMA_URL", "schema-url", "name ", "nam", "NAME", "kınd", "kind\u0000", "", "ｋind"} {
		var f fields
		kb, err := json.Marshal(key)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal([]byte(`{`+string(kb)+`:"x"}`), &f), key)
		want := -1
		for i, p := range []*string{f.Kind, f.SchemaURL, f.Name} {
			if p != nil {
				want = i
			}
		}
		assert.Equal(t, want, field([]byte(key), names), "%q", key)
	}
}

// A string's bytes that are not UTF-8 are each read as U+FFFD, as encoding/json read them
// (the console decoders never rejected such a record): in a value, in a key, in a resource.
// Outside a string such a byte is a syntax error.
func TestInvalidUTF8(t *testing.T) {
	in := "{\"body\": \"a\xffb\xe2\x82\", \"attributes\": {\"k\xfe\": \"\xed\xa0\x80\"}, \"observed_timestamp\": \"2025-12-01T19:00:21.000050Z\", \"resource\": {\"attributes\": {\"service.name\": \"x\xc0\"}}}\n" +
		"{\"body\": \"b\", \"observed_timestamp\": \"2025-12-01T19:00:21.000050Z\", \"resource\": {\"attributes\": {\"service.name\": \"x\\ufffd\"}}}\n" +
		"{\"body\": \xff, \"observed_timestamp\": \"2025-12-01T19:00:21.000050Z\"}\n"
	c, tot, _ := feed(t, []byte(in), 1<<20)
	assert.Equal(t, int64(2), tot.accepted)
	assert.Equal(t, map[string]int64{ReasonInvalidJSON: 1}, tot.rejected)
	rl := c.logs[0].ResourceLogs()
	require.Equal(t, 1, rl.Len(), "x\\xc0 is x\\ufffd: one resource")
	r := rl.At(0).ScopeLogs().At(0).LogRecords().At(0)
	assert.Equal(t, "a\ufffdb\ufffd\ufffd", r.Body().Str(), "one U+FFFD per bad byte")
	v, ok := r.Attributes().Get("k\ufffd")
	require.True(t, ok)
	assert.Equal(t, "\ufffd\ufffd\ufffd", v.Str(), "a surrogate's UTF-8 is three bad bytes")
}

// FuzzDecodeRecord: on any record, the decoders never panic; a record is invalid_json when
// the one scanner says it is not JSON (its bad UTF-8 read as U+FFFD), and only then or when
// more than white space, '}' or ']' follows it; and a reader's scratch, reused from an
// earlier record, never changes what a record gives.
func FuzzDecodeRecord(f *testing.F) {
	for _, c := range decodeCorpus() {
		k := Classify([]byte(c.in))
		if k == Text || k == BlockStart {
			k = Log
		}
		f.Add(uint8(k-Metrics), []byte(c.in))
	}
	f.Fuzz(func(t *testing.T, k uint8, b []byte) {
		if len(b) == 0 || b[0] != '{' {
			return
		}
		kind := Metrics + Kind(k%3)
		decode := func(b []byte, reuse *recordReaders) (string, []byte) {
			var out []byte
			var err error
			switch kind {
			case Metrics:
				md := pmetric.NewMetrics()
				if err = reuse.metrics.decodeMetrics(b, md); err == nil {
					out, _ = (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
				}
			case Span:
				td := ptrace.NewTraces()
				var g resourceGroup
				if err = reuse.span.decodeSpan(b, td, &g); err == nil {
					out, _ = (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
				}
			default:
				ld := plog.NewLogs()
				var g resourceGroup
				if err = reuse.log.decodeLog(b, ld, &g); err == nil {
					out, _ = (&plog.ProtoMarshaler{}).MarshalLogs(ld)
				}
			}
			if err != nil {
				return reasonOf(err), nil
			}
			return "", out
		}
		var fresh, used recordReaders
		for _, c := range []string{cMetric, cSpan, cLog, cHist} {
			decode([]byte(c), &used)
		}
		reason, out := decode(b, &fresh)
		reason2, out2 := decode(b, &used)
		if reason != reason2 || !bytes.Equal(out, out2) {
			t.Fatalf("%q: %q, then with a used reader %q", b, reason, reason2)
		}
		// Again, on the arrays the record itself left (the metrics reader keeps them).
		if reason3, out3 := decode(b, &used); reason != reason3 || !bytes.Equal(out, out3) {
			t.Fatalf("%q: %q, then after itself %q", b, reason, reason3)
		}
		valid := gymjson.AppendValidUTF8(nil, b)
		end, err := gymjson.Skip(valid, 0, 1)
		notJSON := err != nil
		if i := gymjson.SkipSpace(valid, end); err == nil && i < len(valid) && valid[i] != '}' && valid[i] != ']' {
			notJSON = true
		}
		// (Data after a record that is not the SDK's shape is not looked at: invalid_record.)
		if (err != nil && reason != ReasonInvalidJSON) || (reason == ReasonInvalidJSON && !notJSON) {
			t.Fatalf("%q: %q, the scanner says not JSON: %v (%v)", b, reason, notJSON, err)
		}
	})
}

type recordReaders struct {
	metrics metricsReader
	span    spanReader
	log     logReader
}
