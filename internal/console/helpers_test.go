package console

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The hand-written Gym stdout sample (testdata/console/gym_stdout.py says how it was made).
const samplePath = "../../testdata/console/gym-server-stdout.log"

// capture is a Sink that keeps everything (of the kinds in only, when it is set).
type capture struct {
	only    map[Kind]bool
	metrics []pmetric.Metrics
	traces  []ptrace.Traces
	logs    []plog.Logs
}

func (c *capture) Takes(k Kind) bool          { return c.only == nil || c.only[k] }
func (c *capture) Metrics(md pmetric.Metrics) { c.metrics = append(c.metrics, md) }
func (c *capture) Traces(td ptrace.Traces)    { c.traces = append(c.traces, td) }
func (c *capture) Logs(ld plog.Logs)          { c.logs = append(c.logs, ld) }

// totals adds up a stream's flushed counts.
type totals struct {
	accepted, skipped int64
	rejected          map[string]int64
}

func (t *totals) add(st *ingest.Stats) {
	t.accepted += st.Accepted
	t.skipped += st.Unknown
	for k, v := range st.Rejected {
		t.rejected[k] += v
	}
	st.Accepted, st.Unknown = 0, 0
	clear(st.Rejected)
}

// feed runs lines through a stream as the line reader does (Line per line, Flush at the end)
// and returns what came out, the counts and the warnings.
func feed(t testing.TB, data []byte, max int) (*capture, totals, *observer.ObservedLogs) {
	core, logs := observer.New(zap.WarnLevel)
	c := &capture{}
	s := NewLineDecoder("gym.log", max, c, ratelog.NewLogger(zap.New(core), 1000, 1<<62))
	tot := totals{rejected: map[string]int64{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		_, _ = s.Line(sc.Bytes())
	}
	require.NoError(t, sc.Err())
	tot.add(s.Flush())
	return c, tot, logs
}

func readSample(t testing.TB) []byte {
	b, err := os.ReadFile(samplePath)
	require.NoError(t, err)
	return b
}

func newObserver() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zap.WarnLevel)
	return zap.New(core), logs
}
