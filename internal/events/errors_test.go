package events

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

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
