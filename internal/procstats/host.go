package procstats

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/process"
)

// hasWait: the operating systems for which gopsutil reports a process's I/O wait time.
const hasWait = runtime.GOOS == "linux"

var bootTimeCacheOnce sync.Once

// NewHostSource returns the Source of this host's processes, read with gopsutil (on Linux from
// /proc, or from $HOST_PROC when set).
//
// It turns on gopsutil's boot time cache (process-wide, as the hostmetrics receiver does): a
// process's create time is computed from the boot time, and without the cache the boot time is
// re-read for every process (on Linux, /proc/stat, whose size grows with the CPU count) and, in
// a container, recomputed from the uptime with one-second jitter, which would make a process
// look restarted.
func NewHostSource() Source {
	bootTimeCacheOnce.Do(func() { process.EnableBootTimeCache(true) })
	return hostSource{}
}

// newHostSourceAt lists processes and reads their placements from a procfs tree at root
// instead (tests: a tree of files). It leaves the boot time cache alone: its processes' create
// times are not meaningful.
func newHostSourceAt(root string) Source { return hostSource{root: root} }

type hostSource struct {
	root string // "" : gopsutil's ($HOST_PROC, else /proc)
}

func (h hostSource) Pids(ctx context.Context) ([]int32, error) {
	if h.root != "" {
		ctx = context.WithValue(ctx, common.EnvKey, common.EnvMap{common.HostProcEnvKey: h.root})
	}
	return process.PidsWithContext(ctx)
}

// Placement reads /proc/<pid>/cgroup and /proc/<pid>/status, both readable for every process
// without any capability.
func (h hostSource) Placement(_ context.Context, pid int32) (Placement, error) {
	if pid <= 0 {
		return Placement{}, fmt.Errorf("invalid pid %d: %w", pid, os.ErrNotExist)
	}
	root := h.root
	if root == "" {
		root = hostProc()
	}
	return readPlacement(root, pid)
}

// hostProc is where gopsutil reads processes: $HOST_PROC, else /proc.
func hostProc() string {
	if p := os.Getenv("HOST_PROC"); p != "" {
		return p
	}
	return "/proc"
}

// Open makes no system call (unlike process.NewProcess, which checks existence and, with Go's
// os.FindProcess, may open a pidfd): the methods of the Process report a missing process.
func (h hostSource) Open(pid int32) (Process, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("invalid pid %d: %w", pid, os.ErrNotExist)
	}
	return &hostProcess{p: &process.Process{Pid: pid}}, nil
}

func (hostSource) Hostname() (string, error) { return os.Hostname() }

// hostProcess reads one pid. gopsutil's Process caches its create time and name; both are read
// through a fresh process.Process instead, so that every call reads the operating system.
type hostProcess struct {
	p *process.Process
}

func (h *hostProcess) CreateTime(ctx context.Context) (int64, error) {
	fresh := process.Process{Pid: h.p.Pid}
	return fresh.CreateTimeWithContext(ctx)
}

func (h *hostProcess) Name(ctx context.Context) (string, error) {
	fresh := process.Process{Pid: h.p.Pid}
	return fresh.NameWithContext(ctx)
}

func (h *hostProcess) Exe(ctx context.Context) (string, error) {
	return h.p.ExeWithContext(ctx)
}

func (h *hostProcess) Cmdline(ctx context.Context) (string, error) {
	return h.p.CmdlineWithContext(ctx)
}

func (h *hostProcess) Times(ctx context.Context) (CPUTimes, error) {
	t, err := h.p.TimesWithContext(ctx)
	if err != nil {
		return CPUTimes{}, err
	}
	c := CPUTimes{User: t.User, System: t.System}
	if hasWait {
		c.Wait, c.HasWait = t.Iowait, true
	}
	return c, nil
}

func (h *hostProcess) RSS(ctx context.Context) (int64, error) {
	m, err := h.p.MemoryInfoWithContext(ctx)
	if err != nil {
		return 0, err
	}
	return int64(m.RSS), nil //nolint:gosec // a resident set size fits in int64
}

func (h *hostProcess) NumThreads(ctx context.Context) (int64, error) {
	n, err := h.p.NumThreadsWithContext(ctx)
	return int64(n), err
}

func (h *hostProcess) NumFDs(ctx context.Context) (int64, error) {
	n, err := h.p.NumFDsWithContext(ctx)
	return int64(n), err
}
