package transport

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
)

// chunks is a reader whose reads end exactly where the test says.
type chunks struct{ parts []string }

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	if n < len(c.parts[0]) {
		c.parts[0] = c.parts[0][n:]
	} else {
		c.parts = c.parts[1:]
	}
	return n, nil
}

func newTestAggregator(t *testing.T) *aggregate.Aggregator {
	t.Helper()
	reg, err := normalize.NewRegistry(nil, nil, nil)
	require.NoError(t, err)
	return aggregate.NewAggregator(aggregate.AggregatorConfig{CardinalityLimit: 2000, ExpireAfter: time.Hour, Registry: reg})
}

// providers returns provider -> create_retry count of the first resource exported.
func providers(md pmetric.Metrics) map[string]int64 {
	out := map[string]int64{}
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if ms.At(j).Name() != "gym.sandbox.create_retry_total" {
				continue
			}
			dps := ms.At(j).Sum().DataPoints()
			for k := range dps.Len() {
				v, _ := dps.At(k).Attributes().Get("nemo.gym.sandbox.provider")
				out[v.Str()] += dps.At(k).IntValue()
			}
		}
	}
	return out
}

func retry(p string) string { return `{"event":"sandbox.create_retry","provider":"` + p + `"}` }

func readChunks(t *testing.T, max int, parts ...string) (map[string]int64, *followtest.Counts) {
	t.Helper()
	agg := newTestAggregator(t)
	got := followtest.NewCounts()
	lr := newLineReader(events.NewLineDecoder(max, agg.NewSink, events.DefaultResource("tcp", "")), max, got.Record)
	require.NoError(t, lr.readFrom(&chunks{parts: parts}))
	lr.finish()
	return providers(agg.Collect(aggregate.Scope{})), got
}

func TestLineReaderBoundaries(t *testing.T) {
	a, b := retry("a"), retry("bé")  // a two-byte rune to split
	cut := strings.Index(b, "é") + 1 // inside the rune
	cases := map[string][]string{
		"read ends exactly at a newline":  {a + "\n", a + "\n", b + "\n"},
		"read ends just before a newline": {a, "\n" + a + "\n" + b, "\n"},
		"a line split in three":           {a + "\n" + a[:5], a[5:20], a[20:] + "\n" + b + "\n"},
		"a rune split across reads":       {a + "\n" + a + "\n" + b[:cut], b[cut:] + "\n"},
		"one byte at a time":              strings.Split(a+"\n"+a+"\n"+b+"\n", ""),
		"CRLF":                            {a + "\r\n" + a + "\r\n" + b + "\r\n"},
	}
	for name, parts := range cases {
		t.Run(name, func(t *testing.T) {
			got, stats := readChunks(t, 1<<16, parts...)
			assert.Equal(t, map[string]int64{"a": 2, "bé": 1}, got)
			assert.Equal(t, int64(3), stats.Accepted)
			assert.Empty(t, nonZero(stats.Rejected))
		})
	}
}

func nonZero(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func TestLineReaderLongLineSkippedToNewline(t *testing.T) {
	const max = 256
	long := `{"event":"sandbox.create_retry","provider":"` + strings.Repeat("x", 1000) + `"}`
	got, stats := readChunks(t, max, retry("a")+"\n"+long[:300], long[300:700], long[700:]+"\n"+retry("a")+"\n")
	assert.Equal(t, map[string]int64{"a": 2}, got, "the lines around the long one are kept")
	assert.Equal(t, map[string]int64{events.ReasonTooLong: 1}, nonZero(stats.Rejected))

	// A line of exactly max bytes is accepted.
	exact := `{"event":"sandbox.create_retry","provider":"` + strings.Repeat("y", max-46) + `"}`
	require.Len(t, exact, max)
	got, stats = readChunks(t, max, exact+"\n")
	assert.Equal(t, int64(1), got[strings.Repeat("y", max-46)])
	assert.Empty(t, nonZero(stats.Rejected))
}

func TestLineReaderPartialLastLine(t *testing.T) {
	got, stats := readChunks(t, 1<<16, retry("a")+"\n"+retry("a")[:10])
	assert.Equal(t, map[string]int64{"a": 1}, got)
	assert.Equal(t, map[string]int64{ReasonPartialLine: 1}, nonZero(stats.Rejected))
	// A blank tail is no line.
	_, stats = readChunks(t, 1<<16, retry("a")+"\n  \r")
	assert.Empty(t, nonZero(stats.Rejected))
}

// The buffer never grows past max+1, however the input arrives.
func TestLineReaderBoundedBuffer(t *testing.T) {
	const max = 1024
	agg := newTestAggregator(t)
	lr := newLineReader(events.NewLineDecoder(max, agg.NewSink, events.DefaultResource("tcp", "")), max, nil)
	require.NoError(t, lr.readFrom(strings.NewReader(strings.Repeat("z", 1<<20))))
	assert.LessOrEqual(t, len(lr.buf), max+1)
}

// The gym events decoder injected into each transport, as the gym receiver injects it.

func newEventsHTTPHandler(agg *aggregate.Aggregator, opts HTTPOptions, record Recorder) *HTTPHandler {
	return NewHTTPHandler(func(source string) BodyDecoder {
		return events.NewLineDecoder(opts.MaxLineBytes, agg.NewSink, events.DefaultResource(source, ""))
	}, opts, record)
}

func newEventsStreamServer(agg *aggregate.Aggregator, opts StreamOptions, record Recorder, logger *zap.Logger) *StreamServer {
	return NewStreamServer(func(network string) LineDecoder {
		return events.NewLineDecoder(opts.MaxLineBytes, agg.NewSink, events.DefaultResource(network, ""))
	}, opts, record, logger)
}

func newEventsFileTailer(agg *aggregate.Aggregator, opts FilesOptions, record Recorder, logger *zap.Logger) *FileTailer {
	return NewFileTailer(func(path string) LineDecoder {
		st := events.NewLineDecoder(opts.MaxLineBytes, agg.NewSink, events.DefaultResource("file", path))
		st.KeepResourceLine()
		return st
	}, opts, record, logger)
}
