package rollouts

import (
	stdcontext "context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
)

func newBenchAggregator(b *testing.B) *aggregate.Aggregator {
	reg, err := normalize.NewRegistry(nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	return aggregate.NewAggregator(aggregate.AggregatorConfig{CardinalityLimit: 2000, ExpireAfter: time.Hour, Registry: reg})
}

// BenchmarkSource is the rollouts source's whole path over one run file: the follower's poll,
// the row reader, the mapping and the aggregator, a new tailer per pass reading the file from
// its beginning. Its cpu-MB/s is the run files' figure per core through the source.
func BenchmarkSource(b *testing.B) {
	for _, s := range benchSizes[:2] {
		b.Run(s.name, func(b *testing.B) {
			src := benchFile(b, s.name, s.row)
			dir := b.TempDir()
			if err := os.Symlink(src, filepath.Join(dir, "r.jsonl")); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(src)
			if err != nil {
				b.Fatal(err)
			}
			agg := newBenchAggregator(b)
			b.SetBytes(fi.Size())
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				rt := NewSource(agg.NewSink, SourceOptions{
					Include: []string{filepath.Join(dir, "*.jsonl")}, StartAtBeginning: true, PollInterval: time.Hour,
				}, nil, zap.NewNop())
				if err := rt.Start(stdcontext.Background()); err != nil {
					b.Fatal(err)
				}
				_ = rt.Shutdown(stdcontext.Background())
			}
			if cpu := (cpuTime() - cpu0).Seconds(); cpu > 0 {
				b.ReportMetric(float64(fi.Size())*float64(b.N)/cpu/1e6, "cpu-MB/s")
			}
		})
	}
}
