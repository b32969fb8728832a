package schemagen

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRealSchema(t *testing.T) {
	data, err := os.ReadFile("../../metadata.yaml")
	require.NoError(t, err)
	s, err := Parse(data)
	require.NoError(t, err)
	assert.Len(t, s.Instruments, 118)
	assert.Equal(t, "GymHttpConnectionPoolConnectTotal", GoName("gym.http.connection_pool.connect_total"))
}

// Each broken schema is refused with a message that names what is wrong.
func TestParseRejects(t *testing.T) {
	data, err := os.ReadFile("../../metadata.yaml")
	require.NoError(t, err)
	good := string(data)
	cases := []struct{ name, from, to, want string }{
		{"unknown kind", "    kind: updown\n    unit: \"{sandbox}\"", "    kind: upcounter\n    unit: \"{sandbox}\"", `kind "upcounter"`},
		{"unknown bucket set", "buckets: LAG_MS", "buckets: LAGS_MS", `unknown bucket set "LAGS_MS"`},
		{"unsorted bounds", "LAG_MS: [0.5, 1,", "LAG_MS: [1, 0.5,", "strictly increasing"},
		{"unknown attribute", "attributes: [nemo.gym.event_loop]", "attributes: [nemo.gym.event_looop]", `unknown attribute "nemo.gym.event_looop"`},
		{"unknown field", "schema_version: 1", "schema_version: 1\nschema_colour: red", "schema_colour"},
		{"narrowed to a foreign value", "values: [scored, failed]}", "values: [scored, lost]}", `narrows to "lost"`},
		{"accept_kinds not led by the kind", "accept_kinds: [gauge, updown]", "accept_kinds: [updown, gauge]", "must start with its kind gauge"},
		{"a counter for a gauge", "accept_kinds: [gauge, updown]", "accept_kinds: [gauge, counter]", `"counter" cannot stand for a gauge`},
		{"run_files without row", "    source: run_files\n    row: \"the response.output", "    source: run_files\n    note: \"the response.output", "row is required for source run_files"},
		{"row on a process instrument", "    source: process\n    attributes: [cpu.mode]", "    source: process\n    row: x\n    attributes: [cpu.mode]", "only events may also have one"},
		{"unknown source", "    source: otlp\n    note: Sent by OTLP only", "    source: grpc\n    note: Sent by OTLP only", `source "grpc"`},
		{"int_range without max", "    rule: int_range\n    min: 0\n    max: 2147483647", "    rule: int_range\n    min: 0", "needs type int, min and max"},
		{"enum without values", "    rule: enum\n    values: [healthy, unhealthy, unobserved]", "    rule: enum", "needs values"},
		{"alias to a foreign value", "aliases: {success: scored, failure: failed}", "aliases: {success: won, failure: failed}", `alias "success" reads as "won"`},
		{"alias of an own value", "aliases: {success: scored, failure: failed}", "aliases: {omitted: scored, failure: failed}", `alias "omitted" is one of its values`},
		{"alias on a free string", "    rule: string\n    max_bytes: 256\n    description: The sandbox provider.", "    rule: string\n    max_bytes: 256\n    aliases: {a: b}\n    description: The sandbox provider.", "aliases are for enum and fallback_enum"},
		{"unit listed twice", "    units: [requests]", "    units: [requests, requests]", `units: "requests" listed twice`},
		{"own unit listed", "    units: [requests]", "    units: [\"{request}\"]", `units: "{request}" listed twice (or its own unit)`},
		{"truncated reason not a value", "truncated_finish_reasons: [max_output_tokens, length, max_tokens]", "truncated_finish_reasons: [max_output_tokens, cut_short]", `"cut_short" is not a value of nemo.gym.rollout.finish_reason`},
		{"no truncated reasons", "truncated_finish_reasons: [max_output_tokens, length, max_tokens]", "truncated_finish_reasons: []", "truncated_finish_reasons is required"},
		{"code_name not a name", "code_name: gym.model.route_call_duration_ms", "code_name: Gym-Model", "name and code_name must match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Contains(t, good, c.from)
			_, err := Parse([]byte(strings.Replace(good, c.from, c.to, 1)))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
