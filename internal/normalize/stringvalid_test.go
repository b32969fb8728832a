package normalize

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// StringValidUTF8 gives what String gives, for every attribute, on every valid UTF-8 value.
func TestStringValidUTF8AgreesWithString(t *testing.T) {
	r := mustNew(t, []string{"my_kind"}, []string{"my_check"}, []string{"noisy"})
	values := []string{
		"", "x", "scored", "failed", "orchestrator", "gateway", "transport_timeout", "sandbox:oom",
		"free text kind", "agent_request_failed", "Bad Class", "asyncio.TimeoutError", "a..b",
		"model_call_failed", "my_check", "/v1/items/{id}", "/a?b=1", "/", "unmatched", "/é",
		strings.Repeat("€", 200), strings.Repeat("a", 300), "/" + strings.Repeat("ü", 200),
		"ab" + strings.Repeat("€", 100), "abc" + strings.Repeat("€", 100), "per_host", "ok", "partial",
	}
	values = append(values, schema.HealthChecks...)
	for id := range schema.NumAttributes + 1 { // one past the schema too
		for _, s := range values {
			if !utf8.ValidString(s) {
				t.Fatalf("test value %q is not valid UTF-8", s)
			}
			v := []byte(s)
			want, wantOK := r.String(id, v)
			got, gotOK := r.StringValidUTF8(id, v)
			if gotOK != wantOK || !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Errorf("attribute %d, %q: got %q %v, want %q %v", id, s, got, gotOK, want, wantOK)
			}
		}
	}
}
