package normalize

import (
	"strings"
	"testing"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

func mustNew(t *testing.T, kinds, checks, ignored []string) *Registry {
	t.Helper()
	r, err := NewRegistry(kinds, checks, ignored)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return r
}

func TestFailureKind(t *testing.T) {
	r := mustNew(t, []string{"my_custom_kind", "Weird Kind!", "team:Upper"}, nil, nil)
	ns128 := "ns:" + strings.Repeat("k", 125)
	tests := []struct{ in, want string }{
		{"transport_timeout", "transport_timeout"},    // Gym's registry
		{"cohort_incomplete", "cohort_incomplete"},    // Gym's registry, last entry
		{"my_custom_kind", "my_custom_kind"},          // configured extra
		{"Weird Kind!", "Weird Kind!"},                // configured, need not be namespaced
		{"team:Upper", "team:Upper"},                  // configured, beats the pattern
		{"sandbox:oom", "sandbox:oom"},                // namespaced
		{"a:b", "a:b"},                                // shortest namespaced
		{"my_ns2:kind_3", "my_ns2:kind_3"},            // digits and underscores after the first
		{ns128, ns128},                                // exactly 128 bytes
		{"Sandbox:oom", "unregistered"},               // namespaced with uppercase
		{"sandbox:OOM", "unregistered"},               // namespaced with uppercase
		{"a:b:c", "unregistered"},                     // two colons
		{"ns" + ns128[2:] + "k", "unregistered"},      // 129-byte namespaced
		{"read timed out after 300s", "unregistered"}, // free text
		{"transport_timeou", "unregistered"},          // not registered, not namespaced
		{"Transport_timeout", "unregistered"},
		{":kind", "unregistered"},
		{"ns:", "unregistered"},
		{"1ns:kind", "unregistered"},
		{"ns:_kind", "unregistered"},
		{"ns :kind", "unregistered"},
		{"ns:kïnd", "unregistered"},
		{"unregistered", "unregistered"},
		{"", nilOut},
	}
	if len(ns128) != 128 {
		t.Fatalf("len(ns128) = %d", len(ns128))
	}
	for _, tt := range tests {
		checkOut(t, "FailureKind", []byte(tt.in), r.FailureKind([]byte(tt.in)), tt.want)
	}
	// A configured extra is unknown to another registry, and to the nil (Gym-only) one.
	var gym *Registry
	checkOut(t, "nil.FailureKind", []byte("my_custom_kind"), gym.FailureKind([]byte("my_custom_kind")), "unregistered")
	checkOut(t, "nil.FailureKind", []byte("transport_timeout"), gym.FailureKind([]byte("transport_timeout")), "transport_timeout")
	// Every kind of Gym's registry stays.
	for _, k := range schema.FailureKinds {
		checkOut(t, "nil.FailureKind", []byte(k), gym.FailureKind([]byte(k)), k)
	}
}

func TestHealthCheck(t *testing.T) {
	r := mustNew(t, nil, []string{"my_check"}, []string{"model_call_failed", "noisy_unknown", "my_check"})
	tests := []struct{ in, want string }{
		{"model_call_failed", "model_call_failed"},
		{"check_execution_error", "check_execution_error"},
		{"model_call_runaway_generation", "model_call_runaway_generation"},
		{"my_check", "my_check"},
		{"noisy_unknown", "unregistered"},
		{"some_new_check", "unregistered"},
		{"Model_call_failed", "unregistered"},
		{"unregistered", "unregistered"},
		{"", "unregistered"},
	}
	for _, tt := range tests {
		checkOut(t, "HealthCheck", []byte(tt.in), r.HealthCheck([]byte(tt.in)), tt.want)
	}
	for _, c := range schema.HealthChecks {
		checkOut(t, "HealthCheck", []byte(c), r.HealthCheck([]byte(c)), c)
	}

	// Ignored on the raw id: a registered one, an unknown one (which would otherwise count as
	// unregistered), a configured one; not the normalised value.
	ignored := map[string]bool{
		"model_call_failed": true,
		"noisy_unknown":     true,
		"my_check":          true,
		"unregistered":      false,
		"some_new_check":    false,
		"Model_call_failed": false,
		"":                  false,
	}
	for in, want := range ignored {
		if got := r.IgnoredHealthCheck([]byte(in)); got != want {
			t.Errorf("IgnoredHealthCheck(%q) = %v, want %v", in, got, want)
		}
	}
	var gym *Registry
	if gym.IgnoredHealthCheck([]byte("model_call_failed")) {
		t.Error("nil registry ignores a check")
	}
	checkOut(t, "nil.HealthCheck", []byte("my_check"), gym.HealthCheck([]byte("my_check")), "unregistered")
}

func TestNewRegistryValidates(t *testing.T) {
	k128 := strings.Repeat("k", 128)
	long := strings.Repeat("x", 1000)
	if _, err := NewRegistry([]string{k128, "Free Form", "ns:kind", "transport_timeout"}, []string{long, "c"}, []string{long, "c"}); err != nil {
		t.Fatalf("NewRegistry with valid entries: %v", err)
	}
	tests := []struct {
		name                   string
		kinds, checks, ignored []string
		want                   []string // substrings of the error
	}{
		{"empty kind", []string{"ok", ""}, nil, nil, []string{`failure_kinds[1] ""`, "empty"}},
		{"long kind", []string{k128 + "k"}, nil, nil, []string{"failure_kinds[0]", "129 bytes", "128"}},
		{"bad utf8 kind", []string{"a\xffb"}, nil, nil, []string{`failure_kinds[0] "a\xffb"`, "UTF-8"}},
		{"empty check", nil, []string{""}, nil, []string{`health_checks[0] ""`, "empty"}},
		{"bad utf8 check", nil, []string{"ok", "\xc3"}, nil, []string{"health_checks[1]", "UTF-8"}},
		{"empty ignored", nil, nil, []string{"a", "b", ""}, []string{`ignored_health_checks[2] ""`, "empty"}},
		{"all at once", []string{""}, []string{""}, []string{"\xff"},
			[]string{"failure_kinds[0]", "health_checks[0]", "ignored_health_checks[0]"}},
	}
	for _, tt := range tests {
		r, err := NewRegistry(tt.kinds, tt.checks, tt.ignored)
		if err == nil {
			t.Errorf("%s: NewRegistry = %v, nil error", tt.name, r)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tt.name, err, w)
			}
		}
	}
	_, err := NewRegistry([]string{long}, nil, nil)
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("a long bad entry: error %q, want one shortened", err)
	}
}

// String applies each attribute's rule.
func TestString(t *testing.T) {
	r := mustNew(t, []string{"my_kind"}, []string{"my_check"}, nil)
	s300 := strings.Repeat("s", 300)
	type tc struct {
		id   schema.AttrID
		in   string
		want string
		ok   bool
	}
	tests := []tc{
		// enum: one of the values, else rejected
		{schema.AttrNemoGymRolloutOutcome, "scored", "scored", true},
		{schema.AttrNemoGymRolloutOutcome, "omitted", "omitted", true},
		// aliases: the older spellings Gym's own code writes are read as the schema's values
		{schema.AttrNemoGymRolloutOutcome, "success", "scored", true},
		{schema.AttrNemoGymRolloutOutcome, "failure", "failed", true},
		{schema.AttrNemoGymRolloutOutcome, "Success", nilOut, false},
		{schema.AttrNemoGymRolloutOutcome, "succes", nilOut, false},
		{schema.AttrNemoGymRolloutOutcome, "", nilOut, false},
		{schema.AttrNemoGymHealthVerdict, "unobserved", "unobserved", true},
		{schema.AttrNemoGymHealthVerdict, "sick", nilOut, false},
		{schema.AttrNemoGymRolloutStage, "model_call", "model_call", true},
		{schema.AttrNemoGymRolloutStage, "other", "other", true},
		{schema.AttrNemoGymRolloutStage, "thinking", nilOut, false},
		{schema.AttrNemoGymHttpConnectionPoolQueueConstraint, "per_host", "per_host", true},
		{schema.AttrNemoGymHttpConnectionPoolQueueConstraint, "other", nilOut, false},
		// Gym's older connection-pool code, by OTLP: its otlp_values are kept
		{schema.AttrNemoGymHttpConnectionPoolQueueConstraint, "none", "none", true},
		{schema.AttrNemoGymHttpConnectionPoolQueueConstraint, "mixed", "mixed", true},
		{schema.AttrNemoGymHttpConnectionPoolAttemptOutcome, "timeout", "timeout", true},
		{schema.AttrNemoGymHttpConnectionPoolAttemptOutcome, "abandoned", "other", true},
		{schema.AttrNemoGymHttpConnectionPoolQueueOutcome, "abandoned", "abandoned", true},
		{schema.AttrNemoGymHttpConnectionPoolConnectOutcome, "failed", "failed", true},
		{schema.AttrNemoGymHttpConnectionPoolConnectOutcome, "abandoned", nilOut, false},
		{schema.AttrCpuMode, "wait", "wait", true},
		{schema.AttrCpuMode, "idle", nilOut, false},
		// derived enums as strings
		{schema.AttrNemoGymRolloutRewardRange, "above_one", "above_one", true},
		{schema.AttrNemoGymRolloutRewardRange, "0.5", nilOut, false},
		{schema.AttrNemoGymRequestPhase, "during_response", "during_response", true},
		{schema.AttrNemoGymRequestPhase, "after_response", nilOut, false},
		// free strings: capped, valid UTF-8
		{schema.AttrNemoGymRolloutDispatchName, "math", "math", true},
		{schema.AttrNemoGymRolloutDispatchName, "", "", true},
		{schema.AttrNemoGymSandboxProvider, s300, s300[:256], true},
		{schema.AttrNemoGymStartupStage, strings.Repeat("€", 100), strings.Repeat("€", 85), true},
		{schema.AttrNemoGymServerName, "srv\xff", "srv", true},
		{schema.AttrNemoGymHttpDestinationServerName, "dest", "dest", true},
		{schema.AttrNemoGymEventLoop, "main", "main", true},
		// identifiers
		{schema.AttrNemoGymFailureClass, "agent_request_failed", "agent_request_failed", true},
		{schema.AttrNemoGymFailureClass, "Bad", "other", true},
		{schema.AttrNemoGymFailureClass, "", nilOut, true},
		{schema.AttrNemoGymFailureType, "a.B", "a.B", true},
		{schema.AttrNemoGymFailureType, "a.", "other", true},
		{schema.AttrNemoGymFailureType, "", nilOut, true},
		// failure kind, with the registry
		{schema.AttrNemoGymFailureKind, "my_kind", "my_kind", true},
		{schema.AttrNemoGymFailureKind, "ns:kind", "ns:kind", true},
		{schema.AttrNemoGymFailureKind, "free text", "unregistered", true},
		{schema.AttrNemoGymFailureKind, "", nilOut, true},
		// fallback enum
		{schema.AttrNemoGymServerType, "orchestrator", "orchestrator", true},
		{schema.AttrNemoGymServerType, "gateway", "other", true},
		{schema.AttrNemoGymServerType, "", nilOut, true},
		// health check, with the registry
		{schema.AttrNemoGymHealthCheck, "my_check", "my_check", true},
		{schema.AttrNemoGymHealthCheck, "agent_turn_hollow", "agent_turn_hollow", true},
		{schema.AttrNemoGymHealthCheck, "nope", "unregistered", true},
		// route
		{schema.AttrHttpRoute, "/v1/x", "/v1/x", true},
		{schema.AttrHttpRoute, "/a?b=1", "unmatched", true},
		{schema.AttrHttpRoute, "", "unmatched", true},
		// int and bool attributes take no string value
		{schema.AttrHttpResponseStatusCode, "200", nilOut, false},
		{schema.AttrNemoGymGcGeneration, "1", nilOut, false},
		{schema.AttrNemoGymRolloutMasked, "true", nilOut, false},
		{schema.AttrNemoGymServerWorker, "false", nilOut, false},
		// the instruments of Gym's newer releases (concurrency, model calls, memory, token
		// capture, run-file tokens): typed from the spec's table of bounded values
		{schema.AttrNemoGymConcurrencyComponent, "model_server", "model_server", true},
		{schema.AttrNemoGymConcurrencyComponent, "Model", "other", true},
		{schema.AttrNemoGymConcurrencyComponent, strings.Repeat("a", 65), "other", true},
		{schema.AttrNemoGymConcurrencyLimitName, "max-concurrent.requests_2", "max-concurrent.requests_2", true},
		{schema.AttrNemoGymConcurrencyLimitName, "-x", "other", true},
		{schema.AttrNemoGymConcurrencyLimitName, strings.Repeat("a", 128), strings.Repeat("a", 128), true},
		{schema.AttrNemoGymConcurrencyLimitName, strings.Repeat("a", 129), "other", true},
		{schema.AttrNemoGymModelCallDialect, "messages", "messages", true},
		{schema.AttrNemoGymModelCallDialect, "completions", "unknown", true},
		{schema.AttrNemoGymModelCallOutcome, "ok", "ok", true},
		{schema.AttrNemoGymModelCallOutcome, "rate_limited", "rate_limited", true},
		{schema.AttrNemoGymModelCallOutcome, "HTTP 429", "other", true},
		{schema.AttrNemoGymModelCallTokenType, "reasoning", "reasoning", true},
		{schema.AttrNemoGymModelCallTokenType, "cached_input", nilOut, false},
		{schema.AttrNemoGymModelCallFinishReason, "max_output_tokens", "max_output_tokens", true},
		{schema.AttrNemoGymModelCallFinishReason, "failed", "other", true},
		{schema.AttrNemoGymRolloutFinishReason, "failed", "failed", true},
		{schema.AttrNemoGymRolloutFinishReason, "tool_use", "tool_use", true},
		{schema.AttrNemoGymRolloutFinishReason, "weird", "other", true},
		{schema.AttrGenAiTokenType, "cached_input", "cached_input", true},
		{schema.AttrGenAiTokenType, "total", nilOut, false},
		{schema.AttrGenAiResponseModel, "gpt-4.1", "gpt-4.1", true},
		{schema.AttrGenAiResponseModel, s300, s300[:256], true},
		{schema.AttrMemoryType, "pss", "pss", true},
		{schema.AttrMemoryType, "uss", nilOut, false},
		{schema.AttrProcessPid, "42", nilOut, false},
		{schema.AttrNemoGymTokenCaptureSizeClass, "lt_32k", "lt_32k", true},
		{schema.AttrNemoGymTokenCaptureSizeClass, "lt_64k", nilOut, false},
		{schema.AttrNemoGymTokenCaptureError, "cancelled", "cancelled", true},
		{schema.AttrNemoGymTokenCaptureError, "timeout", nilOut, false},
		// Gym's own overflow value, past its 512 attribute sets per instrument: kept
		{schema.AttrNemoGymTokenCaptureSizeClass, "other", "other", true},
		{schema.AttrNemoGymTokenCaptureError, "other", "other", true},
		{schema.AttrNemoGymTokenCaptureOperation, "other", "other", true},
		{schema.AttrNemoGymTokenCaptureImplementation, "other", "other", true},
		{schema.AttrNemoGymTokenCaptureOperation, "Tokenizer.encode.", "Tokenizer.encode.", true},
		{schema.AttrNemoGymTokenCaptureOperation, "9lives", "other", true},
		{schema.AttrNemoGymTokenCaptureImplementation, "_fast", "_fast", true},
		{schema.AttrNemoGymTokenCaptureOutcome, "captured", "captured", true},
		{schema.AttrNemoGymTokenCaptureReason, "no space", "other", true},
		{schema.AttrNemoGymTokenCaptureDigest, "sha256", "sha256", true},
		{schema.AttrNemoGymTokenCaptureCache, strings.Repeat("c", 129), "other", true},
		// the GenAI conventions' attributes
		{schema.AttrGenAiOperationName, "chat", "chat", true},
		{schema.AttrGenAiOperationName, "generate_content", "generate_content", true},
		{schema.AttrGenAiOperationName, "Chat Completion", "_OTHER", true},
		{schema.AttrGenAiProviderName, "openai", "openai", true},
		{schema.AttrGenAiProviderName, "aws.bedrock", "aws.bedrock", true},
		{schema.AttrGenAiProviderName, "OpenAI", "_OTHER", true},
		{schema.AttrErrorType, "timeout", "timeout", true},
		{schema.AttrErrorType, "java.net.UnknownHostException", "java.net.UnknownHostException", true},
		{schema.AttrErrorType, "_OTHER", "_OTHER", true},
		{schema.AttrErrorType, "connection reset by 10.0.0.1", "_OTHER", true},
		{schema.AttrGenAiRequestModel, "gpt-4.1", "gpt-4.1", true},
		{schema.AttrGenAiRequestModel, s300, s300[:256], true},
		// Gym's older observability modules
		{schema.AttrNemoGymConcurrencySite, "model.policy-model_2", "model.policy-model_2", true},
		{schema.AttrNemoGymConcurrencySite, "rollout_driver", "rollout_driver", true},
		{schema.AttrNemoGymConcurrencySite, "model/policy", "other", true},
		{schema.AttrNemoGymConcurrencySite, strings.Repeat("s", 129), "other", true},
		{schema.AttrNemoGymModelDialect, "chat_completions", "chat_completions", true},
		{schema.AttrNemoGymModelDialect, "Chat", "other", true},
		{schema.AttrNemoGymHttpInternal, "true", nilOut, false},
		{schema.AttrNemoGymHttpRetryReason, "server_disconnected", "server_disconnected", true},
		{schema.AttrNemoGymHttpRetryReason, "other", "other", true},
		{schema.AttrNemoGymHttpRetryReason, "dns", "other", true},
		{schema.AttrNemoGymAgentName, "", "", true},
		{schema.AttrNemoGymAgentName, "simple_agent", "simple_agent", true},
		{schema.AttrNemoGymBenchmarkName, s300, s300[:256], true},
		{schema.AttrNemoGymToolName, "get_weather", "get_weather", true},
		{schema.AttrNemoGymToolName, "2fa-check.v1", "2fa-check.v1", true},
		{schema.AttrNemoGymToolName, "wp-admin/setup.php", "other", true},
		{schema.AttrNemoGymGpuIndex, "0", nilOut, false},
		{schema.AttrNemoGymGpuUuid, "GPU-3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0f", "GPU-3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0f", true},
		{schema.AttrNemoGymGpuUuid, "MIG-3F1C2A9B-0D4E-4C7A-9B1E-5A6F7C8D9E0F", "MIG-3F1C2A9B-0D4E-4C7A-9B1E-5A6F7C8D9E0F", true},
		{schema.AttrNemoGymGpuUuid, "GPU-3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0", "other", true},
		{schema.AttrNemoGymGpuUuid, "gpu-3f1c2a9b-0d4e-4c7a-9b1e-5a6f7c8d9e0f", "other", true},
		{schema.AttrNemoGymGpuUuid, "", nilOut, true},
		// OpenTelemetry's HTTP instrumentations
		{schema.AttrHttpRequestMethod, "POST", "POST", true},
		{schema.AttrHttpRequestMethod, "_OTHER", "_OTHER", true},
		{schema.AttrHttpRequestMethod, "PURGE", "_OTHER", true},
		{schema.AttrHttpMethod, "get", "_OTHER", true},
		{schema.AttrHttpMethod, "GET", "GET", true},
		{schema.AttrUrlScheme, "https", "https", true},
		{schema.AttrUrlScheme, "gopher", "other", true},
		{schema.AttrHttpScheme, "http", "http", true},
		{schema.AttrNetworkProtocolVersion, "1.1", "1.1", true},
		{schema.AttrNetworkProtocolVersion, "0.9", "other", true},
		{schema.AttrHttpFlavor, "2", "2", true},
		{schema.AttrErrorType, "500", "500", true},
		{schema.AttrErrorType, "aiohttp.ServerDisconnectedError", "aiohttp.ServerDisconnectedError", true},
		{schema.AttrErrorType, "Server error: boom", "_OTHER", true},
		{schema.AttrHttpStatusCode, "200", nilOut, false},
		// the run files' rollout evidence: Gym's values, else the fallback (other, unknown)
		{schema.AttrNemoGymModelCallStatusClass, "4xx", "4xx", true},
		{schema.AttrNemoGymModelCallStatusClass, "6xx", "other", true},
		{schema.AttrNemoGymToolStatus, "timeout", "timeout", true},
		{schema.AttrNemoGymToolStatus, "exploded", "unknown", true},
		{schema.AttrNemoGymToolTimingSource, "harness", "harness", true},
		{schema.AttrNemoGymToolTimingSource, "clock", "unknown", true},
		{schema.AttrNemoGymAgentInvocationStatus, "incomplete", "incomplete", true},
		{schema.AttrNemoGymAgentInvocationStatus, "weird", "unknown", true},
		{schema.AttrNemoGymSandboxRole, "verifier", "verifier", true},
		{schema.AttrNemoGymSandboxRole, "judge", "unknown", true},
		{schema.AttrNemoGymSandboxOutcome, "oom", "oom", true},
		{schema.AttrNemoGymSandboxOutcome, "melted", "unknown", true},
		{schema.AttrNemoGymCompactionOutcome, "aborted", "aborted", true},
		{schema.AttrNemoGymCompactionOutcome, "maybe", "unknown", true},
		{schema.AttrNemoGymCompactionTokensPoint, "after", "after", true},
		{schema.AttrNemoGymCompactionTokensPoint, "during", nilOut, false},
		{schema.AttrNemoGymEvidenceGapCode, "turns_unavailable", "turns_unavailable", true},
		{schema.AttrNemoGymEvidenceGapCode, "a_new_code", "other", true},
		{schema.AttrNemoGymEvidenceProblem, "parent_cycle", "parent_cycle", true},
		{schema.AttrNemoGymEvidenceProblem, "bad", nilOut, false},
		{schema.AttrNemoGymAgentSubagent, "true", nilOut, false},
		{schema.AttrNemoGymEvidenceTrajectory, "false", nilOut, false},
		// outside the schema
		{schema.NumAttributes, "x", nilOut, false},
		{schema.AttrID(60000), "x", nilOut, false},
	}
	seen := map[schema.AttrID]bool{}
	for _, tt := range tests {
		seen[tt.id] = true
		got, ok := r.String(tt.id, []byte(tt.in))
		name := "String"
		if int(tt.id) < len(schema.Attributes) {
			name = "String[" + schema.Attr(tt.id).Key + "]"
		}
		if ok != tt.ok {
			t.Errorf("%s(%q) ok = %v, want %v", name, tt.in, ok, tt.ok)
		}
		checkOut(t, name, []byte(tt.in), got, tt.want)
	}
	for id := range schema.NumAttributes {
		if !seen[id] {
			t.Errorf("TestString has no case for %s", schema.Attr(id).Key)
		}
	}
}

// The generic String agrees with the dedicated function of every attribute that has one.
func TestStringMatchesDedicated(t *testing.T) {
	r := mustNew(t, []string{"x_kind"}, []string{"x_check"}, nil)
	inputs := []string{"", "a", "Bad", "ns:kind", "x_kind", "x_check", "/r", "/r?q", "a.B", "orchestrator",
		"agent_turn_hollow", "transport_timeout", strings.Repeat("z", 300), "é", "\xff"}
	dedicated := map[schema.AttrID]func([]byte) []byte{
		schema.AttrNemoGymFailureClass: FailureClass,
		schema.AttrNemoGymFailureType:  FailureType,
		schema.AttrNemoGymFailureKind:  r.FailureKind,
		schema.AttrNemoGymHealthCheck:  r.HealthCheck,
		schema.AttrHttpRoute:           Route,
		schema.AttrNemoGymServerType:   ServerType,
	}
	for id, f := range dedicated {
		for _, in := range inputs {
			got, ok := r.String(id, []byte(in))
			want := f([]byte(in))
			if !ok || string(got) != string(want) || (got == nil) != (want == nil) {
				t.Errorf("String(%s, %q) = %q, %v; dedicated gives %q", schema.Attr(id).Key, in, got, ok, want)
			}
		}
	}
}
