//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The Python emitter's recorders of Gym's newer releases (model calls, MeteredSemaphore,
// nemo-lens, the memory sampler) through the real binary: testdata/gym_today_sim.py is a Gym
// model server over HTTP; what the OTLP sink receives is checked against the values its calls
// imply, computed by hand (the script's docstring).

func TestPythonEmitterGymToday(t *testing.T) {
	t.Parallel()
	python := harness.Python(t)
	sink := harness.NewOTLPSink(t)
	col, ports := harness.StartCollector(t, func(p harness.Ports) []string {
		return []string{harness.Config(t, "python-gymtoday.yaml", harness.Data{P: p, Sink: sink.URL()})}
	})
	out := runGymSim(t, python, "gym_today_sim.py",
		"GYM_HTTP="+fmt.Sprintf("http://127.0.0.1:%d", ports.Gym),
		"OTELCOL_GYM_MEMORY_PROFILING=true",
	)
	st := emitterStats(t, "the model server", bytes.TrimSpace(out))
	require.Equal(t, 1.0, st["memory_registered"], "the memory sampler runs on this machine's /proc")
	child := int64(st["child_pid"])

	const svc = "nemo-gym/policy"
	pol := "nemo.gym.model_call.dialect=responses,nemo.gym.server.name=policy"
	lim := "nemo.gym.concurrency.component=model_server,nemo.gym.concurrency.limit_name=max_requests,nemo.gym.server.name=policy"
	wants := map[string]map[string]string{
		"gym.model_call.duration_ms": {
			"nemo.gym.model_call.dialect=responses,nemo.gym.model_call.outcome=ok,nemo.gym.server.name=policy":           "3/2500",
			"nemo.gym.model_call.dialect=responses,nemo.gym.model_call.outcome=rate_limited,nemo.gym.server.name=policy": "1/40",
			"nemo.gym.model_call.dialect=unknown,nemo.gym.model_call.outcome=ok,nemo.gym.server.name=unknown":            "1/20",
		},
		"gym.model_call.ttft_ms": {pol: "2/200"},
		"gym.model_call.tokens": {
			"nemo.gym.model_call.dialect=responses,nemo.gym.model_call.token.type=input,nemo.gym.server.name=policy":     "3/600",
			"nemo.gym.model_call.dialect=responses,nemo.gym.model_call.token.type=output,nemo.gym.server.name=policy":    "3/60",
			"nemo.gym.model_call.dialect=responses,nemo.gym.model_call.token.type=reasoning,nemo.gym.server.name=policy": "1/5",
		},
		"gym.model_call.finish_total": {
			"nemo.gym.model_call.dialect=responses,nemo.gym.model_call.finish_reason=stop,nemo.gym.server.name=policy":   "2",
			"nemo.gym.model_call.dialect=responses,nemo.gym.model_call.finish_reason=length,nemo.gym.server.name=policy": "1",
		},
		"gym.concurrency.limit":                     {lim: "2"},
		"gym.concurrency.active":                    {lim: "0"},
		"gym.concurrency.available":                 {lim: "2"},
		"gym.concurrency.queue_depth":               {lim: "0"},
		"gym.concurrency.admission_timeouts_total":  {lim: "1"},
		"gym.concurrency.admission_cancelled_total": {lim: "1"},
		"gym.rollout.duration_ms":                   {"": "2/5000"},
		"gym.verify.duration_ms":                    {"": "2/400"},
		"gym.verify.success_rate":                   {"": fmt.Sprintf("%g", 2.0/3)},
		"gym.servers.active":                        {"": "2"},
	}
	err := harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		md := latestOf(sink.Exports(), svc)
		for name, want := range wants {
			if got := values(pyPoints(md, svc, name)); !maps.Equal(got, want) {
				return fmt.Errorf("%s: got %v, want %v", name, got, want)
			}
		}
		return nil
	})
	require.NoError(t, err)

	// Memory: the child's tree, and the host; values are the machine's, so bounds only.
	md := latestOf(sink.Exports(), svc)
	server := fmt.Sprintf("nemo.gym.server.name=math,nemo.gym.server.type=resources_servers,process.pid=%d", child)
	usage := values(pyPoints(md, svc, "gym.server.memory.usage"))
	var rss float64
	_, err = fmt.Sscan(usage["memory.type=rss,"+server], &rss)
	require.NoError(t, err, "the child's RSS: %v", usage)
	assert.Greater(t, rss, float64(8<<20), "the child holds 8 MiB")
	assert.Less(t, rss, float64(1<<30))
	procs := values(pyPoints(md, svc, "gym.server.processes"))
	assert.Equal(t, "1", procs[server], "%v", procs)
	var total, avail float64
	_, err = fmt.Sscan(values(pyPoints(md, svc, "gym.host.memory.total"))[""], &total)
	require.NoError(t, err)
	_, err = fmt.Sscan(values(pyPoints(md, svc, "gym.host.memory.available"))[""], &avail)
	require.NoError(t, err)
	assert.Greater(t, total, float64(64<<20))
	assert.LessOrEqual(t, avail, total)
	for k := range usage {
		assert.True(t, strings.HasPrefix(k, "memory.type=rss,") || strings.HasPrefix(k, "memory.type=pss,"), k)
	}

	// Every instrument of those groups that events feed came from this process.
	for _, in := range schema.Instruments {
		if in.Source == "events" && gymTodayGroups[in.Group] {
			assert.NotEmpty(t, pyPoints(md, svc, in.Name), "%s: nothing from the Python process", in.Name)
		}
	}
	require.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))
}
