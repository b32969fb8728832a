package events

import (
	"encoding/json"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/gym-telemetry/otelcol-gym/internal/gymgen"
)

// The JSON approach was chosen by these benchmarks (docs/performance.md): the same realistic
// mix, parsed by this package's schema-aware decoder, by a reused valyala/fastjson parser (only
// parsing and reading the event field: less work than a full decode), and by encoding/json
// into a map.

func BenchmarkParseSchemaAware(b *testing.B) {
	lines := gymgen.Lines(1, 1, 10000)
	d := NewDecoder(1 << 16)
	var ev Event
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = d.Decode(lines[i], &ev)
		if i++; i == len(lines) {
			i = 0
		}
	}
}

func BenchmarkParseFastjson(b *testing.B) {
	lines := gymgen.Lines(1, 1, 10000)
	var p fastjson.Parser
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		v, err := p.ParseBytes(lines[i])
		if err == nil {
			_ = v.GetStringBytes("event")
		}
		if i++; i == len(lines) {
			i = 0
		}
	}
}

func BenchmarkParseEncodingJSON(b *testing.B) {
	lines := gymgen.Lines(1, 1, 10000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var m map[string]any
		_ = json.Unmarshal(lines[i], &m)
		if i++; i == len(lines) {
			i = 0
		}
	}
}
