package procstats

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"

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

type hostSource struct{}

func (hostSource) Pids(ctx context.Context) ([]int32, error) {
	return process.PidsWithContext(ctx)
}

// Open makes no system call (unlike process.NewProcess, which checks existence and, with Go's
// os.FindProcess, may open a pidfd): the methods of the Process report a missing process.
func (hostSource) Open(pid int32) (Process, error) {
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
