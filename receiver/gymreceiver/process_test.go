package gymreceiver

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats/procstatstest"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadata"
)

// procReceiver builds a receiver whose process stats come from a fake host "node7".
func procReceiver(t *testing.T, src *procstatstest.Source, mod func(*Config)) *gymReceiver {
	t.Helper()
	old := newProcessSource
	newProcessSource = func() procstats.Source { return src }
	t.Cleanup(func() { newProcessSource = old })
	cfg := createDefaultConfig().(*Config)
	cfg.HTTP.GetOrInsertDefault()
	if mod != nil {
		mod(cfg)
	}
	require.NoError(t, cfg.Validate())
	r, err := newGymReceiver(receivertest.NewNopSettings(metadata.Type), cfg, new(consumertest.MetricsSink))
	require.NoError(t, err)
	return r
}

func send(t *testing.T, r *gymReceiver, lines ...string) {
	t.Helper()
	st := events.NewLineDecoder(r.cfg.MaxLineBytes, r.agg.NewSink, events.DefaultResource("http", ""))
	for _, l := range lines {
		out, err := st.Line([]byte(l))
		require.NoError(t, err)
		require.Equal(t, ingest.Accepted, out)
	}
}

type procPoint struct {
	resource map[string]any
	value    float64
	start    pcommon.Timestamp
}

// processMetrics returns name{cpu.mode} -> point for every process.* metric exported.
func processMetrics(md pmetric.Metrics) map[string]procPoint {
	out := map[string]procPoint{}
	for i := range md.ResourceMetrics().Len() {
		rm := md.ResourceMetrics().At(i)
		ms := rm.ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			if m.Type() != pmetric.MetricTypeSum {
				continue
			}
			for k := range m.Sum().DataPoints().Len() {
				dp := m.Sum().DataPoints().At(k)
				name := m.Name()
				if mode, ok := dp.Attributes().Get("cpu.mode"); ok {
					name += "{" + mode.Str() + "}"
				}
				if name[:8] != "process." {
					continue
				}
				v := dp.DoubleValue()
				if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
					v = float64(dp.IntValue())
				}
				out[name] = procPoint{resource: rm.Resource().Attributes().AsRaw(), value: v, start: dp.StartTimestamp()}
			}
		}
	}
	return out
}

func TestProcessStatsUnderTheAnnouncingResource(t *testing.T) {
	src := procstatstest.NewSource("node7")
	src.Set(4242, procstatstest.Proc{CreateTime: 1_700_000_000_000, Name: "python3", Exe: "/usr/bin/python3.12",
		CPU: procstats.CPUTimes{User: 1.5, System: 0.25, Wait: 0.125, HasWait: true}, RSS: 50 << 20, Threads: 9, FDs: 31})
	r := procReceiver(t, src, nil)
	send(t, r,
		`{"event":"resource","attributes":{"service.name":"nemo-gym/math","process.pid":4242,"host.name":"node7"}}`,
		`{"event":"sandbox.create_retry","provider":"p"}`,
		`{"event":"resource","attributes":{"service.name":"elsewhere","process.pid":4243,"host.name":"node8"}}`,
		`{"event":"resource","attributes":{"service.name":"gone","process.pid":999}}`,
	)
	assert.Equal(t, int64(1), r.agg.TakeOtherHost(), "the pid on node8 is skipped and counted")
	assert.Equal(t, []procstats.Target{{PID: 999, Key: r.agg.Announced()[0].Key}, {PID: 4242, Key: r.agg.Announced()[1].Key}}, r.agg.Announced())
	res0, err := r.procs.Scrape(context.Background(), r.agg.Announced())
	require.NoError(t, err)
	assert.Equal(t, 1, res0.Counts.NotFound, "an announced pid that is not running is counted")
	r.agg.ApplyProcesses(&res0)
	got := processMetrics(r.agg.Collect(r.scope))
	// Exactly the announced attributes: nothing learnt by the scrape is added (see
	// TestAnnouncedResourceIsTheSameInEveryExport).
	res := map[string]any{"service.name": "nemo-gym/math", "process.pid": int64(4242), "host.name": "node7"}
	start := pcommon.Timestamp(1_700_000_000_000 * 1e6)
	assert.Equal(t, map[string]procPoint{
		"process.cpu.time{user}":             {res, 1.5, start},
		"process.cpu.time{system}":           {res, 0.25, start},
		"process.cpu.time{wait}":             {res, 0.125, start},
		"process.memory.usage":               {res, 50 << 20, start},
		"process.thread.count":               {res, 9, start},
		"process.open_file_descriptor.count": {res, 31, start},
	}, got, "the process's series sit under the resource that announced its pid, starting at its create time")
}

func TestProcessReuseAndExit(t *testing.T) {
	src := procstatstest.NewSource("node7")
	src.Set(10, procstatstest.Proc{CreateTime: 1000, Name: "python3", CPU: procstats.CPUTimes{User: 5}, RSS: 1, Threads: 1, FDs: 1})
	r := procReceiver(t, src, nil)
	send(t, r, `{"event":"resource","attributes":{"service.name":"a","process.pid":10}}`, `{"event":"sandbox.create_retry","provider":"p"}`)
	r.scrapeProcesses(context.Background())
	first := processMetrics(r.agg.Collect(r.scope))
	require.Equal(t, 5.0, first["process.cpu.time{user}"].value)

	// The pid now belongs to another process: fresh series from its own create time.
	src.Set(10, procstatstest.Proc{CreateTime: 2000, Name: "python3", CPU: procstats.CPUTimes{User: 0.5}, RSS: 1, Threads: 1, FDs: 1})
	r.scrapeProcesses(context.Background())
	second := processMetrics(r.agg.Collect(r.scope))
	assert.Equal(t, 0.5, second["process.cpu.time{user}"].value)
	assert.Equal(t, pcommon.Timestamp(2000*1e6), second["process.cpu.time{user}"].start)

	// It exits: exported once more, then dropped; the resource's event series stay.
	src.Remove(10)
	r.scrapeProcesses(context.Background())
	assert.Contains(t, processMetrics(r.agg.Collect(r.scope)), "process.thread.count", "exported once more")
	md := r.agg.Collect(r.scope)
	assert.Empty(t, processMetrics(md), "then dropped")
	assert.Equal(t, 1, md.ResourceMetrics().Len(), "the resource's own series remain")
}

func TestProcessIncludeSelfHasItsOwnResource(t *testing.T) {
	src := procstatstest.NewSource("node7")
	src.Set(77, procstatstest.Proc{CreateTime: 1, Name: "worker", Cmdline: "python -m gym.worker", RSS: 3, Threads: 2, FDs: 4})
	r := procReceiver(t, src, func(c *Config) {
		c.Process.Include = []procstats.IncludeRule{{CommandLine: `gym\.worker`}}
	})
	r.scrapeProcesses(context.Background())
	got := processMetrics(r.agg.Collect(r.scope))
	require.Contains(t, got, "process.memory.usage")
	assert.Equal(t, map[string]any{"process.pid": int64(77), "process.executable.name": "worker", "host.name": "node7"}, got["process.memory.usage"].resource)
}

func TestProcessDisabledReadsNothing(t *testing.T) {
	src := procstatstest.NewSource("node7")
	src.Set(5, procstatstest.Proc{CreateTime: 1, Name: "x", RSS: 1})
	r := procReceiver(t, src, func(c *Config) { c.Process.Enabled = false })
	assert.Nil(t, r.procs)
	send(t, r, `{"event":"resource","attributes":{"process.pid":5}}`, `{"event":"sandbox.create_retry","provider":"p"}`)
	assert.Empty(t, r.agg.Announced())
}

// A resource's attributes never change: an announced process is exported under exactly the
// attributes it announced, before its stats are read and after, so one process is one resource
// and one set of series.
func TestAnnouncedResourceIsTheSameInEveryExport(t *testing.T) {
	src := procstatstest.NewSource("node7")
	src.Set(4242, procstatstest.Proc{CreateTime: 1_700_000_000_000, Name: "python3", Exe: "/usr/bin/python3.12", RSS: 1 << 20, Threads: 3, FDs: 5})
	r := procReceiver(t, src, nil)
	send(t, r,
		`{"event":"resource","attributes":{"service.name":"nemo-gym/math","process.pid":4242}}`,
		`{"event":"sandbox.create_retry","provider":"p"}`,
	)
	resources := func(md pmetric.Metrics) []map[string]any {
		var out []map[string]any
		for i := range md.ResourceMetrics().Len() {
			out = append(out, md.ResourceMetrics().At(i).Resource().Attributes().AsRaw())
		}
		return out
	}
	announced := map[string]any{"service.name": "nemo-gym/math", "process.pid": int64(4242)}
	before := resources(r.agg.Collect(r.scope)) // the first export: stats not read yet
	require.Equal(t, []map[string]any{announced}, before)
	res, err := r.procs.Scrape(context.Background(), r.agg.Announced())
	require.NoError(t, err)
	r.agg.ApplyProcesses(&res)
	send(t, r, `{"event":"resource","attributes":{"service.name":"nemo-gym/math","process.pid":4242}}`,
		`{"event":"sandbox.create_retry","provider":"p"}`)
	after := resources(r.agg.Collect(r.scope))
	assert.Equal(t, []map[string]any{announced}, after, "the same resource in every export")
}

// Gym processes in containers announce the pid and host name their container gives them
// (two containers' pid 1, each in a pod named after itself): each is found on the host by its
// container (container.id, k8s.pod.uid), read, and its stats exported under its own resource.
func TestProcessStatsOfContainers(t *testing.T) {
	const (
		gymA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		gymB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
		podB = "0e3c62a6-8f0d-4a37-9a6b-2c1f3e4d5a6b"
	)
	src := procstatstest.NewSource("node7")
	src.Set(1, procstatstest.Proc{CreateTime: 1, Name: "systemd", RSS: 1, Threads: 1, FDs: 1}) // the host's pid 1
	src.Set(5001, procstatstest.Proc{CreateTime: 5001_000, Name: "python3", RSS: 5001, Threads: 1, FDs: 1,
		Cgroups: []string{"/kubepods/burstable/pod0c5e0f3a-1b2c-4d5e-8f90-a1b2c3d4e5f6/" + gymA}, NSpid: []int32{5001, 1}})
	src.Set(6001, procstatstest.Proc{CreateTime: 6001_000, Name: "python3", RSS: 6001, Threads: 1, FDs: 1,
		Cgroups: []string{"/kubepods.slice/kubepods-pod" + strings.ReplaceAll(podB, "-", "_") + ".slice/cri-containerd-" + gymB + ".scope"}, NSpid: []int32{6001, 1}})
	r := procReceiver(t, src, nil)
	send(t, r,
		`{"event":"resource","attributes":{"service.name":"a","process.pid":1,"host.name":"gym-a-0","container.id":"`+gymA+`"}}`,
		`{"event":"sandbox.create_retry","provider":"p"}`,
		`{"event":"resource","attributes":{"service.name":"b","process.pid":1,"host.name":"gym-b-0","k8s.pod.uid":"`+podB+`"}}`,
		`{"event":"sandbox.create_retry","provider":"p"}`,
	)
	assert.Zero(t, r.agg.TakeOtherHost(), "a container's host.name is its own, not another node")
	require.Len(t, r.agg.Announced(), 2)
	r.scrapeProcesses(context.Background())
	md := r.agg.Collect(r.scope)
	rss := map[string]float64{}
	for i := range md.ResourceMetrics().Len() {
		rm := md.ResourceMetrics().At(i)
		name, _ := rm.Resource().Attributes().Get("service.name")
		if p, ok := processMetrics(onlyResource(md, i))["process.memory.usage"]; ok {
			rss[name.Str()] = p.value
			assert.Equal(t, int64(1), p.resource["process.pid"], "the announced pid stays the resource's")
		}
	}
	assert.Equal(t, map[string]float64{"a": 5001, "b": 6001}, rss, "each container's process, not the host's pid 1")
}

// onlyResource is md with the i-th resource alone.
func onlyResource(md pmetric.Metrics, i int) pmetric.Metrics {
	out := pmetric.NewMetrics()
	md.ResourceMetrics().At(i).CopyTo(out.ResourceMetrics().AppendEmpty())
	return out
}
