package events

import (
	"strings"
	"testing"
)

// The events of Gym's newer releases, as the emitter writes them (docs/receiver.md).
var gymTodayMix = []string{
	`{"event":"concurrency.limits","limits":[{"component":"model_server","limit_name":"max_requests","server_name":"policy","limit":64,"active":60,"queue_depth":12,"admission_timeouts":3,"admission_cancelled":1},{"component":"agent","limit_name":"sandboxes","limit":8,"active":8,"queue_depth":0,"admission_cancelled":0}],"ts":1712345680.1}`,
	`{"event":"model_call","server_name":"policy","dialect":"responses","outcome":"ok","duration_ms":1834.5,"ttft_ms":212.25,"tokens":{"input":1200,"output":350,"reasoning":120},"finish_reason":"completed","ts":1712345680.2}`,
	`{"event":"model_call","dialect":"chat","outcome":"rate_limited","duration_ms":15.5}`,
	`{"event":"memory.sample","servers":[{"server_name":"math","server_type":"resources_servers","pid":4243,"rss":1073741824,"pss":943718400,"rss_peak":2147483648,"pss_peak":1048576000,"processes":3}],"host":{"usage":10737418240,"available":57982058496,"total":68719476736,"peak":12884901888}}`,
	`{"event":"rollout.duration","duration_ms":41234.5}`,
	`{"event":"verify","duration_ms":230.5,"completed":true}`,
	`{"event":"servers.active","count":4}`,
}

func TestDecodeGymTodayValid(t *testing.T) {
	tests := []validCase{
		{
			name: "concurrency.limits",
			line: gymTodayMix[0],
			want: Event{Type: EventConcurrencyLimits, Limits: []ConcurrencyLimit{
				{Component: b("model_server"), LimitName: b("max_requests"), ServerName: b("policy"), Limit: 64, Active: 60, QueueDepth: 12, AdmissionTimeouts: 3, HasTimeouts: true, AdmissionCancelled: 1},
				{Component: b("agent"), LimitName: b("sandboxes"), Limit: 8, Active: 8},
			}},
		},
		{
			name: "concurrency.limits empty, unknown members, last wins, null server",
			line: `{"event":"concurrency.limits","limits":[{"component":"a","limit_name":"l","server_name":null,"limit":2,"limit":3,"active":1,"queue_depth":0,"admission_cancelled":0,"x":[1]}]}`,
			want: Event{Type: EventConcurrencyLimits, Limits: []ConcurrencyLimit{{Component: b("a"), LimitName: b("l"), Limit: 3, Active: 1}}},
		},
		{
			name: "concurrency.limits no limits",
			line: `{"event":"concurrency.limits","limits":[]}`,
			want: Event{Type: EventConcurrencyLimits},
		},
		{
			name: "model_call",
			line: gymTodayMix[1],
			want: Event{Type: EventModelCall, ServerName: b("policy"), Dialect: b("responses"), CallOutcome: b("ok"),
				DurationMS: 1834.5, HasDuration: true, TTFTMS: 212.25, HasTTFT: true,
				Tokens: [NumTokenTypes]int64{1200, 350, 120}, HasTokens: [NumTokenTypes]bool{true, true, true}, FinishReason: b("completed")},
		},
		{
			name: "model_call minimal",
			line: `{"event":"model_call","dialect":"messages","outcome":"ok"}`,
			want: Event{Type: EventModelCall, Dialect: b("messages"), CallOutcome: b("ok")},
		},
		{
			name: "model_call tokens: a reported 0 counts, null is not reported, last wins",
			line: `{"event":"model_call","dialect":"chat","outcome":"ok","tokens":{"input":0,"output":5,"output":null,"reasoning":null}}`,
			want: Event{Type: EventModelCall, Dialect: b("chat"), CallOutcome: b("ok"), HasTokens: [NumTokenTypes]bool{true, false, false}},
		},
		{
			name: "memory.sample",
			line: gymTodayMix[3],
			want: Event{Type: EventMemorySample, Servers: []ServerMemory{{ServerName: b("math"), ServerType: b("resources_servers"), PID: 4243,
				RSS: 1 << 30, PSS: 900 << 20, HasPSS: true, RSSPeak: 2 << 30, PSSPeak: 1000 << 20, HasPSSPeak: true, Processes: 3}},
				Host: HostMemory{Usage: 10 << 30, Available: 54 << 30, Total: 64 << 30, Peak: 12 << 30}, HasHost: true},
		},
		{
			name: "memory.sample statm only, no host",
			line: `{"event":"memory.sample","servers":[{"server_name":"m","server_type":"x","pid":1,"rss":10,"rss_peak":11,"processes":1,"pss":null}]}`,
			want: Event{Type: EventMemorySample, Servers: []ServerMemory{{ServerName: b("m"), ServerType: b("x"), PID: 1, RSS: 10, RSSPeak: 11, Processes: 1}}},
		},
		{
			name: "memory.sample host only",
			line: `{"event":"memory.sample","host":{"usage":1,"available":2,"total":3,"peak":1}}`,
			want: Event{Type: EventMemorySample, Host: HostMemory{Usage: 1, Available: 2, Total: 3, Peak: 1}, HasHost: true},
		},
		{
			name: "memory.sample nothing",
			line: `{"event":"memory.sample","servers":null,"host":null}`,
			want: Event{Type: EventMemorySample},
		},
		{name: "rollout.duration", line: gymTodayMix[4], want: Event{Type: EventRolloutDuration, DurationMS: 41234.5}},
		{name: "verify", line: gymTodayMix[5], want: Event{Type: EventVerify, DurationMS: 230.5, HasDuration: true, Completed: true}},
		{name: "verify without duration", line: `{"event":"verify","completed":false}`, want: Event{Type: EventVerify}},
		{name: "servers.active", line: gymTodayMix[6], want: Event{Type: EventServersActive, ServersActive: 4}},
		{name: "servers.active integral float", line: `{"event":"servers.active","count":2.0}`, want: Event{Type: EventServersActive, ServersActive: 2}},
	}
	checkValid(t, tests)
}

func TestDecodeGymTodayRejected(t *testing.T) {
	limit := func(entry string) string { return `{"event":"concurrency.limits","limits":[` + entry + `]}` }
	okLimit := `{"component":"a","limit_name":"l","limit":1,"active":0,"queue_depth":0,"admission_cancelled":0}`
	server := func(entry string) string { return `{"event":"memory.sample","servers":[` + entry + `]}` }
	tests := []struct {
		name, line, reason, msg string
	}{
		{"limits missing", `{"event":"concurrency.limits"}`, ReasonMissingField, `missing required field "limits"`},
		{"limits not an array", `{"event":"concurrency.limits","limits":{}}`, ReasonWrongType, `field "limits": want an array of limits, got an object`},
		{"limit not an object", limit(okLimit + `,7`), ReasonWrongType, `field "limits[1]": want an object, got 7`},
		{"limit without component", limit(`{"limit_name":"l","limit":1,"active":0,"queue_depth":0,"admission_cancelled":0}`), ReasonMissingField, `missing required field "limits[0].component"`},
		{"limit empty name", limit(`{"component":"a","limit_name":"","limit":1,"active":0,"queue_depth":0,"admission_cancelled":0}`), ReasonInvalidValue, `field "limits[0].limit_name": want a non-empty string, got ""`},
		{"limit negative", limit(`{"component":"a","limit_name":"l","limit":1,"active":-1,"queue_depth":0,"admission_cancelled":0}`), ReasonOutOfRange, `field "limits[0].active": want an integer >= 0, got -1`},
		{"limit fractional", limit(`{"component":"a","limit_name":"l","limit":1.5,"active":0,"queue_depth":0,"admission_cancelled":0}`), ReasonWrongType, `field "limits[0].limit": want an integer >= 0, got 1.5`},
		{"limit timeouts a string", limit(`{"component":"a","limit_name":"l","limit":1,"active":0,"queue_depth":0,"admission_timeouts":"3","admission_cancelled":0}`), ReasonWrongType, `field "limits[0].admission_timeouts": want an integer >= 0, got "3"`},
		{"limit without cancelled", limit(`{"component":"a","limit_name":"l","limit":1,"active":0,"queue_depth":0}`), ReasonMissingField, `missing required field "limits[0].admission_cancelled"`},
		{"model_call without dialect", `{"event":"model_call","outcome":"ok"}`, ReasonMissingField, `missing required field "dialect"`},
		{"model_call outcome not a string", `{"event":"model_call","dialect":"chat","outcome":true}`, ReasonWrongType, `field "outcome": want a non-empty string, got true`},
		{"model_call negative duration", `{"event":"model_call","dialect":"chat","outcome":"ok","duration_ms":-1}`, ReasonOutOfRange, `field "duration_ms": want a finite number >= 0, got -1`},
		{"model_call NaN ttft", `{"event":"model_call","dialect":"chat","outcome":"ok","ttft_ms":NaN}`, ReasonOutOfRange, `field "ttft_ms": want a finite number >= 0, got NaN`},
		{"model_call tokens not an object", `{"event":"model_call","dialect":"chat","outcome":"ok","tokens":[1]}`, ReasonWrongType, `field "tokens": want an object of token type to count, got an array`},
		{"model_call token type unknown", `{"event":"model_call","dialect":"chat","outcome":"ok","tokens":{"cached_input":3}}`, ReasonInvalidValue, `field "tokens": key "cached_input" is not a token type (want input, output or reasoning)`},
		{"model_call token count negative", `{"event":"model_call","dialect":"chat","outcome":"ok","tokens":{"output":-2}}`, ReasonOutOfRange, `field "tokens.output": want an integer >= 0, got -2`},
		{"model_call finish reason a number", `{"event":"model_call","dialect":"chat","outcome":"ok","finish_reason":1}`, ReasonWrongType, `field "finish_reason": want a string, got 1`},
		{"servers not an array", `{"event":"memory.sample","servers":3}`, ReasonWrongType, `field "servers": want an array of servers, got 3`},
		{"server without type", server(`{"server_name":"m","pid":1,"rss":1,"rss_peak":1,"processes":1}`), ReasonMissingField, `missing required field "servers[0].server_type"`},
		{"server pid too big", server(`{"server_name":"m","server_type":"x","pid":2147483648,"rss":1,"rss_peak":1,"processes":1}`), ReasonOutOfRange, `field "servers[0].pid": want a process id within 0..2147483647, got 2147483648`},
		{"server rss huge", server(`{"server_name":"m","server_type":"x","pid":1,"rss":1e30,"rss_peak":1,"processes":1}`), ReasonOutOfRange, `field "servers[0].rss": want an integer >= 0 within int64, got 1e30`},
		{"host not an object", `{"event":"memory.sample","host":[]}`, ReasonWrongType, `field "host": want an object {usage, available, total, peak}, got an array`},
		{"host without total", `{"event":"memory.sample","host":{"usage":1,"available":2,"peak":1}}`, ReasonMissingField, `missing required field "host.total"`},
		{"rollout.duration missing", `{"event":"rollout.duration"}`, ReasonMissingField, `missing required field "duration_ms"`},
		{"verify without completed", `{"event":"verify","duration_ms":1}`, ReasonMissingField, `missing required field "completed"`},
		{"verify completed a string", `{"event":"verify","completed":"yes"}`, ReasonWrongType, `field "completed": want a boolean, got "yes"`},
		{"servers.active negative", `{"event":"servers.active","count":-1}`, ReasonOutOfRange, `field "count": want an integer >= 0, got -1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeOne(t, tt.line)
			if err == nil {
				t.Fatalf("accepted %s", tt.line)
			}
			if got := Reason(err); got != tt.reason {
				t.Errorf("reason %q, want %q (%v)", got, tt.reason, err)
			}
			if err.Error() != tt.msg {
				t.Errorf("message\n got %s\nwant %s", err.Error(), tt.msg)
			}
		})
	}
}

// TestDecodeGymTodayReuse: a new event decoded after any other, and any other after it, on
// the same Event, leaves nothing behind.
func TestDecodeGymTodayReuse(t *testing.T) {
	d := NewDecoder(0)
	var ev Event
	for _, first := range append(append([]string{}, validMix...), gymTodayMix...) {
		for _, next := range append(append([]string{}, gymTodayMix...), validMix...) {
			if err := d.Decode([]byte(first), &ev); err != nil {
				t.Fatalf("%s: %v", first, err)
			}
			if err := d.Decode([]byte(next), &ev); err != nil {
				t.Fatalf("%s: %v", next, err)
			}
			want, _ := decodeOne(t, next)
			if got := eventString(&ev); got != eventString(want) {
				t.Errorf("after %s\n got %s\nwant %s", first, got, eventString(want))
			}
		}
	}
}

func TestDecodeGymTodayZeroAllocs(t *testing.T) { assertZeroAllocs(t, gymTodayMix) }

// The escaped spelling of a member name is the same member.
func TestDecodeGymTodayEscapedMembers(t *testing.T) {
	line := strings.Replace(gymTodayMix[0], `"queue_depth":12`, `"queue\u005fdepth":12`, 1)
	ev, err := decodeOne(t, line)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Limits[0].QueueDepth != 12 {
		t.Errorf("queue_depth = %d, want 12", ev.Limits[0].QueueDepth)
	}
}
