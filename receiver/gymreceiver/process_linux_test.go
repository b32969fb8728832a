//go:build linux

package gymreceiver

import (
	"context"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/gym-telemetry/otelcol-gym/internal/procstats/procstatstest"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadata"
)

// TestProcessStatsOfARealContainer: a Gym process in a container as the agent DaemonSet meets
// it, for real: pid 1 of a pid namespace of its own, in a cgroup named by its container id,
// announcing that pid, the container's host name and its container.id. The receiver reads it
// from the host's /proc. Needs root (a pid namespace, a cgroup made for the test).
func TestProcessStatsOfARealContainer(t *testing.T) {
	const id = "9a7b0c1d2e3f40516273849a5b6c7d8e9f00112233445566778899aabbccddee"
	cgroup := procstatstest.ContainerCgroup(t, "docker-"+id+".scope")
	child := exec.Command("sleep", "300")
	child.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, child.Start())
	t.Cleanup(func() { // registered last: runs before the cgroup is removed
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	procstatstest.EnterCgroup(t, cgroup, child.Process.Pid)

	cfg := createDefaultConfig().(*Config)
	cfg.HTTP.GetOrInsertDefault()
	require.True(t, cfg.Process.Enabled)
	require.NoError(t, cfg.Validate())
	r, err := newGymReceiver(receivertest.NewNopSettings(metadata.Type), cfg, new(consumertest.MetricsSink))
	require.NoError(t, err)
	send(t, r,
		`{"event":"resource","attributes":{"service.name":"gym-pod","process.pid":1,"host.name":"gym-pod-0","container.id":"`+id+`"}}`,
		`{"event":"sandbox.create_retry","provider":"p"}`,
	)
	r.scrapeProcesses(context.Background())
	got := processMetrics(r.agg.Collect(r.scope))
	require.Contains(t, got, "process.memory.usage", "the container's process is read")
	assert.Equal(t, map[string]any{"service.name": "gym-pod", "process.pid": int64(1), "host.name": "gym-pod-0", "container.id": id},
		got["process.memory.usage"].resource)
	assert.Equal(t, 1.0, got["process.thread.count"].value, "sleep's one thread, not the host's pid 1")
	assert.Zero(t, r.agg.TakeOtherHost())
}
