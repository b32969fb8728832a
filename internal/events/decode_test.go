package events

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

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

// validCase is a line that decodes (Accepted) to want.
type validCase struct {
	name string
	line string
	want Event
}

// checkValid decodes each case's line and compares the event with its want, field by field.
func checkValid(t *testing.T, cases []validCase) {
	t.Helper()
	for _, tt := range cases {
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

func TestDecodeValid(t *testing.T) {
	tests := []validCase{
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
	checkValid(t, tests)
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
