//go:build linux

package procstats_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats/procstatstest"
)

// TestHostPermission reads a process of another user for real: run unprivileged, it reads pid 1;
// run as root, it starts a helper and reads it from a copy of this test run as nobody.
func TestHostPermission(t *testing.T) {
	var out struct {
		Readings []procstats.Reading
		Errors   []string
		Kinds    []procstats.ErrorKind
		Counts   procstats.Counts
	}
	pid := int32(1)
	if os.Geteuid() != 0 {
		var st syscall.Stat_t
		if err := syscall.Stat("/proc/1", &st); err != nil || int(st.Uid) == os.Geteuid() {
			t.Skip("no pid 1 of another user")
		}
		s, err := procstats.NewScraper(procstats.NewHostSource(), procstats.Options{})
		require.NoError(t, err)
		res, err := s.Scrape(context.Background(), []procstats.Target{{PID: pid, Key: "k"}})
		require.NoError(t, err)
		out.Readings, out.Counts = res.Readings, res.Counts
		out.Errors = errorStrings(res)
	} else {
		h := startHelper(t, 1, 1)
		pid = h.pid
		dir, err := os.MkdirTemp("", "procstats-perm-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		require.NoError(t, os.Chmod(dir, 0o755))
		bin := filepath.Join(dir, "procstats.test")
		data, err := os.ReadFile(h.executable)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(bin, data, 0o755)) //nolint:gosec // a test binary, run as nobody
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", scrapeEnv, pid))
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Stderr = os.Stderr
		stdout, err := cmd.Output()
		if err != nil {
			t.Skipf("cannot run as nobody: %v", err)
		}
		require.NoError(t, json.Unmarshal(stdout, &out))
	}
	t.Logf("%+v", out)
	require.Len(t, out.Readings, 1, "stat, statm and status of another user's process are readable")
	r := out.Readings[0]
	assert.True(t, r.HasCPU)
	assert.True(t, r.HasRSS)
	assert.True(t, r.HasThreads)
	assert.False(t, r.HasFDs)
	assert.NotEmpty(t, r.ExecutableName, "the process name stands in for the unreadable executable")
	assert.Equal(t, procstats.Counts{Permission: 1}, out.Counts)
	assert.Equal(t, []procstats.ErrorKind{procstats.KindPermission}, out.Kinds)
	assert.Equal(t, []string{fmt.Sprintf("pid %d (%s): permission denied reading fds", pid, r.ExecutableName)}, out.Errors)
}

// TestHostFindsAProcessInAContainer reads a real process the way the agent DaemonSet meets a
// Gym container's: pid 1 of a pid namespace of its own, in a cgroup named by its container id.
// It needs root (a new pid namespace, a cgroup made for the test).
func TestHostFindsAProcessInAContainer(t *testing.T) {
	const id = "7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de"
	cgroup := procstatstest.ContainerCgroup(t, "cri-containerd-"+id+".scope")
	h := startHelperWith(t, 2, 3, func(c *exec.Cmd) {
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	})
	procstatstest.EnterCgroup(t, cgroup, int(h.pid))

	s, err := procstats.NewScraper(procstats.NewHostSource(), procstats.Options{})
	require.NoError(t, err)
	target := procstats.Target{PID: 1, Key: "gym", In: procstats.Container{ID: id}}
	res, err := s.Scrape(context.Background(), []procstats.Target{target})
	require.NoError(t, err)
	assert.Empty(t, res.Errors)
	require.Len(t, res.Readings, 1)
	r := res.Readings[0]
	assert.Equal(t, int32(1), r.PID, "the pid as the container numbers it")
	assert.Equal(t, h.pid, r.HostPID)
	assert.Equal(t, filepath.Base(h.executable), r.ExecutableName)
	assert.GreaterOrEqual(t, r.Threads, int64(3))
	assert.GreaterOrEqual(t, r.FDs, int64(3+3))

	// The host's pid 1 is another process: announced without its container, pid 1 is init.
	res, err = s.Scrape(context.Background(), []procstats.Target{{PID: 1, Key: "host"}})
	require.NoError(t, err)
	require.Len(t, res.Readings, 1)
	assert.NotEqual(t, filepath.Base(h.executable), res.Readings[0].ExecutableName)

	h.stop(t)
	res, err = s.Scrape(context.Background(), []procstats.Target{target})
	require.NoError(t, err)
	assert.Empty(t, res.Readings)
	assert.Equal(t, procstats.Counts{NotFound: 1}, res.Counts)
}
