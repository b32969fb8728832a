package aggregate

import (
	"fmt"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/gymgen"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
)

// stateFixture feeds an aggregator every kind of series: the generator's mix of events over
// several processes (counters, up-down sums, gauges, histograms, snapshot totals), an
// instrument past its cardinality limit (overflow), an included process's stats (double sums
// with their own start time) and a retired resource.
func stateFixture(t *testing.T) (*Aggregator, *testClock) {
	t.Helper()
	a, c := newTestAggregator(t, 4)
	a.cfg.TrackPIDs, a.cfg.Hostname = true, "node7"
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	for _, l := range gymgen.Lines(7, 3, 400) {
		_, _ = st.Line(l)
	}
	for i := range 6 {
		feed(t, st, fmt.Sprintf(`{"event":"sandbox.create_retry","provider":"p%d"}`, i))
	}
	feed(t, st,
		`{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"i","process.pid":11}}`,
		`{"event":"sandbox.active","provider":"docker","delta":1}`,
		`{"event":"sandbox.active","provider":"docker","delta":1}`,
		`{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"i","process.pid":12}}`,
		`{"event":"sandbox.active","provider":"docker","delta":1}`,
		// snapshot totals past the cardinality limit: folded into the overflow series
		`{"event":"server.requests","in_flight":1,"unhandled_exceptions":0,"responses":{"200":5,"201":6,"202":7,"203":8,"204":9,"205":10}}`,
		// the events of Gym's newer releases: snapshot gauges and counters, a ratio gauge
		`{"event":"concurrency.limits","limits":[{"component":"model_server","limit_name":"max_requests","limit":64,"active":60,"queue_depth":12,"admission_timeouts":3,"admission_cancelled":1}]}`,
		`{"event":"model_call","server_name":"policy","dialect":"chat","outcome":"ok","duration_ms":120,"tokens":{"input":10},"finish_reason":"stop"}`,
		`{"event":"memory.sample","servers":[{"server_name":"math","server_type":"resources_servers","pid":4243,"rss":100,"rss_peak":150,"processes":3}],"host":{"usage":1,"available":2,"total":3,"peak":1}}`,
		`{"event":"verify","duration_ms":230.5,"completed":true}`,
		`{"event":"verify","completed":false}`,
	)
	a.ApplyProcesses(&procstats.Result{Readings: []procstats.Reading{{
		PID: 77, CreateTime: 1_600_000_000_000, ExecutableName: "python3", New: true,
		HasCPU: true, CPU: procstats.CPUTimes{User: 1.25, System: 0.5}, HasRSS: true, RSS: 1 << 20,
	}}})
	c.advance(time.Second)
	return a, c
}

func restoredCopy(t *testing.T, state []byte, c *testClock) *Aggregator {
	t.Helper()
	reg, err := normalize.NewRegistry(nil, nil, nil)
	require.NoError(t, err)
	b := NewAggregator(AggregatorConfig{CardinalityLimit: 4, ExpireAfter: 5 * time.Minute, Registry: reg, TrackPIDs: true, Hostname: "node7"})
	b.setClock(c.Fake)
	require.NoError(t, b.RestoreState(state))
	return b
}

// A restored aggregator is the saved one: the same export, start times included, and the same
// export again after the same further lines (series go on, nothing restarts).
func TestStateRoundTrip(t *testing.T) {
	a, c := stateFixture(t)
	state := a.AppendState(nil)
	b := restoredCopy(t, state, c)
	assert.Equal(t, a.Len(), b.Len())
	require.NoError(t, pmetrictest.CompareMetrics(a.Collect(Scope{}), b.Collect(Scope{}), pmetrictest.IgnoreResourceMetricsOrder()))

	more := []string{
		`{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"i","process.pid":12}}`,
		`{"event":"sandbox.active","provider":"docker","delta":-1}`,
		`{"event":"sandbox.create_retry","provider":"p9"}`,
		`{"event":"server.requests","in_flight":1,"unhandled_exceptions":0,"responses":{"200":6,"201":6,"202":7,"203":9,"204":9,"205":11}}`,
	}
	feed(t, newLines(a, 1<<16, events.DefaultResource("http", "")), more...)
	feed(t, newLines(b, 1<<16, events.DefaultResource("http", "")), more...)
	c.advance(time.Second)
	require.NoError(t, pmetrictest.CompareMetrics(a.Collect(Scope{}), b.Collect(Scope{}), pmetrictest.IgnoreResourceMetricsOrder()))
	assert.Equal(t, a.AppendState(nil), b.AppendState(nil), "and the same state")
}

// The state a collection saves is what remains after it (the retired resource, exported for
// the last time, is gone) and restores to the same next export.
func TestCollectWithState(t *testing.T) {
	a, c := stateFixture(t)
	var state []byte
	a.CollectWithState(Scope{}, &state)
	b := restoredCopy(t, state, c)
	assert.Equal(t, a.Len(), b.Len())
	c.advance(time.Second)
	require.NoError(t, pmetrictest.CompareMetrics(a.Collect(Scope{}), b.Collect(Scope{}), pmetrictest.IgnoreResourceMetricsOrder()))
}

// A damaged state is an error, never a panic, and leaves the aggregator empty.
func TestStateDamaged(t *testing.T) {
	a, c := stateFixture(t)
	state := a.AppendState(nil)
	reg, err := normalize.NewRegistry(nil, nil, nil)
	require.NoError(t, err)
	for n := 0; n < len(state); n += 1 + n/64 {
		b := NewAggregator(AggregatorConfig{CardinalityLimit: 4, Registry: reg})
		b.setClock(c.Fake)
		require.Error(t, b.RestoreState(state[:n]), "cut at %d", n)
		assert.Zero(t, b.Len())
	}
	for i := 0; i < len(state); i += 1 + i/32 {
		bad := append([]byte(nil), state...)
		bad[i] ^= 0xa5
		b := NewAggregator(AggregatorConfig{CardinalityLimit: 4, Registry: reg})
		b.setClock(c.Fake)
		if b.RestoreState(bad) != nil {
			assert.Zero(t, b.Len(), "flipped at %d", i)
		}
	}
}

// BenchmarkCheckpoint100kSeries: the state of 100,000 series (100 resources of 1,000
// histogram series each, the costliest kind, and 1,000 counter series each) encoded and
// restored; reports the bytes.
func BenchmarkCheckpoint100kSeries(b *testing.B) {
	a := benchStateAggregator(b)
	var state []byte
	b.Run("save", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			state = a.AppendState(state[:0])
		}
		b.ReportMetric(float64(len(state)), "bytes")
		b.ReportMetric(float64(len(state))/float64(benchSeries), "bytes/series")
	})
	b.Run("restore", func(b *testing.B) {
		reg, _ := normalize.NewRegistry(nil, nil, nil)
		b.ReportAllocs()
		for b.Loop() {
			c := NewAggregator(AggregatorConfig{CardinalityLimit: 2000, Registry: reg})
			if err := c.RestoreState(state); err != nil {
				b.Fatal(err)
			}
		}
	})
}

const benchSeries = 100_000

func benchStateAggregator(b *testing.B) *Aggregator {
	reg, _ := normalize.NewRegistry(nil, nil, nil)
	a := NewAggregator(AggregatorConfig{CardinalityLimit: 2000, Registry: reg})
	st := newLines(a, 1<<16, events.DefaultResource("http", ""))
	for p := range 50 {
		if _, err := st.Line(fmt.Appendf(nil, `{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"r%d","process.pid":%d}}`, p, 1000+p)); err != nil {
			b.Fatal(err)
		}
		for i := range benchSeries / 50 / 2 {
			for _, l := range [][]byte{
				fmt.Appendf(nil, `{"event":"event_loop.lag","loop":"loop-%d","lag_ms":%d.5}`, i, i%40),
				fmt.Appendf(nil, `{"event":"sandbox.create_retry","provider":"provider-%d"}`, i),
			} {
				if out, err := st.Line(l); out != ingest.Accepted {
					b.Fatalf("%s: %v", l, err)
				}
			}
		}
	}
	md := a.Collect(Scope{})
	if n := md.DataPointCount(); n != benchSeries {
		b.Fatalf("%d series, not %d", n, benchSeries)
	}
	return a
}

// BenchmarkCollect100kSeries: a collection of 100,000 series without and with its checkpoint
// (side by side: what storage adds to each collection).
func BenchmarkCollect100kSeries(b *testing.B) {
	a := benchStateAggregator(b)
	b.Run("export", func(b *testing.B) {
		for b.Loop() {
			a.Collect(Scope{})
		}
	})
	var state []byte
	b.Run("export+checkpoint", func(b *testing.B) {
		for b.Loop() {
			a.CollectWithState(Scope{}, &state)
		}
	})
}

// A pid announced in a container is announced in that container again after a restore (the
// container is not stored: it is read back from the resource's attributes).
func TestStateKeepsTheContainerOfAPid(t *testing.T) {
	a, c := stateFixture(t)
	feed(t, newLines(a, 1<<16, events.DefaultResource("http", "")),
		`{"event":"resource","attributes":{"service.name":"gym-pod","process.pid":1,"host.name":"gym-pod-0","container.id":"0123456789abcdef"}}`,
		`{"event":"sandbox.active","provider":"docker","delta":1}`,
	)
	inContainers := func(ts []procstats.Target) []procstats.Target {
		var out []procstats.Target
		for _, t := range ts {
			if !t.In.IsZero() {
				out = append(out, t)
			}
		}
		return out
	}
	want := inContainers(a.Announced())
	require.Len(t, want, 1)
	assert.Equal(t, procstats.Target{PID: 1, Key: want[0].Key, In: procstats.Container{ID: "0123456789abcdef"}}, want[0])
	b := restoredCopy(t, a.AppendState(nil), c)
	assert.Equal(t, want, inContainers(b.Announced()))
}
