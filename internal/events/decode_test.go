package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// ---- helpers ----

func b(s string) []byte { return []byte(s) }

// eventString renders the non-zero fields of ev, []byte as quoted strings, for diffs and
// comparisons (NaN compares equal to NaN there).
func eventString(ev *Event) string {
	var sb strings.Builder
	v := reflect.ValueOf(ev).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := v.Field(i)
		if f.IsZero() || (f.Kind() == reflect.Slice && f.Len() == 0 && f.Type().Elem().Kind() != reflect.Uint8) {
			continue
		}
		fmt.Fprintf(&sb, "%s=%s ", t.Field(i).Name, valueString(f))
	}
	return strings.TrimSpace(sb.String())
}

func valueString(f reflect.Value) string {
	switch f.Kind() {
	case reflect.Slice:
		if f.Type().Elem().Kind() == reflect.Uint8 {
			if f.IsNil() {
				return "nil"
			}
			return strconv.Quote(string(f.Bytes()))
		}
		parts := make([]string, f.Len())
		for i := range parts {
			parts[i] = valueString(f.Index(i))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case reflect.Struct:
		var parts []string
		for i := 0; i < f.NumField(); i++ {
			if f.Field(i).IsZero() {
				continue
			}
			parts = append(parts, f.Type().Field(i).Name+":"+valueString(f.Field(i)))
		}
		return "{" + strings.Join(parts, " ") + "}"
	case reflect.Float64:
		return strconv.FormatFloat(f.Float(), 'g', -1, 64)
	default:
		return fmt.Sprint(f.Interface())
	}
}

func decodeOne(t *testing.T, line string) (*Event, error) {
	t.Helper()
	var ev Event
	err := NewDecoder(0).Decode([]byte(line), &ev)
	return &ev, err
}

// ---- valid lines ----

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Event
	}{
		{
			name: "resource",
			line: `{"event":"resource","attributes":{"service.name":"nemo-gym/math","service.instance.id":"r1-rank0","process.pid":4242,"pid2":4242.0,"debug":true,"off":false,"neg":-7}}`,
			want: Event{Type: EventResource, Attrs: []ResourceAttr{
				{Key: b("service.name"), Kind: ValueString, Str: b("nemo-gym/math")},
				{Key: b("service.instance.id"), Kind: ValueString, Str: b("r1-rank0")},
				{Key: b("process.pid"), Kind: ValueInt, Int: 4242},
				{Key: b("pid2"), Kind: ValueInt, Int: 4242},
				{Key: b("debug"), Kind: ValueBool, Bool: true},
				{Key: b("off"), Kind: ValueBool},
				{Key: b("neg"), Kind: ValueInt, Int: -7},
			}},
		},
		{
			name: "resource empty attributes",
			line: `{"event":"resource","attributes":{}}`,
			want: Event{Type: EventResource},
		},
		{
			name: "resource duplicate attribute keys: last wins, first place",
			line: `{"event":"resource","attributes":{"a":"1","b":2,"a":null,"a":true}}`,
			want: Event{Type: EventResource, Attrs: []ResourceAttr{
				{Key: b("a"), Kind: ValueBool, Bool: true},
				{Key: b("b"), Kind: ValueInt, Int: 2},
			}},
		},
		{
			name: "resource escaped key and value",
			line: `{"event":"resource","attributes":{"service\u002ename":"a\tb\u00e9"}}`,
			want: Event{Type: EventResource, Attrs: []ResourceAttr{
				{Key: b("service.name"), Kind: ValueString, Str: b("a\tbé")},
			}},
		},
		{
			name: "rollout.completed failed with everything",
			line: `{"event":"rollout.completed","outcome":"failed","dispatch_name":"math","failure_class":"agent_request_failed","failure_kind":"transport_timeout","failure_type":"TimeoutError","failure_reason":"read timed out after 300s","reward":0.5,"masked":true,"ts":1712345678.123}`,
			want: Event{Type: EventRolloutCompleted, Outcome: b("failed"), DispatchName: b("math"),
				FailureClass: b("agent_request_failed"), FailureKind: b("transport_timeout"), FailureType: b("TimeoutError"),
				Reward: 0.5, HasReward: true, Masked: true},
		},
		{
			name: "rollout.completed scored minimal",
			line: `{"event":"rollout.completed","outcome":"scored","dispatch_name":"math"}`,
			want: Event{Type: EventRolloutCompleted, Outcome: b("scored"), DispatchName: b("math")},
		},
		{
			name: "rollout.completed nulls are absent",
			line: `{"event":"rollout.completed","outcome":"omitted","dispatch_name":"m","failure_class":null,"failure_kind":null,"failure_type":null,"reward":null,"masked":null}`,
			want: Event{Type: EventRolloutCompleted, Outcome: b("omitted"), DispatchName: b("m")},
		},
		{
			name: "rollout.completed empty failure fields",
			line: `{"event":"rollout.completed","outcome":"failed","dispatch_name":"m","failure_class":"","failure_kind":"","failure_type":""}`,
			want: Event{Type: EventRolloutCompleted, Outcome: b("failed"), DispatchName: b("m"), FailureClass: b(""), FailureKind: b(""), FailureType: b("")},
		},
		{
			name: "rollout.completed NaN reward",
			line: `{"event":"rollout.completed","outcome":"scored","dispatch_name":"m","reward":NaN}`,
			want: Event{Type: EventRolloutCompleted, Outcome: b("scored"), DispatchName: b("m"), Reward: math.NaN(), HasReward: true},
		},
		{
			name: "rollout.completed Infinity reward",
			line: `{"event":"rollout.completed","outcome":"scored","dispatch_name":"m","reward":Infinity}`,
			want: Event{Type: EventRolloutCompleted, Outcome: b("scored"), DispatchName: b("m"), Reward: math.Inf(1), HasReward: true},
		},
		{
			name: "rollout.completed -Infinity reward",
			line: `{"event":"rollout.completed","outcome":"scored","dispatch_name":"m","reward":-Infinity}`,
			want: Event{Type: EventRolloutCompleted, Outcome: b("scored"), DispatchName: b("m"), Reward: math.Inf(-1), HasReward: true},
		},
		{
			name: "rollout.completed 1e400 reward is +Inf",
			line: `{"event":"rollout.completed","outcome":"scored","dispatch_name":"m","reward":1e400}`,
			want: Event{Type: EventRolloutCompleted, Outcome: b("scored"), DispatchName: b("m"), Reward: math.Inf(1), HasReward: true},
		},
		{
			name: "rollout.completed -1e400 reward is -Inf",
			line: `{"event":"rollout.completed","outcome":"scored","dispatch_name":"m","reward":-1e400}`,
			want: Event{Type: EventRolloutCompleted, Outcome: b("scored"), DispatchName: b("m"), Reward: math.Inf(-1), HasReward: true},
		},
		{
			name: "rollout.reward",
			line: `{"event":"rollout.reward","reward":0.25,"dispatch_name":"math","ts":1712345678.1}`,
			want: Event{Type: EventRolloutReward, DispatchName: b("math"), Reward: 0.25, HasReward: true},
		},
		{
			name: "rollout.reward masked",
			line: `{"event":"rollout.reward","reward":1,"dispatch_name":"math","masked":true}`,
			want: Event{Type: EventRolloutReward, DispatchName: b("math"), Reward: 1, HasReward: true, Masked: true},
		},
		{
			name: "rollout.reward masked null is false",
			line: `{"event":"rollout.reward","reward":-2.5,"dispatch_name":"m","masked":null}`,
			want: Event{Type: EventRolloutReward, DispatchName: b("m"), Reward: -2.5, HasReward: true},
		},
		{
			name: "rollout.reward NaN",
			line: `{"event":"rollout.reward","reward":NaN,"dispatch_name":"m"}`,
			want: Event{Type: EventRolloutReward, DispatchName: b("m"), Reward: math.NaN(), HasReward: true},
		},
		{
			name: "rollout.reward Infinity",
			line: `{"event":"rollout.reward","reward":Infinity,"dispatch_name":"m"}`,
			want: Event{Type: EventRolloutReward, DispatchName: b("m"), Reward: math.Inf(1), HasReward: true},
		},
		{
			name: "rollout.reward -Infinity",
			line: `{"event":"rollout.reward","reward":-Infinity,"dispatch_name":"m"}`,
			want: Event{Type: EventRolloutReward, DispatchName: b("m"), Reward: math.Inf(-1), HasReward: true},
		},
		{
			name: "rollout.reward ignores outcome and failure fields",
			line: `{"event":"rollout.reward","outcome":"failed","failure_kind":"k","reward":0,"dispatch_name":"m"}`,
			want: Event{Type: EventRolloutReward, DispatchName: b("m"), Reward: 0, HasReward: true},
		},
		{
			name: "rollout.completed escaped enum",
			line: `{"event":"rollout\u002ecompleted","outcome":"sc\u006fred","dispatch_name":"m"}`,
			want: Event{Type: EventRolloutCompleted, Outcome: b("scored"), DispatchName: b("m")},
		},
		{
			name: "rollout.health",
			line: `{"event":"rollout.health","verdict":"unhealthy","outcome":"failed","flagged_checks":["agent_turn_hollow","x",""]}`,
			want: Event{Type: EventRolloutHealth, Verdict: b("unhealthy"), Outcome: b("failed"), Flagged: [][]byte{b("agent_turn_hollow"), b("x"), b("")}},
		},
		{
			name: "rollout.health no flagged",
			line: `{"event":"rollout.health","verdict":"healthy","outcome":"scored","flagged_checks":null}`,
			want: Event{Type: EventRolloutHealth, Verdict: b("healthy"), Outcome: b("scored")},
		},
		{
			name: "rollout.health empty flagged",
			line: `{"event":"rollout.health","verdict":"unobserved","outcome":"scored","flagged_checks":[]}`,
			want: Event{Type: EventRolloutHealth, Verdict: b("unobserved"), Outcome: b("scored")},
		},
		{
			name: "rollout.size all",
			line: `{"event":"rollout.size","input_items":3,"output_items":4.0,"turns":0,"tool_calls":7e1}`,
			want: Event{Type: EventRolloutSize, SizeFields: HasInputItems | HasOutputItems | HasTurns | HasToolCalls, InputItems: 3, OutputItems: 4, ToolCalls: 70},
		},
		{
			name: "rollout.size some",
			line: `{"event":"rollout.size","turns":2,"tool_calls":null}`,
			want: Event{Type: EventRolloutSize, SizeFields: HasTurns, Turns: 2},
		},
		{
			name: "rollout.size none",
			line: `{"event":"rollout.size"}`,
			want: Event{Type: EventRolloutSize},
		},
		{
			name: "sandbox.active",
			line: `{"event":"sandbox.active","provider":"docker","delta":-1}`,
			want: Event{Type: EventSandboxActive, Provider: b("docker"), Delta: -1},
		},
		{
			name: "sandbox.active zero delta",
			line: `{"event":"sandbox.active","provider":"docker","delta":0}`,
			want: Event{Type: EventSandboxActive, Provider: b("docker")},
		},
		{
			name: "sandbox.startup",
			line: `{"event":"sandbox.startup","provider":"modal","duration_ms":1234.5}`,
			want: Event{Type: EventSandboxStartup, Provider: b("modal"), DurationMS: 1234.5},
		},
		{
			name: "sandbox.exec",
			line: `{"event":"sandbox.exec","provider":"modal","duration_ms":0}`,
			want: Event{Type: EventSandboxExec, Provider: b("modal")},
		},
		{
			name: "sandbox.create_retry",
			line: `{"event":"sandbox.create_retry","provider":"modal"}`,
			want: Event{Type: EventSandboxCreateRetry, Provider: b("modal")},
		},
		{
			name: "server.startup_stage",
			line: `{"event":"server.startup_stage","stage":"import","server_name":"math","server_type":"resources_servers","worker":true,"duration_ms":12}`,
			want: Event{Type: EventServerStartupStage, Stage: b("import"), ServerName: b("math"), ServerType: b("resources_servers"), Worker: true, DurationMS: 12},
		},
		{
			name: "server.startup_stage minimal",
			line: `{"event":"server.startup_stage","stage":"import","server_name":"math","duration_ms":1e2}`,
			want: Event{Type: EventServerStartupStage, Stage: b("import"), ServerName: b("math"), DurationMS: 100},
		},
		{
			name: "server.startup_stage unknown server_type passes",
			line: `{"event":"server.startup_stage","stage":"s","server_name":"n","server_type":"whatever","worker":false,"duration_ms":1}`,
			want: Event{Type: EventServerStartupStage, Stage: b("s"), ServerName: b("n"), ServerType: b("whatever"), DurationMS: 1},
		},
		{
			name: "http.pool.queue",
			line: `{"event":"http.pool.queue","queue_constraint":"per_host","queue_outcome":"abandoned","server_name":"policy","duration_ms":0.25}`,
			want: Event{Type: EventHTTPPoolQueue, QueueConstraint: b("per_host"), QueueOutcome: b("abandoned"), ServerName: b("policy"), DurationMS: 0.25},
		},
		{
			name: "http.pool.connect",
			line: `{"event":"http.pool.connect","outcome":"failed","server_name":"policy","duration_ms":3}`,
			want: Event{Type: EventHTTPPoolConnect, ConnectOutcome: b("failed"), ServerName: b("policy"), DurationMS: 3},
		},
		{
			name: "http.pool.connects",
			line: `{"event":"http.pool.connects","counts":{"policy":12,"judge":0,"policy":13}}`,
			want: Event{Type: EventHTTPPoolConnects, Counts: []NamedCount{{Name: b("policy"), Count: 13}, {Name: b("judge")}}},
		},
		{
			name: "event_loop.lag",
			line: `{"event":"event_loop.lag","loop":"driver","lag_ms":3.2}`,
			want: Event{Type: EventEventLoopLag, Loop: b("driver"), DurationMS: 3.2},
		},
		{
			name: "event_loop.tasks",
			line: `{"event":"event_loop.tasks","loop":"driver","tasks":17}`,
			want: Event{Type: EventEventLoopTasks, Loop: b("driver"), Tasks: 17},
		},
		{
			name: "gc.pause",
			line: `{"event":"gc.pause","generation":2.0,"duration_ms":0.5}`,
			want: Event{Type: EventGCPause, Generation: 2, DurationMS: 0.5},
		},
		{
			name: "gc.stats",
			line: `{"event":"gc.stats","collections":[10,2,1],"collected":[100,20,3],"uncollectable":[0,0,0],"count":[700,8,9]}`,
			want: Event{Type: EventGCStats, GCCollections: [3]int64{10, 2, 1}, GCCollected: [3]int64{100, 20, 3}, GCCount: [3]int64{700, 8, 9}},
		},
		{
			name: "server.requests",
			line: `{"event":"server.requests","in_flight":3,"unhandled_exceptions":1,"responses":{"200":10,"0200":2,"404":1,"599":0},"cancelled":[{"route":"/run","response_started":false,"count":2,"extra":[1]},{"count":1,"route":"bad route","response_started":true}],"outbound_in_flight":4}`,
			want: Event{Type: EventServerRequests, InFlight: 3, UnhandledExceptions: 1,
				Responses:        []StatusCount{{Code: 200, Count: 10}, {Code: 200, Count: 2}, {Code: 404, Count: 1}, {Code: 599}},
				Cancelled:        []CancelledCount{{Route: b("/run"), Count: 2}, {Route: b("bad route"), ResponseStarted: true, Count: 1}},
				OutboundInFlight: 4, HasOutboundInFlight: true},
		},
		{
			name: "server.requests minimal",
			line: `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{},"cancelled":null,"outbound_in_flight":null}`,
			want: Event{Type: EventServerRequests},
		},
		{
			name: "server.requests duplicate response key and escaped digits",
			line: `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"200":1,"\u0032\u0030\u0030":5,"100":1}}`,
			want: Event{Type: EventServerRequests, Responses: []StatusCount{{Code: 200, Count: 5}, {Code: 100, Count: 1}}},
		},
		{
			name: "driver.counts",
			line: `{"event":"driver.counts","offered":10,"resident":4,"active":2}`,
			want: Event{Type: EventDriverCounts, Offered: 10, Resident: 4, Active: 2},
		},
		{
			name: "driver.admission",
			line: `{"event":"driver.admission","duration_ms":5}`,
			want: Event{Type: EventDriverAdmission, DurationMS: 5},
		},
		{
			name: "driver.output_write",
			line: `{"event":"driver.output_write","duration_ms":5.5,"bytes":123456}`,
			want: Event{Type: EventDriverOutputWrite, DurationMS: 5.5, Bytes: 123456},
		},
		{
			name: "driver.materialize",
			line: `{"event":"driver.materialize","duration_ms":1e-3}`,
			want: Event{Type: EventDriverMaterialize, DurationMS: 0.001},
		},
		{
			name: "unknown event",
			line: `{"event":"something.new","x":[1,{"y":null}]}`,
			want: Event{Type: EventUnknown},
		},
		{
			name: "empty event is unknown",
			line: `{"event":""}`,
			want: Event{Type: EventUnknown},
		},
		{
			name: "unknown event skips field checks",
			line: `{"event":"Sandbox.Active","provider":3}`,
			want: Event{Type: EventUnknown},
		},
		{
			name: "whitespace everywhere and trailing CR",
			line: " \t{ \"event\" : \"sandbox.active\" ,\r\n \"provider\" :\"d\" , \"delta\": 1 } \t\r",
			want: Event{Type: EventSandboxActive, Provider: b("d"), Delta: 1},
		},
		{
			name: "fields of other events are ignored",
			line: `{"event":"sandbox.create_retry","provider":"p","duration_ms":"bad","outcome":7}`,
			want: Event{Type: EventSandboxCreateRetry, Provider: b("p")},
		},
		{
			name: "ts of any type",
			line: `{"ts":{"a":[true,false,null]},"event":"sandbox.create_retry","provider":"p"}`,
			want: Event{Type: EventSandboxCreateRetry, Provider: b("p")},
		},
		{
			name: "duplicate keys: last wins",
			line: `{"event":"gc.pause","provider":1,"event":"sandbox.create_retry","provider":"a","provider":"b"}`,
			want: Event{Type: EventSandboxCreateRetry, Provider: b("b")},
		},
		{
			name: "duplicate key: null last means absent",
			line: `{"event":"rollout.completed","outcome":"scored","dispatch_name":"m","reward":1,"reward":null}`,
			want: Event{Type: EventRolloutCompleted, Outcome: b("scored"), DispatchName: b("m")},
		},
		{
			name: "duplicate key: earlier wrong value is overridden",
			line: `{"event":"sandbox.active","provider":"p","delta":"x","delta":2}`,
			want: Event{Type: EventSandboxActive, Provider: b("p"), Delta: 2},
		},
		{
			name: "escaped key",
			line: `{"\u0065vent":"sandbox.create_retry","pro\u0076ider":"p"}`,
			want: Event{Type: EventSandboxCreateRetry, Provider: b("p")},
		},
		{
			name: "int64 bounds",
			line: `{"event":"sandbox.active","provider":"p","delta":-9223372036854775808}`,
			want: Event{Type: EventSandboxActive, Provider: b("p"), Delta: math.MinInt64},
		},
		{
			name: "int64 max",
			line: `{"event":"sandbox.active","provider":"p","delta":9223372036854775807}`,
			want: Event{Type: EventSandboxActive, Provider: b("p"), Delta: math.MaxInt64},
		},
		{
			name: "integral exponent forms",
			line: `{"event":"sandbox.active","provider":"p","delta":-12.500e1}`,
			want: Event{Type: EventSandboxActive, Provider: b("p"), Delta: -125},
		},
		{
			name: "integral with many zeros",
			line: `{"event":"sandbox.active","provider":"p","delta":100000000000000000000000000e-25}`,
			want: Event{Type: EventSandboxActive, Provider: b("p"), Delta: 10},
		},
		{
			name: "zero with huge exponent",
			line: `{"event":"sandbox.active","provider":"p","delta":-0.000e999999999999999999}`,
			want: Event{Type: EventSandboxActive, Provider: b("p")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := decodeOne(t, tt.line)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got, want := eventString(ev), eventString(&tt.want); got != want {
				t.Errorf("\ngot  %s\nwant %s", got, want)
			}
		})
	}
}

func TestDecodeNilWhenAbsent(t *testing.T) {
	ev, err := decodeOne(t, `{"event":"server.startup_stage","stage":"s","server_name":"n","duration_ms":1}`)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ServerType != nil {
		t.Errorf("ServerType = %q, want nil", ev.ServerType)
	}
	ev, err = decodeOne(t, `{"event":"rollout.completed","outcome":"failed","dispatch_name":"m"}`)
	if err != nil {
		t.Fatal(err)
	}
	if ev.FailureClass != nil || ev.FailureKind != nil || ev.FailureType != nil {
		t.Errorf("failure fields not nil: %s", eventString(ev))
	}
	ev, err = decodeOne(t, `{"event":"rollout.completed","outcome":"failed","dispatch_name":"m","failure_kind":""}`)
	if err != nil {
		t.Fatal(err)
	}
	if ev.FailureKind == nil {
		t.Errorf("present empty failure_kind decoded as nil")
	}
}

// ---- rejected lines ----

func TestDecodeRejected(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		reason string
		msg    string // exact message, or a prefix when it ends with " ..."
	}{
		// JSON syntax
		{"not json", `hello`, ReasonInvalidJSON, `invalid JSON at byte 0: want a value, got 'h'`},
		{"trailing garbage", `{"event":"x"} x`, ReasonInvalidJSON, `invalid JSON at byte 14: want the end of the line after the object, got 'x'`},
		{"two objects", `{"event":"x"}{"event":"x"}`, ReasonInvalidJSON, `invalid JSON at byte 13: ...`},
		{"unterminated object", `{"event":"x"`, ReasonInvalidJSON, `invalid JSON at byte 12: want ',' or '}' after an object member, got end of line`},
		{"unterminated string", `{"event":"x`, ReasonInvalidJSON, `invalid JSON at byte 11: unterminated string, got end of line`},
		{"trailing comma", `{"event":"x",}`, ReasonInvalidJSON, `invalid JSON at byte 13: want a string key, got '}'`},
		{"single quotes", `{'event':'x'}`, ReasonInvalidJSON, `invalid JSON at byte 1: want a string key, got '\''`},
		{"bad escape", `{"event":"a\x"}`, ReasonInvalidJSON, `invalid JSON at byte 12: invalid escape, got 'x'`},
		{"short unicode escape", `{"event":"\u12"}`, ReasonInvalidJSON, `invalid JSON at byte 14: want 4 hex digits after \u, got '"'`},
		{"raw control character", "{\"event\":\"a\tb\"}", ReasonInvalidJSON, `invalid JSON at byte 11: control character in string, got '\t'`},
		{"leading zero", `{"event":"x","a":01}`, ReasonInvalidJSON, `invalid JSON at byte 18: want ',' or '}' after an object member, got '1'`},
		{"plus sign", `{"event":"x","a":+1}`, ReasonInvalidJSON, `invalid JSON at byte 17: want a value, got '+'`},
		{"bare dot", `{"event":"x","a":1.}`, ReasonInvalidJSON, `invalid JSON at byte 19: want a digit after the decimal point, got '}'`},
		{"bad exponent", `{"event":"x","a":1e}`, ReasonInvalidJSON, `invalid JSON at byte 19: want a digit in the exponent, got '}'`},
		{"nan lower case", `{"event":"x","a":nan}`, ReasonInvalidJSON, `invalid JSON at byte 18: want null, got 'a'`},
		{"+Infinity", `{"event":"x","a":+Infinity}`, ReasonInvalidJSON, `invalid JSON at byte 17: ...`},
		{"-NaN", `{"event":"x","a":-NaN}`, ReasonInvalidJSON, `invalid JSON at byte 18: want a digit, got 'N'`},
		{"truncated Infinity", `{"event":"x","a":Inf}`, ReasonInvalidJSON, `invalid JSON at byte 20: want Infinity, got '}'`},
		{"bad literal", `{"event":"x","a":tru}`, ReasonInvalidJSON, `invalid JSON at byte 20: want true, got '}'`},
		{"missing colon", `{"event" "x"}`, ReasonInvalidJSON, `invalid JSON at byte 9: want ':' after an object key, got '"'`},
		{"bad nested", `{"event":"x","a":{"b":[1,2,}]}`, ReasonInvalidJSON, `invalid JSON at byte 27: want a value, got '}'`},
		{"nested unterminated", `{"event":"x","a":[1`, ReasonInvalidJSON, `invalid JSON at byte 19: ...`},
		{"line is not an object", `["event","x"]`, ReasonWrongType, `line is an array, not a JSON object`},
		{"line is a string", `"x"`, ReasonWrongType, `line is a string, not a JSON object`},
		{"top-level invalid non-object", `[1,`, ReasonInvalidJSON, `invalid JSON at byte 3: ...`},

		// event
		{"no event", `{"provider":"x"}`, ReasonMissingField, `missing required field "event"`},
		{"empty object", `{}`, ReasonMissingField, `missing required field "event"`},
		{"null event", `{"event":null}`, ReasonMissingField, `missing required field "event"`},
		{"event last null", `{"event":"sandbox.create_retry","provider":"p","event":null}`, ReasonMissingField, `missing required field "event"`},
		{"event number", `{"event":3}`, ReasonWrongType, `field "event": want a string, got 3`},

		// names
		{"missing provider", `{"event":"sandbox.create_retry"}`, ReasonMissingField, `missing required field "provider"`},
		{"null provider", `{"event":"sandbox.create_retry","provider":null}`, ReasonMissingField, `missing required field "provider"`},
		{"empty provider", `{"event":"sandbox.create_retry","provider":""}`, ReasonInvalidValue, `field "provider": want a non-empty string, got ""`},
		{"number provider", `{"event":"sandbox.create_retry","provider":5}`, ReasonWrongType, `field "provider": want a non-empty string, got 5`},
		{"object dispatch_name", `{"event":"rollout.completed","outcome":"scored","dispatch_name":{}}`, ReasonWrongType, `field "dispatch_name": want a non-empty string, got an object`},
		{"empty stage", `{"event":"server.startup_stage","stage":"","server_name":"n","duration_ms":1}`, ReasonInvalidValue, `field "stage": want a non-empty string, got ""`},
		{"missing server_name", `{"event":"server.startup_stage","stage":"s","duration_ms":1}`, ReasonMissingField, `missing required field "server_name"`},
		{"empty loop", `{"event":"event_loop.lag","loop":"","lag_ms":1}`, ReasonInvalidValue, `field "loop": want a non-empty string, got ""`},

		// enumerations
		{"bad outcome", `{"event":"rollout.completed","outcome":"x","dispatch_name":"m"}`, ReasonInvalidValue, `field "outcome": "x" is not one of scored, failed, omitted`},
		{"outcome case", `{"event":"rollout.completed","outcome":"Scored","dispatch_name":"m"}`, ReasonInvalidValue, `field "outcome": "Scored" is not one of scored, failed, omitted`},
		// An older Gym's success is an OTLP sender's spelling (read as scored by gymattrs): an
		// events-v1 line names the documented values.
		{"older spelling", `{"event":"rollout.completed","outcome":"success","dispatch_name":"m"}`, ReasonInvalidValue, `field "outcome": "success" is not one of scored, failed, omitted`},
		{"missing outcome", `{"event":"rollout.completed","dispatch_name":"m"}`, ReasonMissingField, `missing required field "outcome"`},
		{"outcome number", `{"event":"rollout.completed","outcome":1,"dispatch_name":"m"}`, ReasonWrongType, `field "outcome": want one of scored, failed, omitted, got 1`},
		{"health omitted outcome", `{"event":"rollout.health","verdict":"healthy","outcome":"omitted"}`, ReasonInvalidValue, `field "outcome": "omitted" is not one of scored, failed`},
		{"bad verdict", `{"event":"rollout.health","verdict":"sick","outcome":"scored"}`, ReasonInvalidValue, `field "verdict": "sick" is not one of healthy, unhealthy, unobserved`},
		{"missing verdict", `{"event":"rollout.health","outcome":"scored"}`, ReasonMissingField, `missing required field "verdict"`},
		{"bad queue_constraint", `{"event":"http.pool.queue","queue_constraint":"all","queue_outcome":"ok","server_name":"s","duration_ms":1}`, ReasonInvalidValue, `field "queue_constraint": "all" is not one of total, per_host, unknown`},
		// none is what Gym's older code writes by OTLP (an otlp_value): no events-v1 value.
		{"otlp-only queue_constraint", `{"event":"http.pool.queue","queue_constraint":"none","queue_outcome":"ok","server_name":"s","duration_ms":1}`, ReasonInvalidValue, `field "queue_constraint": "none" is not one of total, per_host, unknown`},
		{"bad queue_outcome", `{"event":"http.pool.queue","queue_constraint":"total","queue_outcome":"failed","server_name":"s","duration_ms":1}`, ReasonInvalidValue, `field "queue_outcome": "failed" is not one of ok, abandoned`},
		{"bad connect outcome", `{"event":"http.pool.connect","outcome":"scored","server_name":"s","duration_ms":1}`, ReasonInvalidValue, `field "outcome": "scored" is not one of ok, failed`},
		{"bad generation", `{"event":"gc.pause","generation":3,"duration_ms":1}`, ReasonInvalidValue, `field "generation": 3 is not one of 0, 1, 2`},
		{"negative generation", `{"event":"gc.pause","generation":-1,"duration_ms":1}`, ReasonInvalidValue, `field "generation": -1 is not one of 0, 1, 2`},
		{"fractional generation", `{"event":"gc.pause","generation":1.5,"duration_ms":1}`, ReasonWrongType, `field "generation": want an integer, got 1.5`},
		{"string generation", `{"event":"gc.pause","generation":"1","duration_ms":1}`, ReasonWrongType, `field "generation": want an integer, got "1"`},
		{"long enum value is cut in message", `{"event":"rollout.completed","outcome":"` + strings.Repeat("é", 50) + `","dispatch_name":"m"}`, ReasonInvalidValue, `field "outcome": "` + strings.Repeat("é", 32) + `"... is not one of scored, failed, omitted`},

		// durations
		{"negative duration", `{"event":"sandbox.exec","provider":"p","duration_ms":-1}`, ReasonOutOfRange, `field "duration_ms": want a finite number >= 0, got -1`},
		{"NaN duration", `{"event":"sandbox.exec","provider":"p","duration_ms":NaN}`, ReasonOutOfRange, `field "duration_ms": want a finite number >= 0, got NaN`},
		{"Infinity duration", `{"event":"sandbox.exec","provider":"p","duration_ms":Infinity}`, ReasonOutOfRange, `field "duration_ms": want a finite number >= 0, got Infinity`},
		{"1e400 duration", `{"event":"sandbox.exec","provider":"p","duration_ms":1e400}`, ReasonOutOfRange, `field "duration_ms": want a finite number >= 0, got 1e400`},
		{"string duration", `{"event":"sandbox.exec","provider":"p","duration_ms":"5"}`, ReasonWrongType, `field "duration_ms": want a finite number >= 0, got "5"`},
		{"missing duration", `{"event":"driver.admission"}`, ReasonMissingField, `missing required field "duration_ms"`},
		{"negative lag", `{"event":"event_loop.lag","loop":"l","lag_ms":-0.5}`, ReasonOutOfRange, `field "lag_ms": want a finite number >= 0, got -0.5`},
		{"missing lag", `{"event":"event_loop.lag","loop":"l","duration_ms":1}`, ReasonMissingField, `missing required field "lag_ms"`},
		{"long number cut in message", `{"event":"driver.admission","duration_ms":-` + strings.Repeat("1", 60) + `}`, ReasonOutOfRange, `field "duration_ms": want a finite number >= 0, got -` + strings.Repeat("1", 39) + `...`},

		// integers
		{"fractional delta", `{"event":"sandbox.active","provider":"p","delta":3.5}`, ReasonWrongType, `field "delta": want an integer, got 3.5`},
		{"delta 1e30", `{"event":"sandbox.active","provider":"p","delta":1e30}`, ReasonOutOfRange, `field "delta": want an integer within int64, got 1e30`},
		{"delta beyond int64", `{"event":"sandbox.active","provider":"p","delta":9223372036854775808}`, ReasonOutOfRange, `field "delta": want an integer within int64, got 9223372036854775808`},
		{"delta below int64", `{"event":"sandbox.active","provider":"p","delta":-9223372036854775809}`, ReasonOutOfRange, `field "delta": want an integer within int64, got -9223372036854775809`},
		{"delta NaN", `{"event":"sandbox.active","provider":"p","delta":NaN}`, ReasonWrongType, `field "delta": want an integer, got NaN`},
		{"delta Infinity", `{"event":"sandbox.active","provider":"p","delta":Infinity}`, ReasonOutOfRange, `field "delta": want an integer within int64, got Infinity`},
		{"delta tiny fraction", `{"event":"sandbox.active","provider":"p","delta":1.0000000000000000000001}`, ReasonWrongType, `field "delta": want an integer, got 1.0000000000000000000001`},
		{"delta bool", `{"event":"sandbox.active","provider":"p","delta":true}`, ReasonWrongType, `field "delta": want an integer, got true`},
		{"missing delta", `{"event":"sandbox.active","provider":"p"}`, ReasonMissingField, `missing required field "delta"`},
		{"negative tasks", `{"event":"event_loop.tasks","loop":"l","tasks":-1}`, ReasonOutOfRange, `field "tasks": want an integer >= 0, got -1`},
		{"negative bytes", `{"event":"driver.output_write","duration_ms":1,"bytes":-5}`, ReasonOutOfRange, `field "bytes": want an integer >= 0, got -5`},
		{"missing bytes", `{"event":"driver.output_write","duration_ms":1}`, ReasonMissingField, `missing required field "bytes"`},
		{"negative size", `{"event":"rollout.size","turns":-1}`, ReasonOutOfRange, `field "turns": want an integer >= 0, got -1`},
		{"fractional size", `{"event":"rollout.size","input_items":1.5}`, ReasonWrongType, `field "input_items": want an integer >= 0, got 1.5`},
		{"string size", `{"event":"rollout.size","tool_calls":"2"}`, ReasonWrongType, `field "tool_calls": want an integer >= 0, got "2"`},
		{"missing offered", `{"event":"driver.counts","resident":1,"active":1}`, ReasonMissingField, `missing required field "offered"`},
		{"negative active", `{"event":"driver.counts","offered":1,"resident":1,"active":-1}`, ReasonOutOfRange, `field "active": want an integer >= 0, got -1`},

		// booleans and optional strings
		{"masked string", `{"event":"rollout.completed","outcome":"scored","dispatch_name":"m","masked":"true"}`, ReasonWrongType, `field "masked": want a boolean, got "true"`},
		{"masked number", `{"event":"rollout.completed","outcome":"scored","dispatch_name":"m","masked":1}`, ReasonWrongType, `field "masked": want a boolean, got 1`},
		{"worker string", `{"event":"server.startup_stage","stage":"s","server_name":"n","worker":"no","duration_ms":1}`, ReasonWrongType, `field "worker": want a boolean, got "no"`},
		{"server_type number", `{"event":"server.startup_stage","stage":"s","server_name":"n","server_type":1,"duration_ms":1}`, ReasonWrongType, `field "server_type": want a string, got 1`},
		{"failure_kind array", `{"event":"rollout.completed","outcome":"failed","dispatch_name":"m","failure_kind":["a"]}`, ReasonWrongType, `field "failure_kind": want a string, got an array`},
		{"failure_class bool", `{"event":"rollout.completed","outcome":"failed","dispatch_name":"m","failure_class":false}`, ReasonWrongType, `field "failure_class": want a string, got false`},
		{"failure_type number", `{"event":"rollout.completed","outcome":"failed","dispatch_name":"m","failure_type":1}`, ReasonWrongType, `field "failure_type": want a string, got 1`},
		{"reward string", `{"event":"rollout.completed","outcome":"scored","dispatch_name":"m","reward":"0.5"}`, ReasonWrongType, `field "reward": want a number, got "0.5"`},
		{"rollout.reward missing reward", `{"event":"rollout.reward","dispatch_name":"m"}`, ReasonMissingField, `missing required field "reward"`},
		{"rollout.reward null reward", `{"event":"rollout.reward","reward":null,"dispatch_name":"m"}`, ReasonMissingField, `missing required field "reward"`},
		{"rollout.reward string reward", `{"event":"rollout.reward","reward":"1","dispatch_name":"m"}`, ReasonWrongType, `field "reward": want a number, got "1"`},
		{"rollout.reward missing dispatch_name", `{"event":"rollout.reward","reward":1}`, ReasonMissingField, `missing required field "dispatch_name"`},
		{"rollout.reward empty dispatch_name", `{"event":"rollout.reward","reward":1,"dispatch_name":""}`, ReasonInvalidValue, `field "dispatch_name": want a non-empty string, got ""`},
		{"rollout.reward masked string", `{"event":"rollout.reward","reward":1,"dispatch_name":"m","masked":"yes"}`, ReasonWrongType, `field "masked": want a boolean, got "yes"`},

		// flagged_checks
		{"flagged not array", `{"event":"rollout.health","verdict":"healthy","outcome":"scored","flagged_checks":"x"}`, ReasonWrongType, `field "flagged_checks": want an array of strings, got "x"`},
		{"flagged number element", `{"event":"rollout.health","verdict":"healthy","outcome":"scored","flagged_checks":["a",1]}`, ReasonWrongType, `field "flagged_checks[1]": want a string, got 1`},
		{"flagged null element", `{"event":"rollout.health","verdict":"healthy","outcome":"scored","flagged_checks":[null]}`, ReasonWrongType, `field "flagged_checks[0]": want a string, got null`},

		// counts
		{"counts missing", `{"event":"http.pool.connects"}`, ReasonMissingField, `missing required field "counts"`},
		{"counts array", `{"event":"http.pool.connects","counts":[1]}`, ReasonWrongType, `field "counts": want an object of server name to count, got an array`},
		{"counts null value", `{"event":"http.pool.connects","counts":{"m":null}}`, ReasonWrongType, `field "counts": key "m": want an integer >= 0, got null`},
		{"counts empty name", `{"event":"http.pool.connects","counts":{"a":1,"":2}}`, ReasonInvalidValue, `field "counts": empty server name`},
		{"counts negative", `{"event":"http.pool.connects","counts":{"a":-1}}`, ReasonOutOfRange, `field "counts": key "a": want an integer >= 0, got -1`},
		{"counts fraction", `{"event":"http.pool.connects","counts":{"a":0.5}}`, ReasonWrongType, `field "counts": key "a": want an integer >= 0, got 0.5`},

		// responses
		{"responses missing", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0}`, ReasonMissingField, `missing required field "responses"`},
		{"responses non-digit key", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"2xx":1}}`, ReasonInvalidValue, `field "responses": key "2xx" is not a status code (want ASCII digits)`},
		{"responses signed key", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"+200":1}}`, ReasonInvalidValue, `field "responses": key "+200" is not a status code (want ASCII digits)`},
		{"responses empty key", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"":1}}`, ReasonInvalidValue, `field "responses": key "" is not a status code`},
		{"responses 600", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"600":1}}`, ReasonOutOfRange, `field "responses": status code "600" is outside 100..599`},
		{"responses 99", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"099":1}}`, ReasonOutOfRange, `field "responses": status code "099" is outside 100..599`},
		{"responses huge", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"99999999999999999999999":1}}`, ReasonOutOfRange, `field "responses": status code "99999999999999999999999" is outside 100..599`},
		{"responses bad key overridden later still rejects", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"abc":1,"200":1}}`, ReasonInvalidValue, `field "responses": key "abc" is not a status code (want ASCII digits)`},
		{"responses null count", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"200":null}}`, ReasonWrongType, `field "responses": key "200": want an integer >= 0, got null`},
		{"responses negative count", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"200":-2}}`, ReasonOutOfRange, `field "responses": key "200": want an integer >= 0, got -2`},
		{"in_flight negative", `{"event":"server.requests","in_flight":-1,"unhandled_exceptions":0,"responses":{}}`, ReasonOutOfRange, `field "in_flight": want an integer >= 0, got -1`},
		{"missing unhandled", `{"event":"server.requests","in_flight":1,"responses":{}}`, ReasonMissingField, `missing required field "unhandled_exceptions"`},
		{"outbound string", `{"event":"server.requests","in_flight":1,"unhandled_exceptions":0,"responses":{},"outbound_in_flight":"1"}`, ReasonWrongType, `field "outbound_in_flight": want an integer >= 0, got "1"`},

		// cancelled
		{"cancelled object", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{},"cancelled":{}}`, ReasonWrongType, `field "cancelled": want an array of {route, response_started, count}, got an object`},
		{"cancelled element not object", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{},"cancelled":[null]}`, ReasonWrongType, `field "cancelled[0]": want an object, got null`},
		{"cancelled missing route", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{},"cancelled":[{"response_started":true,"count":1}]}`, ReasonMissingField, `missing required field "cancelled[0].route"`},
		{"cancelled null route", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{},"cancelled":[{"route":"/a","response_started":true,"count":1},{"route":null,"response_started":true,"count":1}]}`, ReasonMissingField, `missing required field "cancelled[1].route"`},
		{"cancelled route number", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{},"cancelled":[{"route":1,"response_started":true,"count":1}]}`, ReasonWrongType, `field "cancelled[0].route": want a string, got 1`},
		{"cancelled missing started", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{},"cancelled":[{"route":"/a","count":1}]}`, ReasonMissingField, `missing required field "cancelled[0].response_started"`},
		{"cancelled started string", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{},"cancelled":[{"route":"/a","response_started":"yes","count":1}]}`, ReasonWrongType, `field "cancelled[0].response_started": want a boolean, got "yes"`},
		{"cancelled missing count", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{},"cancelled":[{"route":"/a","response_started":false}]}`, ReasonMissingField, `missing required field "cancelled[0].count"`},
		{"cancelled negative count", `{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{},"cancelled":[{"route":"/a","response_started":false,"count":-3}]}`, ReasonOutOfRange, `field "cancelled[0].count": want an integer >= 0, got -3`},

		// gc.stats
		{"gc.stats missing", `{"event":"gc.stats","collections":[1,2,3],"collected":[1,2,3],"uncollectable":[0,0,0]}`, ReasonMissingField, `missing required field "count"`},
		{"gc.stats two elements", `{"event":"gc.stats","collections":[1,2],"collected":[1,2,3],"uncollectable":[0,0,0],"count":[1,2,3]}`, ReasonWrongType, `field "collections": want an array of 3 integers >= 0, got 2 elements`},
		{"gc.stats four elements", `{"event":"gc.stats","collections":[1,2,3,4],"collected":[1,2,3],"uncollectable":[0,0,0],"count":[1,2,3]}`, ReasonWrongType, `field "collections": want an array of 3 integers >= 0, got 4 elements`},
		{"gc.stats negative", `{"event":"gc.stats","collections":[1,2,3],"collected":[1,-2,3],"uncollectable":[0,0,0],"count":[1,2,3]}`, ReasonOutOfRange, `field "collected[1]": want an integer >= 0, got -2`},
		{"gc.stats null element", `{"event":"gc.stats","collections":[1,2,3],"collected":[1,2,3],"uncollectable":[0,null,0],"count":[1,2,3]}`, ReasonWrongType, `field "uncollectable[1]": want an integer >= 0, got null`},
		{"gc.stats not array", `{"event":"gc.stats","collections":{},"collected":[1,2,3],"uncollectable":[0,0,0],"count":[1,2,3]}`, ReasonWrongType, `field "collections": want an array of 3 integers >= 0, got an object`},

		// resource
		{"resource no attributes", `{"event":"resource"}`, ReasonMissingField, `missing required field "attributes"`},
		{"resource null attributes", `{"event":"resource","attributes":null}`, ReasonMissingField, `missing required field "attributes"`},
		{"resource attributes array", `{"event":"resource","attributes":[]}`, ReasonWrongType, `field "attributes": want an object, got an array`},
		{"resource null value", `{"event":"resource","attributes":{"a":null}}`, ReasonWrongType, `field "attributes": key "a": want a string, an integer or a boolean, got null`},
		{"resource array value", `{"event":"resource","attributes":{"a":[1]}}`, ReasonWrongType, `field "attributes": key "a": want a string, an integer or a boolean, got an array`},
		{"resource float value", `{"event":"resource","attributes":{"a":1.5}}`, ReasonWrongType, `field "attributes": key "a": want an integer, got 1.5`},
		{"resource huge int", `{"event":"resource","attributes":{"a":1e19}}`, ReasonOutOfRange, `field "attributes": key "a": want an integer within int64, got 1e19`},
		{"resource empty key", `{"event":"resource","attributes":{"":"x"}}`, ReasonInvalidValue, `field "attributes": empty key`},
		{"resource long key", `{"event":"resource","attributes":{"` + strings.Repeat("k", 129) + `":"x"}}`, ReasonInvalidValue, `field "attributes": key "` + strings.Repeat("k", 64) + `"... is 129 bytes, over 128`},
		{"resource 33 attributes", `{"event":"resource","attributes":{` + attrsJSON(33) + `}}`, ReasonTooManyAttributes, `field "attributes": more than 32 attributes`},

		// limits
		{"too deep", `{"event":"x","a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, ReasonTooDeep, `nesting deeper than 64`},
		{"too deep objects", `{"event":"x","a":` + strings.Repeat(`{"a":`, 64) + `1` + strings.Repeat("}", 64) + `}`, ReasonTooDeep, `nesting deeper than 64`},
		{"very deep", `{"event":"x","a":` + strings.Repeat("[", 60000), ReasonTooDeep, `nesting deeper than 64`},
		{"too deep top-level array", strings.Repeat("[", 65) + strings.Repeat("]", 65), ReasonTooDeep, `nesting deeper than 64`},
		{"invalid UTF-8", "{\"event\":\"a\xffb\"}", ReasonInvalidUTF8, `not valid UTF-8 (at byte 11)`},
		{"UTF-8 surrogate bytes", "{\"event\":\"\xed\xa0\x80\"}", ReasonInvalidUTF8, `not valid UTF-8 (at byte 10)`},
		{"invalid UTF-8 outside strings", "{\"event\":\"x\"}\xc0", ReasonInvalidUTF8, `not valid UTF-8 (at byte 13)`},
		{"too long", `{"event":"x","pad":"` + strings.Repeat("a", 70000) + `"}`, ReasonTooLong, `line is 70022 bytes, over max_line_bytes 65536`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := decodeOne(t, tt.line)
			if err == nil {
				t.Fatalf("Decode accepted the line: %s", eventString(ev))
			}
			if Reason(err) != tt.reason {
				t.Errorf("Reason = %q, want %q (%v)", Reason(err), tt.reason, err)
			}
			if prefix, ok := strings.CutSuffix(tt.msg, " ..."); ok {
				if !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("error %q, want prefix %q", err, prefix)
				}
			} else if err.Error() != tt.msg {
				t.Errorf("error\n got %q\nwant %q", err, tt.msg)
			}
		})
	}
}

func attrsJSON(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"k%d":%d`, i, i)
	}
	return strings.Join(parts, ",")
}

func TestDecodeTypeOfRejectedLine(t *testing.T) {
	d := NewDecoder(100)
	var ev Event
	cases := []struct {
		line string
		want EventType
	}{
		{`{"event":"resource","attributes":{"a":null}}`, EventResource},
		{`{"event":"resource","attributes":{"a":`, EventResource},
		{`{"event":"sandbox.active","provider":1}`, EventSandboxActive},
		{`{"attributes":{},"event":`, EventUnknown},
		{`{"event":3}`, EventUnknown},
		{`{"event":"resource","attributes":{"a":"` + strings.Repeat("x", 100) + `"}}`, EventUnknown}, // too long
		{"{\"event\":\"resource\",\"attributes\":{\"a\":\"\xff\"}}", EventUnknown},                   // not UTF-8
	}
	for _, c := range cases {
		if err := d.Decode([]byte(c.line), &ev); err == nil {
			t.Fatalf("%s: accepted", c.line)
		}
		if ev.Type != c.want {
			t.Errorf("%s: Type = %v, want %v", c.line, ev.Type, c.want)
		}
	}
}

func TestDecodeAttributes(t *testing.T) {
	// 32 attributes are fine, duplicates do not count twice.
	line := `{"event":"resource","attributes":{` + attrsJSON(32) + `,"k0":"again","k31":true}}`
	ev, err := decodeOne(t, line)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Attrs) != 32 {
		t.Fatalf("%d attributes, want 32", len(ev.Attrs))
	}
	if a := ev.Attrs[0]; string(a.Key) != "k0" || a.Kind != ValueString || string(a.Str) != "again" {
		t.Errorf("Attrs[0] = %s", valueString(reflect.ValueOf(a)))
	}
	if a := ev.Attrs[31]; string(a.Key) != "k31" || a.Kind != ValueBool || !a.Bool {
		t.Errorf("Attrs[31] = %s", valueString(reflect.ValueOf(a)))
	}

	// A key of 128 bytes is fine.
	key := strings.Repeat("k", 128)
	ev, err = decodeOne(t, `{"event":"resource","attributes":{"`+key+`":1}}`)
	if err != nil || string(ev.Attrs[0].Key) != key {
		t.Fatalf("128-byte key: %v", err)
	}

	// String values are cut at 256 bytes on a rune boundary.
	for _, tc := range []struct{ value, want string }{
		{strings.Repeat("a", 256), strings.Repeat("a", 256)},
		{strings.Repeat("a", 300), strings.Repeat("a", 256)},
		{strings.Repeat("a", 255) + "é", strings.Repeat("a", 255)}, // é would end at byte 257
		{strings.Repeat("a", 254) + "é", strings.Repeat("a", 254) + "é"},
		{strings.Repeat("a", 254) + "😀", strings.Repeat("a", 254)}, // 4-byte rune
		{strings.Repeat("\\u00e9", 200), strings.Repeat("é", 128)}, // escaped
	} {
		ev, err := decodeOne(t, `{"event":"resource","attributes":{"v":"`+tc.value+`"}}`)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(ev.Attrs[0].Str); got != tc.want {
			t.Errorf("value of %d bytes cut to %d bytes, want %d", len(tc.value), len(got), len(tc.want))
		}
	}
}

// ---- strings ----

func TestDecodeEscapes(t *testing.T) {
	cases := []struct{ json, want string }{
		{`plain`, "plain"},
		{`a\"b`, `a"b`},
		{`a\\b`, `a\b`},
		{`a\/b`, `a/b`},
		{`\b\f\n\r\t`, "\b\f\n\r\t"},
		{`\u0041\u00e9\u4e2d`, "Aé中"},
		{`\uD83D\uDE00`, "😀"}, // surrogate pair, upper case hex
		{`\ud83d\ude00x`, "😀x"},
		{`\ud800`, "\uFFFD"},              // lone high surrogate
		{`\udc00`, "\uFFFD"},              // lone low surrogate
		{`\ud800x`, "\uFFFDx"},            // high then plain text
		{`\ud800\u0041`, "\uFFFDA"},       // high then a non-surrogate escape
		{`\ud800\ud800\udc00`, "\uFFFD𐀀"}, // high, then a valid pair
		{`\udc00\ud800`, "\uFFFD\uFFFD"},  // reversed pair
		{`\ud800\n`, "\uFFFD\n"},          // high then another escape
		{`\u0000`, "\x00"},                // NUL
		{`é中😀`, "é中😀"},                    // raw UTF-8
		{`\u00e9` + strings.Repeat("x", 20), "é" + strings.Repeat("x", 20)},
		{strings.Repeat(`\\`, 40), strings.Repeat(`\`, 40)},
	}
	for _, c := range cases {
		line := `{"event":"sandbox.create_retry","provider":"` + c.json + `"}`
		ev, err := decodeOne(t, line)
		if err != nil {
			t.Errorf("%s: %v", c.json, err)
			continue
		}
		if string(ev.Provider) != c.want {
			t.Errorf("%s: got %q, want %q", c.json, ev.Provider, c.want)
		}
		// encoding/json agrees (it decodes lone surrogates to U+FFFD too).
		var v struct{ Provider string }
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		if v.Provider != c.want {
			t.Errorf("%s: encoding/json gives %q, test wants %q", c.json, v.Provider, c.want)
		}
	}
}

func TestDecodeStringsDoNotAlias(t *testing.T) {
	// Escaped strings live in the scratch buffer: appending to one must not clobber another.
	d := NewDecoder(0)
	var ev Event
	line := `{"event":"server.startup_stage","stage":"s\u0031","server_name":"n\u0032","server_type":"t\u0033","duration_ms":1}`
	if err := d.Decode([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	_ = append(ev.Stage, "XXXXXXXX"...)
	if string(ev.Stage) != "s1" || string(ev.ServerName) != "n2" || string(ev.ServerType) != "t3" {
		t.Errorf("got %q %q %q", ev.Stage, ev.ServerName, ev.ServerType)
	}
	// The line is never written to.
	orig := []byte(line)
	in := bytes.Clone(orig)
	_ = d.Decode(in, &ev)
	if !bytes.Equal(in, orig) {
		t.Error("Decode modified its input")
	}
}

// ---- blank lines ----

func TestDecodeBlank(t *testing.T) {
	for _, line := range []string{"", " ", "\t", "\r", " \t\r ", "\n"} {
		_, err := decodeOne(t, line)
		if !errors.Is(err, ErrBlank) {
			t.Errorf("%q: got %v, want ErrBlank", line, err)
		}
		if Reason(err) != "" {
			t.Errorf("Reason(ErrBlank) = %q", Reason(err))
		}
	}
	if Reason(nil) != "" {
		t.Error("Reason(nil) not empty")
	}
	// A long blank line is still too long.
	if _, err := decodeOne(t, strings.Repeat(" ", 70000)); Reason(err) != ReasonTooLong {
		t.Errorf("long blank line: %v", err)
	}
}

// ---- size limits ----

func TestDecodeMaxLineBytes(t *testing.T) {
	line := `{"event":"sandbox.create_retry","provider":"p"}`
	d := NewDecoder(len(line))
	var ev Event
	if err := d.Decode([]byte(line), &ev); err != nil {
		t.Fatalf("line of exactly max_line_bytes: %v", err)
	}
	d = NewDecoder(len(line) - 1)
	err := d.Decode([]byte(line), &ev)
	if want := fmt.Sprintf("line is %d bytes, over max_line_bytes %d", len(line), len(line)-1); err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	// The length check comes first: an over-long invalid UTF-8 line is too long.
	err = NewDecoder(4).Decode([]byte("\xff\xff\xff\xff\xff"), &ev)
	if Reason(err) != ReasonTooLong {
		t.Errorf("got %v, want too_long", err)
	}
}

func TestDecodeDepth(t *testing.T) {
	// 64 levels, the top-level object included, are fine.
	ok := `{"event":"x","a":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`
	if _, err := decodeOne(t, ok); err != nil {
		t.Errorf("depth 64: %v", err)
	}
	ok = `{"event":"x","a":` + strings.Repeat(`{"a":`, 63) + "1" + strings.Repeat("}", 63) + `}`
	if _, err := decodeOne(t, ok); err != nil {
		t.Errorf("depth 64 objects: %v", err)
	}
}

func TestDecodeManyFields(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"event":"sandbox.active"`)
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&sb, `,"f%d":{"x":[%d,"y",null,true]}`, i, i)
		if i%1000 == 0 {
			fmt.Fprintf(&sb, `,"provider":"p%d","delta":%d`, i, i)
		}
	}
	sb.WriteString(`}`)
	line := sb.String()
	d := NewDecoder(len(line))
	var ev Event
	if err := d.Decode([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	if string(ev.Provider) != "p9000" || ev.Delta != 9000 {
		t.Errorf("got %s", eventString(&ev))
	}

	// 10,000 snapshot entries, with duplicates (hash dedupe), keep document order.
	sb.Reset()
	sb.WriteString(`{"event":"http.pool.connects","counts":{`)
	for i := 0; i < 10000; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"s%d":%d`, i, i)
	}
	for i := 0; i < 10000; i += 3 {
		fmt.Fprintf(&sb, `,"s%d":%d`, i, 2*i)
	}
	sb.WriteString(`}}`)
	line = sb.String()
	d = NewDecoder(len(line))
	if err := d.Decode([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Counts) != 10000 {
		t.Fatalf("%d counts, want 10000", len(ev.Counts))
	}
	for i, c := range ev.Counts {
		want := int64(i)
		if i%3 == 0 {
			want = 2 * int64(i)
		}
		if string(c.Name) != fmt.Sprintf("s%d", i) || c.Count != want {
			t.Fatalf("Counts[%d] = %s %d", i, c.Name, c.Count)
		}
	}
	// A smaller object after a large one on the same decoder.
	if err := d.Decode([]byte(`{"event":"http.pool.connects","counts":{"a":1,"b":2,"a":3}}`), &ev); err != nil {
		t.Fatal(err)
	}
	if got := eventString(&ev); got != `Type=http.pool.connects Counts=[{Name:"a" Count:3} {Name:"b" Count:2}]` {
		t.Errorf("got %s", got)
	}
}

// ---- reuse ----

func TestDecodeReuseLeaksNothing(t *testing.T) {
	d := NewDecoder(0)
	var ev Event
	full := []string{
		`{"event":"server.startup_stage","stage":"s","server_name":"n","server_type":"t","worker":true,"duration_ms":1}`,
		`{"event":"rollout.completed","outcome":"failed","dispatch_name":"m","failure_class":"c","failure_kind":"k","failure_type":"T","reward":1,"masked":true}`,
		`{"event":"rollout.health","verdict":"healthy","outcome":"scored","flagged_checks":["a","b"]}`,
		`{"event":"server.requests","in_flight":1,"unhandled_exceptions":1,"responses":{"200":1},"cancelled":[{"route":"/a","response_started":true,"count":1}],"outbound_in_flight":1}`,
		`{"event":"http.pool.connects","counts":{"a":1}}`,
		`{"event":"resource","attributes":{"a":1}}`,
		`{"event":"rollout.size","input_items":1,"output_items":1,"turns":1,"tool_calls":1}`,
		`{"event":"rollout.reward","reward":0.5,"dispatch_name":"m","masked":true}`,
	}
	sparse := []string{
		`{"event":"server.startup_stage","stage":"s","server_name":"n","duration_ms":1}`,
		`{"event":"rollout.completed","outcome":"failed","dispatch_name":"m"}`,
		`{"event":"rollout.health","verdict":"healthy","outcome":"scored"}`,
		`{"event":"server.requests","in_flight":1,"unhandled_exceptions":1,"responses":{}}`,
		`{"event":"http.pool.connects","counts":{}}`,
		`{"event":"resource","attributes":{}}`,
		`{"event":"rollout.size"}`,
		`{"event":"rollout.reward","reward":NaN,"dispatch_name":"n"}`,
	}
	for _, f := range full {
		for _, s := range sparse {
			if err := d.Decode([]byte(f), &ev); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := d.Decode([]byte(s), &ev); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			got := eventString(&ev)
			want, _ := decodeOne(t, s)
			if got != eventString(want) {
				t.Errorf("after %s\n got %s\nwant %s", f, got, eventString(want))
			}
			if ev.ServerType != nil || ev.FailureKind != nil || ev.FailureClass != nil || ev.FailureType != nil {
				t.Errorf("after %s: stale optional strings in %s", f, got)
			}
		}
	}
}

// TestDecodeReuseClearsEverything decodes every kind of line, then an unknown event, on the
// same decoder and Event: nothing of the first may remain.
func TestDecodeReuseClearsEverything(t *testing.T) {
	lines := append([]string{
		`{"event":"rollout.completed","outcome":"failed","dispatch_name":"m","failure_class":"c","failure_kind":"k","failure_type":"T","reward":1,"masked":true}`,
		`{"event":"server.startup_stage","stage":"s","server_name":"n","server_type":"t","worker":true,"duration_ms":1}`,
		`{"event":"gc.pause","generation":2,"duration_ms":1}`,
	}, validMix...)
	d := NewDecoder(0)
	var ev Event
	unknown := func(after string) {
		t.Helper()
		if err := d.Decode([]byte(`{"event":"unknown"}`), &ev); err != nil {
			t.Fatal(err)
		}
		if got := eventString(&ev); got != "" {
			t.Errorf("after %s: %s", after, got)
		}
	}
	const breaking = `"duration_ms":-1,"in_flight":-1,"attributes":7,"counts":[],"offered":"x","generation":9,"collections":[1,2,3,4],"turns":-1,"provider":"","outcome":"x","loop":1,"reward":"x"}`
	for _, l := range lines {
		if err := d.Decode([]byte(l), &ev); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		typ := ev.Type
		unknown(l)
		if typ == EventUnknown {
			continue
		}
		// A rejected line of the same type after it.
		if err := d.Decode([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		bad := l[:len(l)-1] + `,"event":"` + typ.String() + `",` + breaking
		if err := d.Decode([]byte(bad), &ev); err == nil {
			t.Fatalf("%s: accepted", bad)
		}
		unknown(bad)
	}
	// Another Event on the same decoder is cleared in full.
	ev2 := ev
	ev2.Provider, ev2.Tasks = b("stale"), 9
	if err := d.Decode([]byte(`{"event":"unknown"}`), &ev2); err != nil {
		t.Fatal(err)
	}
	if got := eventString(&ev2); got != "" {
		t.Errorf("fresh Event: %s", got)
	}
}

func TestNameTables(t *testing.T) {
	for i, n := range keyNames {
		if got := lookupKey([]byte(n)); got != i {
			t.Errorf("key %q: %d, want %d", n, got, i)
		}
		for _, other := range []string{n + "x", n[:len(n)-1], strings.ToUpper(n), "x" + n[1:]} {
			if got := lookupKey([]byte(other)); got >= 0 && keyNames[got] != other {
				t.Errorf("%q found as %q", other, keyNames[got])
			}
		}
	}
	for i, n := range EventNames {
		if got := lookupEvent([]byte(n)); got != EventType(i) {
			t.Errorf("event %q: %v, want %v", n, got, EventType(i))
		}
	}
	for _, n := range []string{"", "x", "resourcE", "gc.paus", "gc.pauses", "ts"} {
		if lookupKey([]byte(n)) != -1 && n != "" {
			t.Errorf("key %q found", n)
		}
		if lookupEvent([]byte(n)) != EventUnknown {
			t.Errorf("event %q found", n)
		}
	}
}

func TestDecodeNegativeZeroDuration(t *testing.T) {
	ev, err := decodeOne(t, `{"event":"driver.admission","duration_ms":-0.0}`)
	if err != nil {
		t.Fatal(err)
	}
	if ev.DurationMS != 0 || math.Signbit(ev.DurationMS) {
		t.Errorf("duration %v, signbit %v", ev.DurationMS, math.Signbit(ev.DurationMS))
	}
}

// ---- numbers ----

func TestParseInt(t *testing.T) {
	cases := []struct {
		tok  string
		want int64
		st   gymjson.IntStatus
	}{
		{"0", 0, gymjson.IntOK},
		{"-0", 0, gymjson.IntOK},
		{"3", 3, gymjson.IntOK},
		{"3.0", 3, gymjson.IntOK},
		{"3.000000000000000000000000000000", 3, gymjson.IntOK},
		{"3e0", 3, gymjson.IntOK},
		{"3E+2", 300, gymjson.IntOK},
		{"0.3e1", 3, gymjson.IntOK},
		{"30e-1", 3, gymjson.IntOK},
		{"3.5", 0, gymjson.IntNotIntegral},
		{"1e-1", 0, gymjson.IntNotIntegral},
		{"0.0000001", 0, gymjson.IntNotIntegral},
		{"123456789012345678", 123456789012345678, gymjson.IntOK},
		{"1234567890123456789", 1234567890123456789, gymjson.IntOK},
		{"9223372036854775807", math.MaxInt64, gymjson.IntOK},
		{"9223372036854775808", 0, gymjson.IntOutOfRange},
		{"-9223372036854775808", math.MinInt64, gymjson.IntOK},
		{"-9223372036854775809", 0, gymjson.IntOutOfRange},
		{"9.223372036854775807e18", math.MaxInt64, gymjson.IntOK},
		{"92233720368547758070e-1", math.MaxInt64, gymjson.IntOK},
		{"10000000000000000000", 0, gymjson.IntOutOfRange},
		{"1e18", 1e18, gymjson.IntOK},
		{"1e19", 0, gymjson.IntOutOfRange},
		{"1e30", 0, gymjson.IntOutOfRange},
		{"1e400", 0, gymjson.IntOutOfRange},
		{"1e99999999999999999999999", 0, gymjson.IntOutOfRange},
		{"1e-99999999999999999999999", 0, gymjson.IntNotIntegral},
		{"0e99999999999999999999999", 0, gymjson.IntOK},
		{"9007199254740993", 9007199254740993, gymjson.IntOK}, // not exact as a double
		{"NaN", 0, gymjson.IntNotIntegral},
		{"Infinity", 0, gymjson.IntOutOfRange},
		{"-Infinity", 0, gymjson.IntOutOfRange},
	}
	for _, c := range cases {
		v, st := gymjson.ParseInt([]byte(c.tok))
		if v != c.want || st != c.st {
			t.Errorf("%s: got %d %d, want %d %d", c.tok, v, st, c.want, c.st)
		}
	}
}

func TestParseFloat(t *testing.T) {
	cases := []struct {
		tok  string
		want float64
	}{
		{"0", 0}, {"12", 12}, {"-12", -12}, {"3.25", 3.25}, {"1e3", 1000}, {"1E-3", 0.001},
		{"123456789012345", 123456789012345}, {"1234567890123456789", 1234567890123456789},
		{"1e400", math.Inf(1)}, {"-1e400", math.Inf(-1)}, {"1e-400", 0},
		{"Infinity", math.Inf(1)}, {"-Infinity", math.Inf(-1)},
	}
	for _, c := range cases {
		if got := gymjson.ParseFloat([]byte(c.tok)); got != c.want {
			t.Errorf("%s: got %v, want %v", c.tok, got, c.want)
		}
	}
	if got := gymjson.ParseFloat([]byte("NaN")); !math.IsNaN(got) {
		t.Errorf("NaN: got %v", got)
	}
}

// ---- allocations ----

// validMix is a realistic mix of lines, in the proportions a busy Gym process sends them.
var validMix = []string{
	`{"event":"resource","attributes":{"service.name":"nemo-gym/math","service.instance.id":"r1-rank0","nemo.run.id":"r1","nemo.gym.server.name":"math","nemo.gym.server.type":"resources_servers","process.pid":4242,"host.name":"node7"}}`,
	`{"event":"rollout.completed","outcome":"scored","dispatch_name":"math","reward":0.5,"ts":1712345678.123456}`,
	`{"event":"rollout.completed","outcome":"scored","dispatch_name":"math","reward":1.0,"masked":false,"ts":1712345678.223456}`,
	`{"event":"rollout.completed","outcome":"failed","dispatch_name":"math","failure_class":"agent_request_failed","failure_kind":"transport_timeout","failure_type":"TimeoutError","failure_reason":"read timed out after 300s","ts":1712345678.3}`,
	`{"event":"rollout.reward","reward":0.5,"dispatch_name":"math","masked":false,"ts":1712345678.35}`,
	`{"event":"rollout.health","verdict":"unhealthy","outcome":"scored","flagged_checks":["agent_turn_hollow","model_call_failed"],"ts":1712345678.4}`,
	`{"event":"rollout.size","input_items":12,"output_items":30,"turns":6,"tool_calls":5,"ts":1712345678.5}`,
	`{"event":"sandbox.active","provider":"docker","delta":1,"ts":1712345678.6}`,
	`{"event":"sandbox.startup","provider":"docker","duration_ms":1532.25,"ts":1712345678.7}`,
	`{"event":"sandbox.exec","provider":"docker","duration_ms":88.125,"ts":1712345678.8}`,
	`{"event":"server.startup_stage","stage":"import","server_name":"math","server_type":"resources_servers","worker":false,"duration_ms":412.5}`,
	`{"event":"http.pool.queue","queue_constraint":"per_host","queue_outcome":"ok","server_name":"policy_model","duration_ms":0.042,"ts":1712345678.9}`,
	`{"event":"http.pool.connect","outcome":"ok","server_name":"policy_model","duration_ms":1.75,"ts":1712345679.0}`,
	`{"event":"http.pool.connects","counts":{"policy_model":1234,"judge_model":88},"ts":1712345679.1}`,
	`{"event":"event_loop.lag","loop":"driver","lag_ms":3.2,"ts":1712345679.2}`,
	`{"event":"event_loop.tasks","loop":"driver","tasks":117,"ts":1712345679.3}`,
	`{"event":"gc.pause","generation":0,"duration_ms":0.31,"ts":1712345679.4}`,
	`{"event":"gc.stats","collections":[1200,110,9],"collected":[50000,3000,120],"uncollectable":[0,0,0],"count":[512,40,3],"ts":1712345679.5}`,
	`{"event":"server.requests","in_flight":4,"unhandled_exceptions":0,"responses":{"200":10234,"422":12,"500":3},"cancelled":[{"route":"/run","response_started":false,"count":2}],"outbound_in_flight":7,"ts":1712345679.6}`,
	`{"event":"driver.counts","offered":1000,"resident":64,"active":32,"ts":1712345679.7}`,
	`{"event":"driver.admission","duration_ms":12.5,"ts":1712345679.8}`,
	`{"event":"driver.output_write","duration_ms":2.25,"bytes":48213,"ts":1712345679.9}`,
	`{"event":"driver.materialize","duration_ms":0.75,"ts":1712345680.0}`,
	`{"event":"sandbox.active","provider":"d\u00f6cker","delta":-1,"note":"caf\u00e9 \ud83d\ude00"}`,
	`{"event":"some.future.event","x":{"y":[1,2,3]}}`,
}

func TestDecodeZeroAllocs(t *testing.T) { assertZeroAllocs(t, validMix) }

// assertZeroAllocs decodes every line of mix once, then checks that decoding the mix again
// allocates nothing.
func assertZeroAllocs(t *testing.T, mix []string) {
	t.Helper()
	d := NewDecoder(0)
	var ev Event
	lines := make([][]byte, len(mix))
	for i, l := range mix {
		lines[i] = []byte(l)
		if err := d.Decode(lines[i], &ev); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, l := range lines {
			if err := d.Decode(l, &ev); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per mix, want 0", allocs)
	}
}
