package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// fuzzMax is max_line_bytes in the fuzz target: small, so that the limit is reached.
const fuzzMax = 4096

var reasonSet = map[string]bool{
	ReasonTooLong: true, ReasonInvalidUTF8: true, ReasonInvalidJSON: true, ReasonWrongType: true,
	ReasonMissingField: true, ReasonOutOfRange: true, ReasonInvalidValue: true, ReasonTooDeep: true,
	ReasonTooManyAttributes: true,
}

// FuzzDecode checks that Decode never panics, that it is deterministic (decoding a line again,
// on the same decoder or a new one, gives the same Event), that what it accepts obeys
// docs/receiver.md, and that it agrees with encoding/json on JSON syntax and on string values.
func FuzzDecode(f *testing.F) {
	for _, l := range append(append([]string{}, validMix...), gymTodayMix...) {
		f.Add([]byte(l))
	}
	for _, l := range []string{
		``, ` `, `{}`, `[]`, `{"event":"resource","attributes":{"a":"\ud800","b":1.0,"c":true}}`,
		`{"event":"rollout.completed","outcome":"scored","dispatch_name":"m","reward":-Infinity}`,
		`{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"0200":1,"200":2}}`,
		`{"event":"gc.pause","generation":1e0,"duration_ms":1e400}`,
		`{"event":"x","a":[[[[[[[[[[]]]]]]]]]]}`,
	} {
		f.Add([]byte(l))
	}
	d := NewDecoder(fuzzMax)
	var ev, ev2, ev3 Event
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := bytes.Clone(line)
		err := d.Decode(line, &ev)
		if !bytes.Equal(line, orig) {
			t.Fatal("Decode modified its input")
		}
		if err != nil && !errors.Is(err, ErrBlank) {
			r := Reason(err)
			if !reasonSet[r] {
				t.Fatalf("Reason %q of %v not in the fixed set", r, err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
		}
		fuzzSyntax(t, line, err)
		if err != nil {
			return
		}
		want := eventString(&ev)
		if err := d.Decode(line, &ev2); err != nil {
			t.Fatalf("second decode failed: %v", err)
		}
		if got := eventString(&ev2); got != want {
			t.Fatalf("second decode differs\n got %s\nwant %s", got, want)
		}
		if err := NewDecoder(fuzzMax).Decode(line, &ev3); err != nil {
			t.Fatalf("fresh decoder failed: %v", err)
		}
		if got := eventString(&ev3); got != want {
			t.Fatalf("fresh decoder differs\n got %s\nwant %s", got, want)
		}
		// Strings are valid until the next Decode: decode once more before reading them.
		_ = d.Decode(line, &ev)
		fuzzInvariants(t, &ev)
		fuzzAgainstEncodingJSON(t, line, &ev)
	})
}

// fuzzSyntax compares the decoder's view of JSON syntax with encoding/json's.
func fuzzSyntax(t *testing.T, line []byte, err error) {
	if len(line) > fuzzMax || !utf8.Valid(line) || errors.Is(err, ErrBlank) {
		return
	}
	r := Reason(err)
	valid := json.Valid(line)
	if valid && (r == ReasonInvalidJSON) {
		t.Fatalf("encoding/json accepts the line, Decode says %v", err)
	}
	if !valid && r != ReasonInvalidJSON && r != ReasonTooDeep &&
		!bytes.Contains(line, []byte("NaN")) && !bytes.Contains(line, []byte("Infinity")) {
		t.Fatalf("encoding/json rejects the line, Decode says %v", err)
	}
}

// fuzzInvariants checks what an accepted Event must satisfy.
func fuzzInvariants(t *testing.T, ev *Event) {
	in := func(v []byte, vals []string) bool {
		for _, s := range vals {
			if string(v) == s {
				return true
			}
		}
		return false
	}
	checkUTF8 := func(name string, v []byte) {
		if !utf8.Valid(v) {
			t.Fatalf("%s is not valid UTF-8: %q", name, v)
		}
	}
	for _, v := range [][]byte{ev.DispatchName, ev.FailureClass, ev.FailureKind, ev.FailureType, ev.Provider, ev.Stage, ev.ServerName, ev.ServerType, ev.Loop} {
		checkUTF8("string field", v)
	}
	for _, v := range ev.Flagged {
		checkUTF8("flagged check", v)
	}
	dur := func() {
		if !(ev.DurationMS >= 0) || math.IsInf(ev.DurationMS, 0) {
			t.Fatalf("duration %v", ev.DurationMS)
		}
	}
	nonEmpty := func(name string, v []byte) {
		if len(v) == 0 {
			t.Fatalf("%s empty", name)
		}
	}
	switch ev.Type {
	case EventResource:
		if len(ev.Attrs) > schema.ResourceMaxAttributes {
			t.Fatalf("%d attributes", len(ev.Attrs))
		}
		for i, a := range ev.Attrs {
			if len(a.Key) == 0 || len(a.Key) > schema.ResourceMaxKeyBytes || len(a.Str) > schema.DefaultStringMaxBytes {
				t.Fatalf("attribute %q: key or value too long", a.Key)
			}
			checkUTF8("attribute key", a.Key)
			checkUTF8("attribute value", a.Str)
			if a.Kind < ValueString || a.Kind > ValueBool {
				t.Fatalf("attribute kind %d", a.Kind)
			}
			for j := range i {
				if bytes.Equal(ev.Attrs[j].Key, a.Key) {
					t.Fatalf("duplicate attribute %q", a.Key)
				}
			}
		}
	case EventRolloutCompleted:
		if !in(ev.Outcome, schema.Attr(schema.AttrNemoGymRolloutOutcome).Values) {
			t.Fatalf("outcome %q", ev.Outcome)
		}
		nonEmpty("dispatch_name", ev.DispatchName)
	case EventRolloutHealth:
		if !in(ev.Outcome, schema.Get(schema.GymRolloutHealthVerdictTotal).AttrValues(schema.AttrNemoGymRolloutOutcome)) ||
			!in(ev.Verdict, schema.Attr(schema.AttrNemoGymHealthVerdict).Values) {
			t.Fatalf("outcome %q verdict %q", ev.Outcome, ev.Verdict)
		}
	case EventRolloutSize:
		if ev.InputItems < 0 || ev.OutputItems < 0 || ev.Turns < 0 || ev.ToolCalls < 0 {
			t.Fatal("negative size")
		}
	case EventSandboxActive, EventSandboxCreateRetry:
		nonEmpty("provider", ev.Provider)
	case EventSandboxStartup, EventSandboxExec:
		nonEmpty("provider", ev.Provider)
		dur()
	case EventServerStartupStage:
		nonEmpty("stage", ev.Stage)
		nonEmpty("server_name", ev.ServerName)
		dur()
	case EventHTTPPoolQueue:
		if !in(ev.QueueConstraint, schema.Attr(schema.AttrNemoGymHttpConnectionPoolQueueConstraint).Values) ||
			!in(ev.QueueOutcome, schema.Attr(schema.AttrNemoGymHttpConnectionPoolQueueOutcome).Values) {
			t.Fatal("queue enum")
		}
		dur()
	case EventHTTPPoolConnect:
		if !in(ev.ConnectOutcome, schema.Attr(schema.AttrNemoGymHttpConnectionPoolConnectOutcome).Values) {
			t.Fatal("connect outcome")
		}
		dur()
	case EventHTTPPoolConnects:
		for _, c := range ev.Counts {
			if len(c.Name) == 0 || c.Count < 0 {
				t.Fatalf("count %q %d", c.Name, c.Count)
			}
			checkUTF8("server name", c.Name)
		}
	case EventEventLoopLag:
		nonEmpty("loop", ev.Loop)
		dur()
	case EventEventLoopTasks:
		if ev.Tasks < 0 {
			t.Fatal("tasks")
		}
	case EventGCPause:
		if ev.Generation < 0 || ev.Generation > 2 {
			t.Fatalf("generation %d", ev.Generation)
		}
		dur()
	case EventGCStats:
		for _, a := range [][3]int64{ev.GCCollections, ev.GCCollected, ev.GCUncollectable, ev.GCCount} {
			for _, v := range a {
				if v < 0 {
					t.Fatal("gc stat < 0")
				}
			}
		}
	case EventServerRequests:
		st := schema.Attr(schema.AttrHttpResponseStatusCode)
		for _, r := range ev.Responses {
			if r.Code < st.Min || r.Code > st.Max || r.Count < 0 {
				t.Fatalf("response %d %d", r.Code, r.Count)
			}
		}
		for _, c := range ev.Cancelled {
			checkUTF8("route", c.Route)
			if c.Count < 0 {
				t.Fatal("cancelled count")
			}
		}
		if ev.InFlight < 0 || ev.UnhandledExceptions < 0 || ev.OutboundInFlight < 0 {
			t.Fatal("negative request count")
		}
	case EventDriverCounts:
		if ev.Offered < 0 || ev.Resident < 0 || ev.Active < 0 {
			t.Fatal("negative driver count")
		}
	case EventDriverAdmission, EventDriverMaterialize:
		dur()
	case EventDriverOutputWrite:
		dur()
		if ev.Bytes < 0 {
			t.Fatal("bytes")
		}
	}
}

// fuzzAgainstEncodingJSON compares the decoded strings with encoding/json's reading of the
// line (which also resolves lone surrogates to U+FFFD and lets the last duplicate key win).
func fuzzAgainstEncodingJSON(t *testing.T, line []byte, ev *Event) {
	if bytes.Contains(line, []byte("NaN")) || bytes.Contains(line, []byte("Infinity")) {
		return
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if ev.Type != EventUnknown && m["event"] != ev.Type.String() {
		t.Fatalf("event %q, encoding/json %q", ev.Type, m["event"])
	}
	if ev.Type == EventUnknown {
		if s, _ := m["event"].(string); s != "" {
			for _, n := range EventNames {
				if n == s {
					t.Fatalf("known event %q decoded as unknown", s)
				}
			}
		}
		return
	}
	fields := map[string][]byte{
		"dispatch_name": ev.DispatchName, "failure_class": ev.FailureClass, "failure_kind": ev.FailureKind,
		"failure_type": ev.FailureType, "provider": ev.Provider, "stage": ev.Stage, "server_name": ev.ServerName,
		"server_type": ev.ServerType, "loop": ev.Loop,
	}
	for k, v := range fields {
		if v == nil {
			continue
		}
		if s, ok := m[k].(string); !ok || s != string(v) {
			t.Fatalf("%s = %q, encoding/json %#v", k, v, m[k])
		}
	}
	if ev.Type == EventResource {
		attrs, _ := m["attributes"].(map[string]any)
		if len(attrs) != len(ev.Attrs) {
			t.Fatalf("%d attributes, encoding/json %d", len(ev.Attrs), len(attrs))
		}
		for _, a := range ev.Attrs {
			v, ok := attrs[string(a.Key)]
			if !ok {
				t.Fatalf("attribute %q unknown to encoding/json", a.Key)
			}
			switch a.Kind {
			case ValueString:
				if s, _ := v.(string); !strings.HasPrefix(s, string(a.Str)) {
					t.Fatalf("attribute %q = %q, encoding/json %q", a.Key, a.Str, s)
				}
			case ValueBool:
				if v != a.Bool {
					t.Fatalf("attribute %q = %v, encoding/json %v", a.Key, a.Bool, v)
				}
			}
		}
	}
	if ev.Type == EventHTTPPoolConnects {
		counts, _ := m["counts"].(map[string]any)
		if len(counts) != len(ev.Counts) {
			t.Fatalf("%d counts, encoding/json %d", len(ev.Counts), len(counts))
		}
		for _, c := range ev.Counts {
			n, _ := counts[string(c.Name)].(json.Number)
			if f, err := n.Float64(); err != nil || f != float64(c.Count) {
				t.Fatalf("count %q = %d, encoding/json %v", c.Name, c.Count, counts[string(c.Name)])
			}
		}
	}
}
