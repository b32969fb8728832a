//go:build linux

package procstatstest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ContainerCgroup makes a cgroup named as a container runtime names a container's (scope:
// docker-ID.scope, cri-containerd-ID.scope) in a directory of the test's own, removed at the
// end of the test. It skips the test without root or a writable cgroup hierarchy.
func ContainerCgroup(t testing.TB, scope string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a pid namespace and a cgroup of its own need root")
	}
	for _, dir := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		d := filepath.Join(dir, fmt.Sprintf("otelcol-gym-test-%d", os.Getpid()), scope)
		if err := os.MkdirAll(d, 0o755); err == nil {
			t.Cleanup(func() { // after the processes moved in are gone (cleanups run last first)
				_ = os.Remove(d)
				_ = os.Remove(filepath.Dir(d))
			})
			return d
		}
	}
	t.Skip("no writable cgroup hierarchy")
	return ""
}

// EnterCgroup moves process pid into cgroup, or skips the test.
func EnterCgroup(t testing.TB, cgroup string, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(cgroup, "cgroup.procs"), []byte(fmt.Sprint(pid)), 0o644); err != nil {
		t.Skipf("cannot move a process into a cgroup: %v", err)
	}
}
