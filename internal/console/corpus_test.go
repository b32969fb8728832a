package console

import (
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The decoding corpus: tricky records (key case and folding, duplicate keys, type
// mismatches, Python's tokens in every numeric position, big ints, escapes, surrogates,
// invalid UTF-8, deep nesting, trailing data, empty objects, nulls) run through a stream,
// with what came out (the counts, the pdata as JSON and a hash of its protobuf, which keeps
// NaN's bits and every string byte) pinned in testdata/decode-corpus.txt. The file was
// written by the encoding/json decoder the gymjson one replaced: it is the semantics that
// decoder had, kept (the cases in corpusChanged excepted: see there).

const (
	cMetric = `{"resource_metrics": [{"resource": {"attributes": {"service.name": "nemo-gym/x", "process.pid": 42}, "schema_url": ""}, "scope_metrics": [{"scope": {"name": "nemo.lens", "version": "0.3.0", "schema_url": "", "attributes": null}, "metrics": [{"name": "m.sum", "description": "d", "unit": "1", "data": {"data_points": [{"attributes": {"k": "v"}, "start_time_unix_nano": 1764615600000000000, "time_unix_nano": 1764615620000000000, "value": 3, "exemplars": [{"filtered_attributes": {"rollout.id": "r-19"}, "value": 1, "time_unix_nano": 1764615617000000000, "span_id": 6896022297620147025, "trace_id": 100985939111033328018442752961257817910}]}], "aggregation_temporality": 2, "is_monotonic": true}}, {"name": "m.gauge", "description": "", "unit": "1", "data": {"data_points": [{"attributes": {}, "start_time_unix_nano": null, "time_unix_nano": 1764615620000000000, "value": 0.5, "exemplars": []}]}}], "schema_url": ""}], "schema_url": ""}]}`
	cHist   = `{"resource_metrics": [{"resource": {"attributes": {}, "schema_url": ""}, "scope_metrics": [{"scope": null, "metrics": [{"name": "h", "description": "", "unit": "ms", "data": {"data_points": [{"attributes": {"a": 1}, "start_time_unix_nano": 1, "time_unix_nano": 2, "count": 7, "sum": 40.0, "bucket_counts": [0, 4, 2, 1], "explicit_bounds": [0.0, 5.0, 10.0], "min": 1.5, "max": 19.0, "exemplars": []}], "aggregation_temporality": 2}}], "schema_url": ""}], "schema_url": ""}]}`
	cExp    = `{"resource_metrics": [{"resource": {"attributes": {}, "schema_url": ""}, "scope_metrics": [{"scope": null, "metrics": [{"name": "e", "description": "", "unit": "s", "data": {"data_points": [{"attributes": {}, "start_time_unix_nano": 1, "time_unix_nano": 2, "count": 4, "sum": 1.25, "scale": 3, "zero_count": 0, "positive": {"offset": -9, "bucket_counts": [1, 0, 2, 1]}, "negative": {"offset": 0, "bucket_counts": []}, "flags": 0, "min": 0.125, "max": 0.5, "exemplars": []}], "aggregation_temporality": 1}}], "schema_url": ""}], "schema_url": ""}]}`
	cSpan   = `{"name": "POST /verify", "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x00f067aa0ba902b7", "trace_state": "['{key=nemo, value=r19}']"}, "kind": "SpanKind.CLIENT", "parent_id": "0x5fb397be34d26b51", "start_time": "2025-12-01T19:00:12.250000Z", "end_time": "2025-12-01T19:00:12.750125Z", "status": {"status_code": "ERROR", "description": "TimeoutError"}, "attributes": {"http.response.status_code": 504, "nemo.gym.retry": [1, 2]}, "events": [{"name": "exception", "timestamp": "2025-12-01T19:00:12.750000Z", "attributes": {"exception.type": "TimeoutError"}}], "links": [{"context": {"trace_id": "0x0af7651916cd43dd8448eb211c80319c", "span_id": "0xb7ad6b7169203331", "trace_state": "[]"}, "attributes": {"nemo.gym.link": "batch"}}], "resource": {"attributes": {"service.name": "nemo-gym/x", "process.pid": 42}, "schema_url": ""}}`
	cLog    = `{"body": "judge did not answer", "severity_number": 17, "severity_text": "ERROR", "attributes": {"code.line.number": 90}, "dropped_attributes": 0, "timestamp": "2025-12-01T19:00:12.800000Z", "observed_timestamp": "2025-12-01T19:00:12.800100Z", "trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x5fb397be34d26b51", "trace_flags": 1, "resource": {"attributes": {"service.name": "nemo-gym/x"}, "schema_url": ""}, "event_name": ""}`
)

// sub replaces the one occurrence of old in s (a case that would change nothing is a
// mistake in the table).
func sub(s, old, new string) string {
	if strings.Count(s, old) != 1 {
		panic(fmt.Sprintf("%q occurs %d times", old, strings.Count(s, old)))
	}
	return strings.Replace(s, old, new, 1)
}

// nest returns v inside n lists.
func nest(n int, v string) string { return strings.Repeat("[", n) + v + strings.Repeat("]", n) }

type corpusCase struct{ name, in string }

func decodeCorpus() []corpusCase {
	const sumValue = `"value": 3,`
	const gaugeValue = `"value": 0.5,`
	const logBody = `"body": "judge did not answer"`
	const spanAttrs = `"attributes": {"http.response.status_code": 504, "nemo.gym.retry": [1, 2]}`
	const logAttrs = `"attributes": {"code.line.number": 90}`
	spanRes := func(attrs string) string {
		return sub(cSpan, `"resource": {"attributes": {"service.name": "nemo-gym/x", "process.pid": 42}, "schema_url": ""}`, `"resource": {"attributes": `+attrs+`, "schema_url": ""}`)
	}
	cs := []corpusCase{
		{"metrics", cMetric},
		{"histogram", cHist},
		{"exponential", cExp},
		{"span", cSpan},
		{"log", cLog},
		{"pretty log", "{\n    \"body\": \"b\",\n    \"attributes\": {\n        \"a\": NaN\n    },\n    \"observed_timestamp\": \"2025-12-01T19:00:21.000050Z\"\n}"},

		// Keys: an exact match, else one equal under Unicode simple folding (encoding/json's
		// rule: U+017F folds to s, U+212A to k); escapes resolved first; anything else ignored.
		{"key case", sub(sub(cMetric, `"scope_metrics"`, `"SCOPE_Metrics"`), `"is_monotonic"`, `"Is_Monotonic"`)},
		{"key long s", sub(cMetric, `"schema_url": ""}, "scope_metrics"`, `"ſchema_url": "x"}, "scope_metrics"`)},
		{"key kelvin", sub(cSpan, `"kind"`, `"\u212aind"`)},
		{"key kelvin raw", sub(cSpan, `"kind"`, "\"\u212aind\"")},
		{"key escaped", sub(cSpan, `"parent_id"`, `"parent\u005fid"`)},
		{"key escaped case", sub(cLog, `"severity_text"`, `"\u0053everity_TEXT"`)},
		{"key bad utf8", sub(cLog, `"severity_text"`, "\"severity_text\xff\"")},
		{"key unknown", sub(cLog, `"event_name": ""`, `"event_name": "", "extra": {"deep": [1, {"x": NaN}]}, "Extra2": null`)},
		{"key near miss", sub(cLog, `"severity_text"`, `"severity text"`)},

		// Duplicate keys: the last wins; an object decoded into a struct or a map that is
		// already there is merged into it; an array into a slice reuses its elements.
		{"dup value", sub(cMetric, sumValue, `"value": 1, "value": 7,`)},
		{"dup value null", sub(cMetric, sumValue, `"value": 1, "value": null,`)},
		{"dup name null", sub(cSpan, `"kind"`, `"name": null, "kind"`)},
		{"dup name", sub(cSpan, `"kind"`, `"Name": "later", "kind"`)},
		{"dup body", sub(cLog, logBody, `"body": {"a": 1}, "body": {"b": 2}`)},
		{"dup body null", sub(cLog, logBody, `"body": "x", "body": null`)},
		{"dup attributes", sub(cSpan, spanAttrs, `"attributes": {"a": 1, "b": 2}, "ATTRIBUTES": {"b": "two", "c": 3}`)},
		{"dup attributes null", sub(cSpan, spanAttrs, `"attributes": {"a": 1}, "attributes": null, "attributes": {"c": 3}`)},
		{"dup attribute key", sub(cLog, logAttrs, `"attributes": {"a": 1, "a": "last"}`)},
		{"dup resource", sub(cLog, `"resource": {"attributes": {"service.name": "nemo-gym/x"}, "schema_url": ""}`, `"resource": {"attributes": {"a": 1}, "schema_url": "s1"}, "resource": {"attributes": {"b": 2}}`)},
		{"dup resource null", sub(cLog, `"resource": {"attributes": {"service.name": "nemo-gym/x"}, "schema_url": ""}`, `"resource": {"attributes": {"a": 1}, "schema_url": "s1"}, "resource": null, "resource": {"attributes": {"b": 2}}`)},
		{"dup context", sub(cSpan, `"kind"`, `"context": {"span_id": "0x00000000000000ff"}, "kind"`)},
		{"dup status", sub(cSpan, `"attributes": {"http`, `"status": {"description": "later"}, "attributes": {"http`)},
		{"dup events", sub(cSpan, `"links"`, `"events": [{"attributes": {"more": true}}, {"name": "second"}], "links"`)},
		{"dup events shorter", sub(cSpan, `"links"`, `"events": [], "links"`)},
		{"dup events three", sub(cSpan, `"links"`, `"events": [{"name": "a"}, {"name": "b"}, {"name": "c"}], "events": [{"name": "x"}], "events": [{}, {}, {"timestamp": null}], "links"`)},
		{"dup scope_metrics", sub(cMetric, `"schema_url": ""}], "schema_url": ""}]}`, `"schema_url": "", "unknown": 1}], "scope_metrics": [{"schema_url": "later"}], "schema_url": ""}]}`)},
		{"dup data_points", sub(cHist, `"aggregation_temporality": 2}`, `"aggregation_temporality": 2, "data_points": [{"start_time_unix_nano": 1, "time_unix_nano": 3, "count": 0, "explicit_bounds": []}]}`)},
		{"dup explicit_bounds", sub(cHist, `"explicit_bounds": [0.0, 5.0, 10.0],`, `"explicit_bounds": [1, 2, 3, 4, 5], "explicit_bounds": [0.0, 5.0, 10.0],`)},
		{"dup resource_metrics", sub(cHist, `"resource_metrics": [`, `"resource_metrics": null, "resource_metrics": [`)},

		// A JSON type that the field does not take is invalid_record.
		{"type value string", sub(cMetric, sumValue, `"value": "3",`)},
		{"type value bool", sub(cMetric, sumValue, `"value": true,`)},
		{"type value list", sub(cMetric, sumValue, `"value": [3],`)},
		{"type value object", sub(cMetric, sumValue, `"value": {},`)},
		{"type name number", sub(cMetric, `"name": "m.sum"`, `"name": 5`)},
		{"type description null", sub(cMetric, `"description": "d"`, `"description": null`)},
		{"type temporality float", sub(cMetric, `"aggregation_temporality": 2`, `"aggregation_temporality": 2.0`)},
		{"type temporality string", sub(cMetric, `"aggregation_temporality": 2`, `"aggregation_temporality": "2"`)},
		{"type temporality big", sub(cHist, `"aggregation_temporality": 2`, `"aggregation_temporality": 9223372036854775808`)},
		{"type temporality -0", sub(cHist, `"aggregation_temporality": 2`, `"aggregation_temporality": -0`)},
		{"type monotonic number", sub(cMetric, `"is_monotonic": true`, `"is_monotonic": 1`)},
		{"type monotonic null", sub(cMetric, `"is_monotonic": true`, `"is_monotonic": null`)},
		{"type resource list", sub(cLog, `"resource": {"attributes": {"service.name": "nemo-gym/x"}, "schema_url": ""}`, `"resource": []`)},
		{"type resource string", sub(cSpan, `"resource": {"attributes": {"service.name": "nemo-gym/x", "process.pid": 42}, "schema_url": ""}`, `"resource": "r"`)},
		{"type attributes string", sub(cLog, logAttrs, `"attributes": "a"`)},
		{"type attributes list", sub(cSpan, spanAttrs, `"attributes": []`)},
		{"type scope_metrics object", sub(cMetric, `"scope_metrics": [`, `"scope_metrics": {}, "x": [`)},
		{"type resource_metrics", `{"resource_metrics": 12}`},
		{"type data_points object", sub(cMetric, `"data": {"data_points": [{"attributes": {}, "start_time_unix_nano": null`, `"data": {"data_points": {}, "x": [{"attributes": {}, "start_time_unix_nano": null`)},
		{"type data point string", sub(cMetric, `"data": {"data_points": [{"attributes": {}, "start_time_unix_nano": null, "time_unix_nano": 1764615620000000000, "value": 0.5, "exemplars": []}]}`, `"data": {"data_points": ["p"]}`)},
		{"type data point null", sub(cMetric, `"data": {"data_points": [{"attributes": {}, "start_time_unix_nano": null, "time_unix_nano": 1764615620000000000, "value": 0.5, "exemplars": []}]}`, `"data": {"data_points": [null]}`)},
		{"type exemplars object", sub(cMetric, `"value": 0.5, "exemplars": []`, `"value": 0.5, "exemplars": {}`)},
		{"type count string", sub(cHist, `"count": 7`, `"count": "7"`)},
		{"type bucket count null", sub(cHist, `"bucket_counts": [0, 4, 2, 1]`, `"bucket_counts": [0, 4, null, 1]`)},
		{"type bounds null", sub(cHist, `"explicit_bounds": [0.0, 5.0, 10.0]`, `"explicit_bounds": null`)},
		{"type bounds empty", sub(cHist, `"bucket_counts": [0, 4, 2, 1], "explicit_bounds": [0.0, 5.0, 10.0]`, `"bucket_counts": [], "explicit_bounds": []`)},
		{"type bound string", sub(cHist, `"explicit_bounds": [0.0, 5.0, 10.0]`, `"explicit_bounds": [0.0, "5", 10.0]`)},
		{"type scale null", sub(cExp, `"scale": 3`, `"scale": null`)},
		{"type positive null", sub(cExp, `"positive": {"offset": -9, "bucket_counts": [1, 0, 2, 1]}`, `"positive": null`)},
		{"type positive list", sub(cExp, `"positive": {"offset": -9, "bucket_counts": [1, 0, 2, 1]}`, `"positive": []`)},
		{"type span name null", sub(cSpan, `"name": "POST /verify"`, `"name": null`)},
		{"type kind null", sub(cSpan, `"kind": "SpanKind.CLIENT"`, `"kind": null`)},
		{"type parent_id number", sub(cSpan, `"parent_id": "0x5fb397be34d26b51"`, `"parent_id": 5`)},
		{"type parent_id empty", sub(cSpan, `"parent_id": "0x5fb397be34d26b51"`, `"parent_id": ""`)},
		{"type parent_id zero", sub(cSpan, `"parent_id": "0x5fb397be34d26b51"`, `"parent_id": "0x0000000000000000"`)},
		{"type status null", sub(cSpan, `"status": {"status_code": "ERROR", "description": "TimeoutError"}`, `"status": null`)},
		{"type status empty", sub(cSpan, `"status": {"status_code": "ERROR", "description": "TimeoutError"}`, `"status": {}`)},
		{"type events null element", sub(cSpan, `"events": [{"name"`, `"events": [null, {"name"`)},
		{"type links null element", sub(cSpan, `"links": [{"context"`, `"links": [null, {"context"`)},
		{"type context null", sub(cSpan, `"context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x00f067aa0ba902b7", "trace_state": "['{key=nemo, value=r19}']"}`, `"context": null`)},
		{"type trace_state null", sub(cSpan, `"trace_state": "['{key=nemo, value=r19}']"`, `"trace_state": null`)},
		{"type start_time number", sub(cSpan, `"start_time": "2025-12-01T19:00:12.250000Z"`, `"start_time": 1`)},
		{"type start_time offset", sub(cSpan, `"start_time": "2025-12-01T19:00:12.250000Z"`, `"start_time": "2025-12-01T20:00:12.25+01:00"`)},
		{"type severity float", sub(cLog, `"severity_number": 17`, `"severity_number": 17.0`)},
		{"type severity string", sub(cLog, `"severity_number": 17`, `"severity_number": "17"`)},
		{"type severity 25", sub(cLog, `"severity_number": 17`, `"severity_number": 25`)},
		{"type dropped string", sub(cLog, `"dropped_attributes": 0`, `"dropped_attributes": "5"`)},
		{"type dropped string bad", sub(cLog, `"dropped_attributes": 0`, `"dropped_attributes": " 5"`)},
		{"type dropped float", sub(cLog, `"dropped_attributes": 0`, `"dropped_attributes": 5.0`)},
		{"type dropped 2^31", sub(cLog, `"dropped_attributes": 0`, `"dropped_attributes": 2147483648`)},
		{"type dropped 2^31+1", sub(cLog, `"dropped_attributes": 0`, `"dropped_attributes": 2147483649`)},
		{"type dropped -0", sub(cLog, `"dropped_attributes": 0`, `"dropped_attributes": -0`)},
		{"type dropped bool", sub(cLog, `"dropped_attributes": 0`, `"dropped_attributes": false`)},
		{"type dropped null", sub(cLog, `"dropped_attributes": 0`, `"dropped_attributes": null`)},
		{"type trace_flags 256", sub(cLog, `"trace_flags": 1`, `"trace_flags": 256`)},
		{"type trace_flags float", sub(cLog, `"trace_flags": 1`, `"trace_flags": 1.0`)},
		{"type event_name number", sub(cLog, `"event_name": ""`, `"event_name": 5`)},
		{"type event_name null", sub(cLog, `"event_name": ""`, `"event_name": null`)},
		{"type timestamps null", sub(sub(cLog, `"timestamp": "2025-12-01T19:00:12.800000Z"`, `"timestamp": null`), `"observed_timestamp": "2025-12-01T19:00:12.800100Z"`, `"observed_timestamp": null`)},
		{"type timestamps missing", `{"body": "b"}`},
		{"type resource missing log", `{"body": "b", "observed_timestamp": "2025-12-01T19:00:21.000050Z"}` + "\n" + `{"body": "c", "observed_timestamp": "2025-12-01T19:00:21.000050Z", "resource": {"attributes": null, "schema_url": ""}}` + "\n" + `{"body": "d", "observed_timestamp": "2025-12-01T19:00:21.000050Z", "resource": {}}`},
		{"type resource missing span", sub(cSpan, `, "resource": {"attributes": {"service.name": "nemo-gym/x", "process.pid": 42}, "schema_url": ""}`, ``)},
		{"type type error then syntax error", sub(cLog, `"severity_number": 17`, `"severity_number": "17"`) + `x`},
		{"type type error then syntax error inside", sub(cLog, `"severity_number": 17`, `"severity_number": "17"`)[:len(cLog)-1] + `, "x": tru}`},
		{"type type error then trailing", sub(cLog, `"severity_number": 17`, `"severity_number": "17"`) + ` x`},
		{"type point error then trailing", sub(cMetric, sumValue, `"value": "3",`) + ` x`},
		{"type semantic error then trailing", sub(cLog, `"severity_number": 17`, `"severity_number": 99`) + ` x`},

		// Python's tokens in every numeric position: a float where a float belongs, a float
		// where an integer does (so rejected), a type mismatch where a string does.
		{"nan value", sub(cMetric, gaugeValue, `"value": NaN,`)},
		{"inf value", sub(cMetric, gaugeValue, `"value": Infinity,`)},
		{"-inf value", sub(cMetric, gaugeValue, `"value": -Infinity,`)},
		{"nan sum", sub(cHist, `"sum": 40.0`, `"sum": NaN`)},
		{"inf min max", sub(cHist, `"min": 1.5, "max": 19.0`, `"min": Infinity, "max": -Infinity`)},
		{"inf bound", sub(cHist, `"explicit_bounds": [0.0, 5.0, 10.0]`, `"explicit_bounds": [-Infinity, 5.0, Infinity]`)},
		{"nan count", sub(cHist, `"count": 7`, `"count": NaN`)},
		{"inf bucket count", sub(cHist, `"bucket_counts": [0, 4, 2, 1]`, `"bucket_counts": [0, 4, Infinity, 1]`)},
		{"nan time", sub(cHist, `"time_unix_nano": 2`, `"time_unix_nano": NaN`)},
		{"nan start time", sub(cHist, `"start_time_unix_nano": 1`, `"start_time_unix_nano": -Infinity`)},
		{"nan scale", sub(cExp, `"scale": 3`, `"scale": NaN`)},
		{"nan offset", sub(cExp, `"offset": -9`, `"offset": NaN`)},
		{"nan zero_count", sub(cExp, `"zero_count": 0`, `"zero_count": NaN`)},
		{"nan flags", sub(cExp, `"flags": 0`, `"flags": NaN`)},
		{"nan exp min", sub(cExp, `"min": 0.125`, `"min": NaN`)},
		{"nan exemplar value", sub(cMetric, `"value": 1, "time_unix_nano": 1764615617000000000`, `"value": -Infinity, "time_unix_nano": 1764615617000000000`)},
		{"nan exemplar span_id", sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": NaN`)},
		{"nan temporality", sub(cMetric, `"aggregation_temporality": 2`, `"aggregation_temporality": NaN`)},
		{"nan monotonic", sub(cMetric, `"is_monotonic": true`, `"is_monotonic": NaN`)},
		{"nan severity", sub(cLog, `"severity_number": 17`, `"severity_number": NaN`)},
		{"nan dropped", sub(cLog, `"dropped_attributes": 0`, `"dropped_attributes": Infinity`)},
		{"nan dropped string", sub(cLog, `"dropped_attributes": 0`, `"dropped_attributes": "NaN"`)},
		{"nan trace_flags", sub(cLog, `"trace_flags": 1`, `"trace_flags": NaN`)},
		{"nan attribute", sub(cSpan, spanAttrs, `"attributes": {"a": NaN, "b": [Infinity, -Infinity], "c": "NaN", "d": "-Infinity"}`)},
		{"nan body", sub(cLog, logBody, `"body": NaN`)},
		{"nan body nested", sub(cLog, logBody, `"body": {"x": [NaN, {"y": -Infinity}]}`)},
		{"nan resource", spanRes(`{"a": NaN}`) + "\n" + spanRes(`{"a": NaN}`) + "\n" + spanRes(`{"a": "NaN"}`)},
		{"nan negated", sub(cMetric, gaugeValue, `"value": -NaN,`)},
		{"nan lower", sub(cMetric, gaugeValue, `"value": nan,`)},
		{"nan inf short", sub(cMetric, gaugeValue, `"value": Inf,`)},
		{"nan plus", sub(cMetric, gaugeValue, `"value": +Infinity,`)},
		{"nan metric name", sub(cMetric, `"name": "m.sum"`, `"name": NaN`)},
		{"nan schema_url", sub(cSpan, `"schema_url": ""`, `"schema_url": -Infinity`)},
		{"nan kind", sub(cSpan, `"kind": "SpanKind.CLIENT"`, `"kind": NaN`)},
		{"nan span event name", sub(cSpan, `"name": "exception"`, `"name": Infinity`)},
		{"nan in string", sub(cLog, logBody, `"body": "NaN Infinity -Infinity \" NaN"`)},

		// Numbers: an integer literal in int64 is an int, anything else a float (out of
		// range: an infinity or 0); ids are big ints, exactly.
		{"num max int64", sub(cMetric, sumValue, `"value": 9223372036854775807,`)},
		{"num min int64", sub(cMetric, sumValue, `"value": -9223372036854775808,`)},
		{"num beyond int64", sub(cMetric, sumValue, `"value": 9223372036854775808,`)},
		{"num below int64", sub(cMetric, sumValue, `"value": -9223372036854775809,`)},
		{"num huge", sub(cMetric, sumValue, `"value": 1`+strings.Repeat("0", 400)+`,`)},
		{"num 1e400", sub(cMetric, sumValue, `"value": 1e400,`)},
		{"num -1e-400", sub(cMetric, sumValue, `"value": -1e-400,`)},
		{"num -0", sub(cMetric, sumValue, `"value": -0,`)},
		{"num -0.0", sub(cMetric, sumValue, `"value": -0.0,`)},
		{"num 1E2", sub(cMetric, sumValue, `"value": 1E2,`)},
		{"num 17 digits", sub(cMetric, sumValue, `"value": 0.30000000000000004,`)},
		{"num leading zero", sub(cMetric, sumValue, `"value": 01,`)},
		{"num dot", sub(cMetric, sumValue, `"value": 1.,`)},
		{"num hex", sub(cMetric, sumValue, `"value": 0x10,`)},
		{"num time float", sub(cHist, `"time_unix_nano": 2`, `"time_unix_nano": 2.0`)},
		{"num time exp", sub(cHist, `"time_unix_nano": 2`, `"time_unix_nano": 2e3`)},
		{"num time negative", sub(cHist, `"time_unix_nano": 2`, `"time_unix_nano": -2`)},
		{"num time beyond int64", sub(cHist, `"time_unix_nano": 2`, `"time_unix_nano": 18446744073709551615`)},
		{"num count -0", sub(cHist, `"count": 7`, `"count": -0`)},
		{"num scale range", sub(cExp, `"scale": 3`, `"scale": 21`)},
		{"num scale -10", sub(cExp, `"scale": 3`, `"scale": -10`)},
		{"num offset range", sub(cExp, `"offset": -9`, `"offset": 2147483648`)},
		{"num offset min", sub(cExp, `"offset": -9`, `"offset": -2147483648`)},
		{"num flags max", sub(cExp, `"flags": 0`, `"flags": 4294967295`)},
		{"id max", sub(sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": 18446744073709551615`), `"trace_id": 100985939111033328018442752961257817910`, `"trace_id": 340282366920938463463374607431768211455`)},
		{"id beyond", sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": 18446744073709551616`)},
		{"id zero", sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": 0`)},
		{"id negative", sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": -1`)},
		{"id float", sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": 1.0`)},
		{"id exp", sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": 1e3`)},
		{"id string", sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": "6896022297620147025"`)},
		{"id string hex", sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": "0x5fb397be34d26b51"`)},
		{"id null", sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": null`)},
		{"id bool", sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": true`)},
		{"id leading zeros", sub(cMetric, `"span_id": 6896022297620147025`, `"span_id": "007"`)},
		{"attr numbers", sub(cSpan, spanAttrs, `"attributes": {"i": 9223372036854775807, "big": 12345678901234567890, "neg": -9223372036854775809, "f": 1.5, "e": 1e2, "z": -0, "zf": -0.0, "tiny": 5e-324, "over": 1e309}`)},
		{"attr values", sub(cSpan, spanAttrs, `"attributes": {"s": "x", "t": true, "f": false, "n": null, "l": [1, "a", null, [2]], "m": {"k": {"j": [true]}}, "e": [], "o": {}}`)},
		{"attr key order", sub(cSpan, spanAttrs, `"attributes": {"b": 1, "a": 2, "B": 3, "é": 4, "": 5, "a\u0000": 6}`)},
		{"resource literal", spanRes(`{"pid": 42}`) + "\n" + spanRes(`{"pid": 42.0}`) + "\n" + spanRes(`{"pid": 4.2e1}`) + "\n" + spanRes(`{"pid": 42}`) + "\n" + spanRes(`{"pid": "42"}`) + "\n" + spanRes(`{"pid": [42]}`) + "\n" + spanRes(`{"pid": null}`) + "\n" + spanRes(`{}`) + "\n" + spanRes(`null`)},
		{"resource key order", spanRes(`{"a": 1, "b": 2}`) + "\n" + spanRes(`{"b": 2, "a": 1}`) + "\n" + spanRes(`{"a": 1, "b": 2, "a": 1}`) + "\n" + spanRes(`{"a": {"x": 1, "y": 2}}`) + "\n" + spanRes(`{"a": {"y": 2, "x": 1}}`)},
		{"resource schema", sub(cLog, `"schema_url": ""`, `"schema_url": "https://x"`) + "\n" + cLog + "\n" + cLog},

		// Strings: escapes, surrogates (a pair is its rune, a lone one U+FFFD), and bytes
		// that are not UTF-8, each of which becomes U+FFFD as encoding/json reads them.
		{"str escapes", sub(cLog, logBody, `"body": "\"\\\/\b\f\n\r\t\u00e9\u20ac\u0000\u001f"`)},
		{"str pair", sub(cLog, logBody, `"body": "\ud83d\ude00"`)},
		{"str lone high", sub(cLog, logBody, `"body": "a\ud83dz"`)},
		{"str lone low", sub(cLog, logBody, `"body": "a\ude00z"`)},
		{"str high high", sub(cLog, logBody, `"body": "\ud83d\ud83d\ude00"`)},
		{"str high then escape", sub(cLog, logBody, `"body": "\ud83d\n"`)},
		{"str high upper hex", sub(cLog, logBody, `"body": "\uD83D\uDE00"`)},
		{"str nul mark", sub(cLog, logBody, `"body": "\u0000NaN"`)},
		{"str invalid utf8", sub(cLog, logBody, "\"body\": \"a\xffb\xc3\"")},
		{"str cut sequence", sub(cLog, logBody, "\"body\": \"\xe2\x82z\"")},
		{"str encoded surrogate", sub(cLog, logBody, "\"body\": \"\xed\xa0\x80\"")},
		{"str overlong", sub(cLog, logBody, "\"body\": \"\xc0\xaf\"")},
		{"str invalid utf8 with escape", sub(cLog, logBody, "\"body\": \"\xff\\n\\u00e9\xfe\"")},
		{"str invalid utf8 attr key", sub(cLog, logAttrs, "\"attributes\": {\"k\xff\": \"v\xfe\", \"k\\ufffd\": 1}")},
		{"str invalid utf8 resource", sub(cLog, `"service.name": "nemo-gym/x"`, "\"service.name\": \"a\xff\"") + "\n" + sub(cLog, `"service.name": "nemo-gym/x"`, "\"service.name\": \"a\\ufffd\"")},
		{"str invalid utf8 span name", sub(cSpan, `"name": "POST /verify"`, "\"name\": \"POST \xff\"")},
		{"str invalid utf8 kind", sub(cSpan, `"kind": "SpanKind.CLIENT"`, "\"kind\": \"SpanKind.CLIENT\xff\"")},
		{"str control", sub(cLog, logBody, "\"body\": \"a\x01b\"")},
		{"str tab", sub(cLog, logBody, "\"body\": \"a\tb\"")},
		{"str del", sub(cLog, logBody, "\"body\": \"a\x7fb\"")},
		{"str bad escape", sub(cLog, logBody, `"body": "\x"`)},
		{"str bad unicode escape", sub(cLog, logBody, `"body": "\u12g4"`)},
		{"str escaped kind", sub(cSpan, `"kind": "SpanKind.CLIENT"`, `"kind": "SpanKind.\u0043LIENT"`)},
		{"str escaped time", sub(cSpan, `"start_time": "2025-12-01T19:00:12.250000Z"`, `"start_time": "2025-12-01T19:00:12.250000\u005a"`)},
		{"str escaped hex id", sub(cSpan, `"parent_id": "0x5fb397be34d26b51"`, `"parent_id": "0x5fb397be34d26b5\u0031"`)},

		// Nesting: encoding/json took up to 10000 levels, gymjson takes MaxDepth.
		{"deep body 30", sub(cLog, logBody, `"body": `+nest(30, `1`))},
		{"deep body 63", sub(cLog, logBody, `"body": `+nest(62, `1`))},
		{"deep body 64", sub(cLog, logBody, `"body": `+nest(63, `1`))},
		{"deep unknown 64", sub(cLog, logBody, logBody+`, "x": `+nest(63, `1`))},
		{"deep body 65", sub(cLog, logBody, `"body": `+nest(64, `1`))},
		{"deep unknown 65", sub(cLog, logBody, logBody+`, "x": `+nest(64, `1`))},
		{"deep attributes 65", sub(cSpan, spanAttrs, `"attributes": {"a": `+nest(63, `1`)+`}`)},
		{"deep body 100", sub(cLog, logBody, `"body": `+nest(100, `1`))},
		{"deep body 10001", sub(cLog, logBody, `"body": `+nest(10001, `1`))},

		// After the object: white space is fine, anything else is invalid_json, except what
		// encoding/json's Decoder.More does not take for more (a '}' or a ']').
		{"trailing space", cLog + "   \t"},
		{"trailing word", cLog + " x"},
		{"trailing object", cLog + "{}"},
		{"trailing comma", cLog + ","},
		{"trailing brace", cLog + "}"},
		{"trailing bracket then more", cLog + " ] anything"},
		{"trailing nul", cLog + "\x00"},
		{"cut", cLog[:len(cLog)-1]},
		{"cut in string", cLog[:20]},
		{"cut after key", `{"body"`},
		{"empty metrics", `{"resource_metrics": []}`},
		{"null metrics", `{"resource_metrics": null}`},
		{"empty resource metrics", `{"resource_metrics": [{}]}`},
		{"null resource metrics element", `{"resource_metrics": [null]}`},
		{"empty scope metrics", `{"resource_metrics": [{"resource": {}, "scope_metrics": [{}, null]}]}`},
		{"empty metric", `{"resource_metrics": [{"resource": {}, "scope_metrics": [{"metrics": [{}]}]}]}`},
		{"empty data", `{"resource_metrics": [{"resource": {}, "scope_metrics": [{"metrics": [{"name": "x", "data": {}}]}]}]}`},
		{"null data", `{"resource_metrics": [{"resource": {}, "scope_metrics": [{"metrics": [{"name": "x", "data": null}]}]}]}`},
		{"empty scope", `{"resource_metrics": [{"resource": {"attributes": {}}, "scope_metrics": [{"scope": {}, "metrics": []}]}]}`},
		{"scope version null", sub(cMetric, `"version": "0.3.0"`, `"version": null`)},
		{"scope attributes", sub(cMetric, `"schema_url": "", "attributes": null}`, `"schema_url": "", "attributes": {"a": [1]}}`)},
		{"scope type", sub(cMetric, `"scope": {"name": "nemo.lens", "version": "0.3.0", "schema_url": "", "attributes": null}`, `"scope": 1`)},
		{"empty span", `{"name": "", "context": {}}`},
		{"empty log", `{"body": null, "timestamp": ""}`},
		{"ws", "{\"body\"\t:\r\"b\" ,\t\"observed_timestamp\" : \"2025-12-01T19:00:21.000050Z\" }"},
		{"syntax missing colon", `{"body" "b"}`},
		{"syntax trailing comma", `{"body": "b", }`},
		{"syntax single quotes", `{"body": 'b'}`},
		{"syntax bare key", `{"body": "b", NaN: 1}`},
		{"syntax bare key attributes", sub(cLog, logAttrs, `"attributes": {NaN: 1}`)},
		{"syntax literal", `{"body": tru, "observed_timestamp": "2025-12-01T19:00:21.000050Z"}`},
	}
	return cs
}

// corpusChanged names the cases whose outcome the gymjson decoder changed on purpose, with
// what the encoding/json decoder gave and why; their lines in the golden file are what the
// gymjson decoder gives (the file's history shows the change).
var corpusChanged = map[string]string{
	// The encoding/json decoder rewrote Python's tokens into strings "\u0000NaN" before it
	// decoded a record: a token where a string belongs was that string, a string
	// "\u0000NaN" was the token, and a token as a key was a key.
	"nan metric name":            "accepted, named \x00NaN: now a number where a string belongs (invalid_record)",
	"nan schema_url":             "accepted, with the schema URL \x00-Infinity: now invalid_record",
	"nan span event name":        "accepted, named \x00Infinity: now invalid_record",
	"str nul mark":               "the body was the double NaN: now the string it is",
	"syntax bare key":            "invalid_record (a key \x00NaN, then no timestamp): a bare NaN key is not JSON (invalid_json)",
	"syntax bare key attributes": "accepted, with an attribute \x00NaN: now invalid_json",
	// encoding/json nests up to 10000 levels; the one scanner's limit is gymjson.MaxDepth.
	"deep body 65":       "accepted: now invalid_json, deeper than gymjson.MaxDepth",
	"deep unknown 65":    "accepted: now invalid_json, deeper than gymjson.MaxDepth",
	"deep attributes 65": "accepted: now invalid_json, deeper than gymjson.MaxDepth",
	"deep body 100":      "accepted: now invalid_json, deeper than gymjson.MaxDepth",
}

func TestDecodeCorpus(t *testing.T) {
	const path = "testdata/decode-corpus.txt"
	var out strings.Builder
	for _, c := range decodeCorpus() {
		fmt.Fprintf(&out, "== %s\n%s", c.name, corpusResult(t, c.in))
	}
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(out.String()), 0o600))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	wantCases, gotCases := splitCases(string(want)), splitCases(out.String())
	for _, c := range decodeCorpus() {
		if gotCases[c.name] != wantCases[c.name] {
			t.Errorf("%s:\n got: %s\nwant: %s", c.name, gotCases[c.name], wantCases[c.name])
		}
	}
	require.Len(t, wantCases, len(decodeCorpus()), "every case in the golden file, once")
	for name := range corpusChanged {
		require.Contains(t, wantCases, name)
	}
}

func splitCases(s string) map[string]string {
	m := map[string]string{}
	for _, part := range strings.Split(s, "== ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		m[name] = body
	}
	return m
}

// corpusResult runs in through a stream and describes what came out.
func corpusResult(t testing.TB, in string) string {
	c, tot, _ := feed(t, []byte(in+"\n"), 1<<20)
	var b strings.Builder
	var reasons []string
	for r, n := range tot.rejected {
		reasons = append(reasons, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(reasons)
	fmt.Fprintf(&b, "accepted=%d skipped=%d rejected=%v\n", tot.accepted, tot.skipped, reasons)
	writeBatches(t, &b, "metrics", c.metrics, (&pmetric.JSONMarshaler{}).MarshalMetrics, (&pmetric.ProtoMarshaler{}).MarshalMetrics)
	writeBatches(t, &b, "traces", c.traces, (&ptrace.JSONMarshaler{}).MarshalTraces, (&ptrace.ProtoMarshaler{}).MarshalTraces)
	writeBatches(t, &b, "logs", c.logs, (&plog.JSONMarshaler{}).MarshalLogs, (&plog.ProtoMarshaler{}).MarshalLogs)
	return b.String()
}

// writeBatches writes each batch of one signal as its JSON and the hash of its protobuf.
func writeBatches[T any](t testing.TB, b *strings.Builder, signal string, batches []T, asJSON, asProto func(T) ([]byte, error)) {
	for _, x := range batches {
		j, err := asJSON(x)
		require.NoError(t, err)
		p, err := asProto(x)
		require.NoError(t, err)
		fmt.Fprintf(b, "%s %s\nproto %x\n", signal, j, sha256.Sum256(p))
	}
}
