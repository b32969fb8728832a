package normalize

import (
	"strings"
	"testing"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

var (
	sinkB  []byte
	sinkOK bool
)

func benchBytes(b *testing.B, name string, in []byte, f func([]byte) []byte) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			sinkB = f(in)
		}
	})
}

func BenchmarkFailureKind(b *testing.B) {
	r, _ := NewRegistry([]string{"my_kind"}, nil, nil)
	benchBytes(b, "registered", []byte("transport_timeout"), r.FailureKind)
	benchBytes(b, "namespaced", []byte("sandbox:provider_oom"), r.FailureKind)
	benchBytes(b, "freetext", []byte("read timed out after 300s"), r.FailureKind)
}

func BenchmarkHealthCheck(b *testing.B) {
	r, _ := NewRegistry(nil, nil, []string{"noisy"})
	benchBytes(b, "registered", []byte("model_call_runaway_generation"), r.HealthCheck)
	benchBytes(b, "unknown", []byte("some_new_check"), r.HealthCheck)
	b.Run("ignored", func(b *testing.B) {
		in := []byte("model_call_failed")
		for b.Loop() {
			sinkOK = r.IgnoredHealthCheck(in)
		}
	})
}

func BenchmarkIdentifiers(b *testing.B) {
	benchBytes(b, "FailureClass", []byte("agent_request_failed"), FailureClass)
	benchBytes(b, "FailureType", []byte("httpx.exceptions.ReadTimeout"), FailureType)
	benchBytes(b, "FailureType/bad", []byte("httpx.exceptions..ReadTimeout"), FailureType)
}

func BenchmarkRoute(b *testing.B) {
	benchBytes(b, "template", []byte("/v1/rollouts/{rollout_id}/verify"), Route)
	benchBytes(b, "query", []byte("/v1/rollouts?id=7"), Route)
}

func BenchmarkServerType(b *testing.B) {
	benchBytes(b, "last", []byte("orchestrator"), ServerType)
	benchBytes(b, "unknown", []byte("gateway"), ServerType)
}

func BenchmarkRewardRange(b *testing.B) {
	x := 0.0
	for b.Loop() {
		sinkB, sinkOK = RewardRange(x)
		x += 0.25
		if x > 2 {
			x = -0.5
		}
	}
}

func BenchmarkCap(b *testing.B) {
	benchBytes(b, "short", []byte("math"), func(v []byte) []byte { return Cap(v, schema.DefaultStringMaxBytes) })
	benchBytes(b, "cut4byte", []byte(strings.Repeat("😀", 100)), func(v []byte) []byte { return Cap(v, schema.DefaultStringMaxBytes) })
}

func BenchmarkString(b *testing.B) {
	r, _ := NewRegistry(nil, nil, nil)
	for _, c := range []struct {
		id schema.AttrID
		v  string
	}{
		{schema.AttrNemoGymRolloutOutcome, "omitted"},
		{schema.AttrNemoGymRolloutDispatchName, "math_with_judge"},
		{schema.AttrNemoGymSandboxProvider, strings.Repeat("é", 200)},
		{schema.AttrNemoGymFailureKind, "transport_timeout"},
		{schema.AttrNemoGymFailureType, "asyncio.TimeoutError"},
		{schema.AttrHttpRoute, "/v1/x"},
	} {
		in := []byte(c.v)
		b.Run(schema.Attr(c.id).Key, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkB, sinkOK = r.String(c.id, in)
			}
		})
	}
}
