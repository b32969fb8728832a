package aggregate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/gymgen"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
)

func benchAggregator(tb testing.TB) *Aggregator {
	reg, err := normalize.NewRegistry(nil, nil, nil)
	require.NoError(tb, err)
	return NewAggregator(AggregatorConfig{CardinalityLimit: 2000, ExpireAfter: time.Hour, Registry: reg})
}

// TestIngestAllocatesNothing: decode + aggregate of a realistic mix allocates nothing per
// event once every series exists (allocation counts are deterministic; times are not asserted).
func TestIngestAllocatesNothing(t *testing.T) {
	lines := gymgen.Lines(1, 1, 5000)
	// Gym's two-call reward recording (rollout.reward), which the generated mix does not send.
	for _, r := range []string{"0.5", "1", "0", "-1", "NaN", "Infinity"} {
		lines = append(lines, []byte(`{"event":"rollout.reward","reward":`+r+`,"dispatch_name":"math","masked":false}`))
	}
	a := benchAggregator(t)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	for _, l := range lines { // warm up: every series admitted, every buffer grown
		out, err := st.Line(l)
		require.NotEqual(t, ingest.Rejected, out, "%s: %v", l, err)
	}
	i := 0
	allocs := testing.AllocsPerRun(20000, func() {
		_, _ = st.Line(lines[i%len(lines)])
		i++
	})
	require.Zero(t, allocs, "allocations per event in steady state")
}

// BenchmarkIngest: decode + aggregate of one event of a realistic mix, one stream.
func BenchmarkIngest(b *testing.B) {
	lines := gymgen.Lines(1, 1, 10000)
	var bytesTotal int
	for _, l := range lines {
		bytesTotal += len(l) + 1
	}
	a := benchAggregator(b)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	for _, l := range lines {
		_, _ = st.Line(l)
	}
	b.SetBytes(int64(bytesTotal / len(lines)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, _ = st.Line(lines[i])
		if i++; i == len(lines) {
			i = 0
		}
	}
}

// BenchmarkIngestParallel: many streams of 16 processes at once (run with -cpu 1,2).
func BenchmarkIngestParallel(b *testing.B) {
	lines := gymgen.Lines(2, 16, 2000)
	a := benchAggregator(b)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	for _, l := range lines {
		_, _ = st.Line(l)
	}
	per := len(lines) / 16
	b.ReportAllocs()
	b.ResetTimer()
	var next int64
	var mu = make(chan struct{}, 1)
	b.RunParallel(func(pb *testing.PB) {
		mu <- struct{}{}
		p := int(next % 16)
		next++
		<-mu
		mine := lines[p*per : (p+1)*per] // this goroutine's process, resource line first
		st := newLines(a, 1<<16, events.DefaultResource("http", ""))
		i := 0
		for pb.Next() {
			_, _ = st.Line(mine[i])
			if i++; i == len(mine) {
				i = 0
			}
		}
	})
}

// BenchmarkCollect: building one collection of the state of 16 processes.
func BenchmarkCollect(b *testing.B) {
	a := benchAggregator(b)
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	for _, l := range gymgen.Lines(3, 16, 5000) {
		_, _ = st.Line(l)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = a.Collect(Scope{Name: "bench"})
	}
}
