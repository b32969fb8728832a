// Package procstatstest provides a fake procstats.Source: processes held in memory, whose
// values, errors, exits and pid reuse tests set at will.
package procstatstest

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"syscall"

	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
)

// Errors a fake process can return, shaped like the host's: wrapped in *fs.PathError.
var (
	// ErrPermission: errors.Is(err, os.ErrPermission).
	ErrPermission error = &fs.PathError{Op: "open", Path: "/proc/fake", Err: syscall.EACCES}
	// ErrNotExist: errors.Is(err, os.ErrNotExist).
	ErrNotExist error = &fs.PathError{Op: "open", Path: "/proc/fake", Err: syscall.ENOENT}
)

// Proc is the state of one fake process. Err maps a procstats Op (procstats.OpFDs, ...; "exe"
// for Exe, "placement" for Placement) to the error that read returns.
type Proc struct {
	CreateTime int64 // ms since the Unix epoch
	Name       string
	Exe        string
	Cmdline    string
	CPU        procstats.CPUTimes
	RSS        int64
	Threads    int64
	FDs        int64
	// Cgroups and NSpid are its Placement (NSpid nil: the host pid alone, no container).
	Cgroups []string
	NSpid   []int32
	Err     map[string]error
}

// Source is a fake procstats.Source. Its handles are bound to a pid, as on a real host: a handle
// opened before Set or Remove sees the process that holds the pid now.
type Source struct {
	mu       sync.Mutex
	procs    map[int32]Proc
	host     string
	pidsErr  error
	calls    int
	openErrs map[int32]error
}

// NewSource returns an empty Source whose Hostname is host.
func NewSource(host string) *Source {
	return &Source{procs: map[int32]Proc{}, host: host, openErrs: map[int32]error{}}
}

// Set starts (or replaces: pid reuse) the process with this pid.
func (s *Source) Set(pid int32, p Proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs[pid] = p
}

// Update changes the running process with this pid in place; it reports whether one ran.
func (s *Source) Update(pid int32, f func(*Proc)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.procs[pid]
	if ok {
		f(&p)
		s.procs[pid] = p
	}
	return ok
}

// Remove ends the process with this pid.
func (s *Source) Remove(pid int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.procs, pid)
}

// SetPidsError makes Pids fail with err (nil: succeed).
func (s *Source) SetPidsError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pidsErr = err
}

// SetOpenError makes Open(pid) fail with err (nil: succeed).
func (s *Source) SetOpenError(pid int32, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.openErrs, pid)
	} else {
		s.openErrs[pid] = err
	}
}

// Calls is how many Process method calls were made, to check what a scrape costs.
func (s *Source) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Pids lists the running pids, in ascending order.
func (s *Source) Pids(context.Context) ([]int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pidsErr != nil {
		return nil, s.pidsErr
	}
	pids := make([]int32, 0, len(s.procs))
	for pid := range s.procs {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids, nil
}

// Open returns a handle on pid; like the host's, it does not check that the process exists.
func (s *Source) Open(pid int32) (procstats.Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.openErrs[pid]; err != nil {
		return nil, err
	}
	if pid <= 0 {
		return nil, fmt.Errorf("invalid pid %d: %w", pid, ErrNotExist)
	}
	return &handle{s: s, pid: pid}, nil
}

// Hostname returns the host name given to NewSource.
func (s *Source) Hostname() (string, error) { return s.host, nil }

// Placement returns the process's Cgroups and NSpid.
func (s *Source) Placement(_ context.Context, pid int32) (procstats.Placement, error) {
	p, err := (&handle{s: s, pid: pid}).get("placement")
	if err != nil {
		return procstats.Placement{}, err
	}
	nspid := p.NSpid
	if nspid == nil {
		nspid = []int32{pid}
	}
	return procstats.Placement{Cgroups: slices.Clone(p.Cgroups), NSpid: slices.Clone(nspid)}, nil
}

type handle struct {
	s   *Source
	pid int32
}

// get returns the process now holding the pid, or the error op is set to fail with.
func (h *handle) get(op string) (Proc, error) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	h.s.calls++
	p, ok := h.s.procs[h.pid]
	if !ok {
		return Proc{}, ErrNotExist
	}
	if err := p.Err[op]; err != nil {
		return Proc{}, err
	}
	return p, nil
}

func (h *handle) CreateTime(context.Context) (int64, error) {
	p, err := h.get(procstats.OpCreateTime)
	return p.CreateTime, err
}

func (h *handle) Name(context.Context) (string, error) {
	p, err := h.get(procstats.OpName)
	return p.Name, err
}

func (h *handle) Exe(context.Context) (string, error) {
	p, err := h.get("exe")
	return p.Exe, err
}

func (h *handle) Cmdline(context.Context) (string, error) {
	p, err := h.get(procstats.OpCmdline)
	return p.Cmdline, err
}

func (h *handle) Times(context.Context) (procstats.CPUTimes, error) {
	p, err := h.get(procstats.OpCPU)
	return p.CPU, err
}

func (h *handle) RSS(context.Context) (int64, error) {
	p, err := h.get(procstats.OpMemory)
	return p.RSS, err
}

func (h *handle) NumThreads(context.Context) (int64, error) {
	p, err := h.get(procstats.OpThreads)
	return p.Threads, err
}

func (h *handle) NumFDs(context.Context) (int64, error) {
	p, err := h.get(procstats.OpFDs)
	return p.FDs, err
}
