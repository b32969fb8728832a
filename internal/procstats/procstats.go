// Package procstats reads host process statistics (CPU time, resident memory, threads, open
// file descriptors) of the processes the gym receiver is told to watch: pids announced in Gym
// `resource` lines, processes matched by include rules, and optionally the collector itself.
//
// It only reads: turning readings into metrics, resources and exports is the receiver's job.
// The operating system is reached through the small Source/Process interfaces; NewHostSource
// implements them with github.com/shirou/gopsutil/v4, and tests substitute a fake.
package procstats

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/shirou/gopsutil/v4/process"
)

// Process is one running process, found by pid. Every method reads the operating system afresh
// (nothing is cached), so a Process stays usable across scrapes: CreateTime tells whether the pid
// still belongs to the same process.
//
// Errors should satisfy errors.Is(err, os.ErrNotExist) when the process does not exist (any
// more) and errors.Is(err, os.ErrPermission) when reading is not allowed; see Classify.
type Process interface {
	// CreateTime is the process's start time in milliseconds since the Unix epoch.
	CreateTime(ctx context.Context) (int64, error)
	// Name is the process name (Linux: /proc/<pid>/comm, completed from the command line when
	// the kernel truncated it to 15 bytes).
	Name(ctx context.Context) (string, error)
	// Exe is the path of the process's executable (Linux: the target of /proc/<pid>/exe).
	Exe(ctx context.Context) (string, error)
	// Cmdline is the command line, arguments joined by single spaces.
	Cmdline(ctx context.Context) (string, error)
	// Times is the CPU time the process has used since it started.
	Times(ctx context.Context) (CPUTimes, error)
	// RSS is the resident set size in bytes.
	RSS(ctx context.Context) (int64, error)
	// NumThreads is the number of threads of the process.
	NumThreads(ctx context.Context) (int64, error)
	// NumFDs is the number of open file descriptors of the process.
	NumFDs(ctx context.Context) (int64, error)
}

// Source finds processes.
type Source interface {
	// Pids lists the pids of all running processes.
	Pids(ctx context.Context) ([]int32, error)
	// Open returns the process with this pid. It need not check that the process exists: the
	// Process's methods report that.
	Open(pid int32) (Process, error)
	// Hostname is this host's name, to compare with the host.name a process announced.
	Hostname() (string, error)
	// Placement tells the cgroups and namespaced pids of the host process pid, to find the
	// process a container numbers differently.
	Placement(ctx context.Context, pid int32) (Placement, error)
}

// CPUTimes is CPU time in seconds, by mode.
type CPUTimes struct {
	User   float64
	System float64
	// Wait is time spent waiting for block I/O (Linux: delayacct_blkio_ticks, which stays 0
	// unless the kernel's task delay accounting is on). Meaningful only when HasWait.
	Wait    float64
	HasWait bool
}

// ErrorKind is the kind of a counted error; its value is suitable as a metric attribute.
type ErrorKind string

const (
	// KindNotFound: the process is not running: it was never running, or it ended between
	// being listed and being read.
	KindNotFound ErrorKind = "not_found"
	// KindPermission: the operating system refused to show (part of) the process.
	KindPermission ErrorKind = "permission"
	// KindOther: anything else.
	KindOther ErrorKind = "other"
	// KindLimit: targets left unread because the scrape reached Options.MaxProcesses.
	KindLimit ErrorKind = "limit"
)

// Kinds are every ErrorKind, in the order the receiver reports them.
var Kinds = []ErrorKind{KindNotFound, KindPermission, KindOther, KindLimit}

// What a ProcessError was reading (its Op).
const (
	OpCreateTime = "create time"
	OpName       = "name"
	OpCmdline    = "command line"
	OpCPU        = "cpu times"
	OpMemory     = "memory"
	OpThreads    = "threads"
	OpFDs        = "fds"
	// OpFind: finding the host process of a pid announced in a container.
	OpFind = "the container's process"
)

// Classify tells the kind of an error returned by a Source or Process.
func Classify(err error) ErrorKind {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, os.ErrPermission):
		return KindPermission
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ESRCH),
		errors.Is(err, process.ErrorProcessNotRunning):
		return KindNotFound
	default:
		return KindOther
	}
}

// ProcessError is a failure to read one process. Error() names the process:
//
//	pid 4242 (python3): permission denied reading fds
type ProcessError struct {
	// PID is the pid as announced: in its container's pid namespace when In is set.
	PID int32
	// In is the container the pid was announced in (the zero Container: the host).
	In Container
	// HostPID is the host's pid of the process of a container, once found (else 0).
	HostPID int32
	// Name is the process's executable name when it was known, else "".
	Name string
	// Key is the resource key of the target that announced the pid, "" for other origins.
	Key    string
	Origin Origin
	Op     string
	Kind   ErrorKind
	Err    error
}

func (e *ProcessError) Error() string {
	who := fmt.Sprintf("pid %d", e.PID)
	if e.Name != "" {
		who += " (" + e.Name + ")"
	}
	if !e.In.IsZero() {
		who += " in " + e.In.String()
		if e.HostPID != 0 {
			who += fmt.Sprintf(" (host pid %d)", e.HostPID)
		}
	}
	if e.Op == OpFind {
		return fmt.Sprintf("%s: %v", who, e.Err)
	}
	switch e.Kind {
	case KindPermission:
		return who + ": permission denied reading " + e.Op
	case KindNotFound:
		if e.Op == OpCreateTime {
			return who + ": no such process"
		}
		return who + ": process ended while reading " + e.Op
	default:
		return fmt.Sprintf("%s: reading %s: %v", who, e.Op, e.Err)
	}
}

func (e *ProcessError) Unwrap() error { return e.Err }

// LimitError reports the targets a scrape left unread because it reached Options.MaxProcesses.
type LimitError struct {
	Limit   int
	Skipped int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%d processes not read: a scrape reads at most %d (max processes)", e.Skipped, e.Limit)
}

// Counts is how many errors of each kind one scrape met. Not-found, permission and other count
// each failed read (a process that ends mid-read counts once); Limit counts unread targets.
type Counts struct {
	NotFound   int
	Permission int
	Other      int
	Limit      int
}

// Of returns the count of one kind.
func (c Counts) Of(kind ErrorKind) int {
	switch kind {
	case KindNotFound:
		return c.NotFound
	case KindPermission:
		return c.Permission
	case KindOther:
		return c.Other
	case KindLimit:
		return c.Limit
	}
	return 0
}

// Total is the sum of all kinds.
func (c Counts) Total() int { return c.NotFound + c.Permission + c.Other + c.Limit }

func (c *Counts) add(kind ErrorKind, n int) {
	switch kind {
	case KindNotFound:
		c.NotFound += n
	case KindPermission:
		c.Permission += n
	case KindLimit:
		c.Limit += n
	default:
		c.Other += n
	}
}
