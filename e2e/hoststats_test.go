//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// Host process stats through the real binary: a pid announced in a resource line
// has its process metrics exported under that resource.

// procMetric is one process.* point as exported.
type procMetric struct {
	kind, unit string // counter, updown, ...
	value      float64
	start, ts  pcommon.Timestamp
}

// processMetricsOf returns the process.* points of the resources of md that match, keyed by
// name (process.cpu.time by name{cpu.mode}), and the attributes of the resource that held
// them.
func processMetricsOf(md pmetric.Metrics, match func(pcommon.Map) bool) (map[string]procMetric, pcommon.Map) {
	out := map[string]procMetric{}
	res := pcommon.NewMap()
	for _, rm := range md.ResourceMetrics().All() {
		if !match(rm.Resource().Attributes()) {
			continue
		}
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if len(m.Name()) < 8 || m.Name()[:8] != "process." {
					continue
				}
				res = rm.Resource().Attributes()
				if m.Type() != pmetric.MetricTypeSum {
					out[m.Name()] = procMetric{kind: m.Type().String()}
					continue
				}
				for _, dp := range m.Sum().DataPoints().All() {
					name := m.Name()
					if mode, ok := dp.Attributes().Get("cpu.mode"); ok {
						name += "{" + mode.Str() + "}"
					}
					out[name] = procMetric{kind: sumKind(m.Sum()), unit: m.Unit(), value: numberOf(dp), start: dp.StartTimestamp(), ts: dp.Timestamp()}
				}
			}
		}
	}
	return out, res
}

// TestProcessStats starts a sleeping child process holding one extra open file, announces
// its pid in a resource line with one event, and checks that its process metrics come out
// under that resource with their units, plausible values and the process's start time; then
// kills it: its process metrics are exported once more, then no more, while the resource's
// event series stay.
func TestProcessStats(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	col, ports := harness.StartCollector(t, func(p harness.Ports) []string {
		return []string{harness.Config(t, "hoststats.yaml", harness.Data{P: p, Sink: sink.URL()})}
	})

	extra, err := os.Create(filepath.Join(t.TempDir(), "held-open"))
	require.NoError(t, err)
	defer extra.Close()
	child := exec.Command("sleep", "300")
	child.ExtraFiles = []*os.File{extra} // fds 0, 1, 2 and 3
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := time.Now()
	require.NoError(t, child.Start())
	exited := make(chan struct{})
	go func() {
		_ = child.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = child.Process.Kill()
		<-exited
	})
	pid := child.Process.Pid

	const name = "e2e-procstats"
	status, ans := col.PostEvents(t, fmt.Sprintf(`{"event":"resource","attributes":{"service.name":%q,"process.pid":%d}}
{"event":"rollout.completed","outcome":"omitted","dispatch_name":"math"}
`, name, pid))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 2, ans.Accepted)

	var got map[string]procMetric
	var res pcommon.Map
	err = harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		exports := sink.Exports()
		if len(exports) == 0 {
			return harness.ErrNotYet
		}
		got, res = processMetricsOf(exports[len(exports)-1], service(name))
		if len(got) < 5 {
			return fmt.Errorf("process metrics so far: %v", got)
		}
		return nil
	})
	require.NoError(t, err)

	announced := map[string]any{"service.name": name, "process.pid": int64(pid)}
	assert.Equal(t, announced, res.AsRaw(), "the resource: exactly the announcing one")
	// The same resource in every export, before the stats were read and after: one process,
	// one resource, one set of series.
	for i, md := range sink.Exports() {
		for _, rm := range md.ResourceMetrics().All() {
			if service(name)(rm.Resource().Attributes()) {
				assert.Equal(t, announced, rm.Resource().Attributes().AsRaw(), "export %d", i)
			}
		}
	}

	for _, mode := range []string{"user", "system"} {
		m, ok := got["process.cpu.time{"+mode+"}"]
		if assert.True(t, ok, "process.cpu.time{cpu.mode=%s} in %v", mode, got) {
			assert.Equal(t, "counter", m.kind)
			assert.Equal(t, "s", m.unit)
			assert.GreaterOrEqual(t, m.value, 0.0)
			assert.Less(t, m.value, 5.0, "a sleeping process uses next to no CPU")
		}
	}
	if m, ok := got["process.cpu.time{wait}"]; ok {
		assert.Equal(t, "s", m.unit)
		assert.GreaterOrEqual(t, m.value, 0.0)
	}
	mem := got["process.memory.usage"]
	assert.Equal(t, "updown", mem.kind)
	assert.Equal(t, "By", mem.unit)
	rss, err := vmRSS(pid)
	require.NoError(t, err)
	assert.Greater(t, mem.value, 64.0*1024, "resident set of sleep")
	assert.InDelta(t, float64(rss), mem.value, float64(rss), "RSS %d bytes in /proc, %v exported", rss, mem.value)
	threads := got["process.thread.count"]
	assert.Equal(t, "updown", threads.kind)
	assert.Equal(t, "{thread}", threads.unit)
	assert.Equal(t, 1.0, threads.value, "sleep has one thread")
	fds := got["process.open_file_descriptor.count"]
	assert.Equal(t, "updown", fds.kind)
	assert.Equal(t, "{file_descriptor}", fds.unit)
	// What /proc says: 0, 1, 2, the file held open, and whatever this test binary inherited
	// without close-on-exec. Read until both agree: right after exec the kernel may still be
	// closing the parent's close-on-exec descriptors.
	var open int
	err = harness.Eventually(10*time.Second, 100*time.Millisecond, func() error {
		entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return err
		}
		open = len(entries)
		if pm, _ := processMetricsOf(sink.Exports()[sink.Count()-1], service(name)); pm["process.open_file_descriptor.count"].value != float64(open) {
			return harness.ErrNotYet
		}
		return nil
	})
	assert.GreaterOrEqual(t, open, 4, "stdin, stdout, stderr and the file held open")
	assert.NoError(t, err, "process.open_file_descriptor.count %v, /proc/%d/fd has %d entries", fds.value, pid, open)

	// The series start at the process's create time (/proc: clock ticks after boot, boot
	// time in whole seconds: a few seconds of slack).
	for k, m := range got {
		assert.InDelta(t, float64(started.UnixNano()), float64(m.start), float64(3*time.Second), "start time of %s", k)
		assert.LessOrEqual(t, uint64(m.start), uint64(m.ts), "start <= time for %s", k)
	}
	events, _ := completed(sink.Exports()[sink.Count()-1], service(name))
	assert.Equal(t, 1.0, events, "the event beside the process metrics")

	// The process ends: exported once more, then dropped; the event series stay.
	require.NoError(t, child.Process.Kill())
	<-exited
	killedAt := sink.Count()
	var after []pmetric.Metrics
	err = harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
		after = sink.Exports()[killedAt:]
		for i, md := range after {
			if pm, _ := processMetricsOf(md, service(name)); len(pm) == 0 && i > 0 {
				return nil
			}
		}
		return harness.ErrNotYet
	})
	require.NoError(t, err, "the process metrics of a process that ended are dropped")
	// A few more collections, to see they stay away.
	sink.WaitMore(t, 3)
	after = sink.Exports()[killedAt:]
	gone := -1
	for i, md := range after {
		pm, _ := processMetricsOf(md, service(name))
		if gone < 0 && len(pm) == 0 {
			gone = i
		}
		if gone >= 0 {
			assert.Empty(t, pm, "export %d after the kill: process metrics came back", i)
		}
		v, ok := completed(md, service(name))
		assert.True(t, ok && v == 1, "export %d after the kill: the resource's event series stay", i)
	}
	assert.Positive(t, gone, "the process metrics are exported at least once after the process ended")
	assert.Positive(t, harness.TelemetryValue(t, ports, "otelcol_receiver_gym_process_errors", "kind", "not_found"),
		"the announced pid that is gone is counted as not_found")
	require.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))
}
