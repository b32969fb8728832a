//go:build linux

package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// snapshot merges every export received so far (the metrics are cumulative: the latest
// point of a series is its state) and returns the merged state and the points' timestamps.
func snapshot(s *harness.OTLPSink) (state, []seriesTimes, int, []string) {
	exports := s.Exports()
	st := state{}
	var times []seriesTimes
	for _, md := range exports {
		times = append(times, st.merge(md)...)
	}
	return st, times, len(exports), s.Errors()
}

// TestOTLPExport sends a small stream over HTTP and checks that an otlp_http exporter delivers
// exactly the metrics the spec gives for it: names, kinds, units, temporality, bounds, values
// and resources (testdata/otlp-expected.txt, written by hand).
func TestOTLPExport(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)

	col, _ := harness.StartCollector(t, func(p harness.Ports) []string {
		return []string{harness.Config(t, "otlp.yaml", harness.Data{P: p, Sink: sink.URL()})}
	})

	bodies := harness.ReadBodies(t, filepath.Join("testdata", "otlp-stream.jsonl"))
	require.Len(t, bodies, 3)

	// The receiver's answers (docs/receiver.md, Transports).
	status, ans := col.PostEvents(t, bodies[0])
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, 22, ans.Accepted, "body 1 accepted")
	assert.Equal(t, 1, ans.Unknown, "body 1 unknown (line 22)")
	assert.Equal(t, 1, ans.Rejected, "body 1 rejected (line 23)")
	if assert.Len(t, ans.Errors, 1) {
		assert.Equal(t, 23, ans.Errors[0].Line, "line numbers count every line of the body")
		assert.Contains(t, ans.Errors[0].Error, "delta")
	}
	for i, accepted := range map[int]int{1: 11, 2: 4} {
		status, ans = col.PostEvents(t, bodies[i])
		assert.Equal(t, http.StatusOK, status, "body %d", i+1)
		assert.Equal(t, [3]int{accepted, 0, 0}, [3]int{ans.Accepted, ans.Rejected, ans.Unknown}, "body %d: accepted, rejected, unknown", i+1)
		assert.Empty(t, ans.Errors, "body %d", i+1)
	}

	// Only bad lines: 400, and nothing changes.
	status, ans = col.PostEvents(t, "{\"event\":\"sandbox.active\"}\nnot json\n")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, [3]int{0, 2, 0}, [3]int{ans.Accepted, ans.Rejected, ans.Unknown})

	data, err := os.ReadFile(filepath.Join("testdata", "otlp-expected.txt"))
	require.NoError(t, err)
	want, err := parseState(string(data))
	require.NoError(t, err)

	var got state
	var times []seriesTimes
	var n int
	var sinkErrs []string
	err = harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		got, times, n, sinkErrs = snapshot(sink)
		if got.String() != want.String() {
			return harness.ErrNotYet
		}
		return nil
	})
	require.Empty(t, sinkErrs, "OTLP sink errors")
	require.NoError(t, err, "after %d exports the metrics differ from testdata/otlp-expected.txt:\n%s",
		n, diffHint(want.String(), got.String()))
	assert.Equal(t, want.String(), got.String())

	// Timestamps: every point has one; a cumulative point has a start time before it, which
	// stays the same from one export to the next (no series restarted here).
	starts := map[string]uint64{}
	for _, p := range times {
		if !assert.NotZero(t, p.time, "time of %s", p.key) {
			continue
		}
		if !p.cumulative {
			continue
		}
		assert.NotZero(t, p.start, "start time of %s", p.key)
		assert.LessOrEqual(t, uint64(p.start), uint64(p.time), "start <= time for %s", p.key)
		if s, ok := starts[p.key]; ok {
			assert.Equal(t, s, uint64(p.start), "start time of %s changed between exports", p.key)
		} else {
			starts[p.key] = uint64(p.start)
		}
	}

	// A graceful stop exits cleanly.
	require.NoError(t, col.Stop(30*time.Second))
	assert.Contains(t, col.LogTail(1<<20), "Shutdown complete")
}

// diffHint lists the lines only in want and only in got, to read before the full diff.
func diffHint(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
