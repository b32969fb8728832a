package events

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkDecode decodes each line of validMix on its own, one sub-benchmark per event.
func BenchmarkDecode(b *testing.B) {
	seen := map[string]int{}
	for _, l := range validMix {
		d := NewDecoder(0)
		var ev Event
		line := []byte(l)
		if err := d.Decode(line, &ev); err != nil {
			b.Fatal(err)
		}
		name := ev.Type.String()
		if ev.Type == EventUnknown {
			name = "unknown"
		}
		seen[name]++
		if n := seen[name]; n > 1 {
			name += "#" + strings.Repeat("I", n)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				_ = d.Decode(line, &ev)
			}
		})
	}
}

// BenchmarkDecodeMix decodes the whole mix per op; ns/line is the figure that matters.
func BenchmarkDecodeMix(b *testing.B) {
	d := NewDecoder(0)
	var ev Event
	lines := make([][]byte, len(validMix))
	size := 0
	for i, l := range validMix {
		lines[i] = []byte(l)
		size += len(l)
	}
	b.ReportAllocs()
	b.SetBytes(int64(size))
	for b.Loop() {
		for _, l := range lines {
			if err := d.Decode(l, &ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}

// BenchmarkDecodeRejected measures lines that break a rule (errors allocate their message).
func BenchmarkDecodeRejected(b *testing.B) {
	d := NewDecoder(0)
	var ev Event
	line := []byte(`{"event":"sandbox.exec","provider":"docker","duration_ms":-1}`)
	b.ReportAllocs()
	for b.Loop() {
		_ = d.Decode(line, &ev)
	}
}

// BenchmarkEncodingJSONMix is a reference point: encoding/json into a map, per mix.
func BenchmarkEncodingJSONMix(b *testing.B) {
	lines := make([][]byte, 0, len(validMix))
	for _, l := range validMix {
		if !strings.Contains(l, "NaN") && !strings.Contains(l, "Infinity") {
			lines = append(lines, []byte(l))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			var m map[string]any
			if err := json.Unmarshal(l, &m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}
