package procstats

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
)

// DefaultMaxProcesses is how many processes one scrape reads when Options.MaxProcesses is 0.
const DefaultMaxProcesses = 1000

// Origin is why a process is read.
type Origin uint8

const (
	// OriginAnnounced: a Gym resource line announced the pid (Target).
	OriginAnnounced Origin = iota + 1
	// OriginSelf: the collector's own process.
	OriginSelf
	// OriginInclude: an include rule matched the process.
	OriginInclude
)

func (o Origin) String() string {
	switch o {
	case OriginAnnounced:
		return "announced"
	case OriginSelf:
		return "self"
	case OriginInclude:
		return "include"
	}
	return fmt.Sprintf("Origin(%d)", uint8(o))
}

// Target is a pid announced by a Gym resource line, with an opaque key naming that resource.
type Target struct {
	PID int32
	Key string
	// In is the container whose pid namespace PID is numbered in (the zero Container: the
	// host's). The scrape reads the host process that the container numbers PID.
	In Container
}

// Options configures a Scraper.
type Options struct {
	// Include selects processes to read besides the announced ones.
	Include []IncludeRule
	// IncludeSelf reads the collector's own process (os.Getpid()).
	IncludeSelf bool
	// MaxProcesses caps how many processes one scrape reads (0: DefaultMaxProcesses).
	// Announced targets come first, then the collector itself, then include matches, each group
	// in pid order; the rest are counted as KindLimit errors.
	MaxProcesses int
}

// Reading is one process read by one scrape.
type Reading struct {
	PID int32
	// In is the Target's container, HostPID the host's pid of the process read (0 for the
	// host's own pids, which PID is).
	In      Container
	HostPID int32
	// CreateTime is when the process started, in milliseconds since the Unix epoch: the start
	// time of its cumulative series.
	CreateTime int64
	// ExecutableName is process.executable.name: the base name of the executable (Linux:
	// /proc/<pid>/exe), or the process name when that is unreadable. Read once per process.
	ExecutableName string
	// Key is the Target's resource key when Origin is OriginAnnounced, else "".
	Key    string
	Origin Origin

	// New: the first reading of this process under this identity (pid, create time, key,
	// origin, executable name): start fresh series.
	New bool
	// Restarted: New because the pid now belongs to another process than at the previous
	// scrape (PID reuse); the previous process is in Result.Ended.
	Restarted bool

	// Each value is meaningful only when its Has flag is set; a value that could not be read
	// has an error in Result.Errors.
	CPU        CPUTimes // seconds since the process started
	HasCPU     bool
	RSS        int64 // resident set size, bytes
	HasRSS     bool
	Threads    int64
	HasThreads bool
	FDs        int64 // open file descriptors
	HasFDs     bool
}

// Result is what one scrape read.
type Result struct {
	// Readings holds one reading per process read, in the order the targets were taken.
	Readings []Reading
	// Ended holds the last reading of each process identity that an earlier scrape read and
	// this one does not: the process ended, its pid was reused, its key changed, or it is no
	// longer a target. Each is reported once, ordered by pid; export it once more and drop it.
	Ended []Reading
	// Errors holds a *ProcessError per failed read, a *LimitError when targets were left
	// unread, and errors listing processes for include rules.
	Errors []error
	Counts Counts
}

// Err joins Errors (nil when there are none).
func (r *Result) Err() error { return errors.Join(r.Errors...) }

func (r *Result) addError(kind ErrorKind, n int, err error) {
	r.Errors = append(r.Errors, err)
	r.Counts.add(kind, n)
}

// Scraper reads the processes of each scrape and remembers, between scrapes, which process each
// pid belonged to. Its methods are safe for concurrent use, but scrapes are serialized.
type Scraper struct {
	src   Source
	rules []rule
	self  int32
	max   int

	mu      sync.Mutex
	gen     uint64
	tracked map[int32]*tracked // processes read by recent scrapes by host pid, at most max of them
	// found maps a container's pid to the host pid found for it: checked, not searched again,
	// at each scrape. Only this scrape's targets are kept.
	found map[scopedPID]int32
}

// scopedPID is a pid in the pid namespace of a container.
type scopedPID struct {
	pid int32
	in  Container
}

// tracked is a process read by a recent scrape: its handle is reused while its create time
// matches.
type tracked struct {
	h          Process
	createTime int64
	names      names
	last       Reading // last reading; valid when hasLast
	hasLast    bool
	gen        uint64 // the scrape that last read it
}

// NewScraper returns a Scraper reading processes from src.
func NewScraper(src Source, opts Options) (*Scraper, error) {
	rules, err := compileRules(opts.Include)
	if err != nil {
		return nil, err
	}
	if opts.MaxProcesses < 0 {
		return nil, fmt.Errorf("max processes must be >= 0, got %d", opts.MaxProcesses)
	}
	s := &Scraper{src: src, rules: rules, max: opts.MaxProcesses, tracked: map[int32]*tracked{}, found: map[scopedPID]int32{}}
	if s.max == 0 {
		s.max = DefaultMaxProcesses
	}
	if opts.IncludeSelf {
		s.self = int32(os.Getpid()) //nolint:gosec // pids fit in int32 on every supported OS
	}
	return s, nil
}

// target is one process to read in this scrape.
type target struct {
	pid       int32 // the host's
	announced int32 // as announced: pid, or its pid in the container in
	in        Container
	key       string
	origin    Origin
	// Set when the include scan already opened the process; tr when it confirmed that a tracked
	// process is still the same one.
	h  Process
	n  *names
	tr *tracked
	// lost: a container's target whose process was not found (its error is recorded).
	lost bool
}

// Scrape reads the announced targets, the collector itself if configured, and the processes
// the include rules match. A pid announced twice is read once, under its last key. One failing
// process never stops the others: its errors are in the Result. The error is non-nil only when
// ctx ended the scrape early; the Result then holds what was read, and no process is reported
// ended.
func (s *Scraper) Scrape(ctx context.Context, announced []Target) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++

	var res Result
	targets, err := s.targets(ctx, announced, &res)
	if err != nil {
		return res, err
	}
	res.Readings = make([]Reading, 0, len(targets))
	for i := range targets {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		s.read(ctx, &targets[i], &res)
	}
	s.sweep(&res)
	return res, nil
}

// targets returns this scrape's targets, in order, without duplicates, at most s.max.
func (s *Scraper) targets(ctx context.Context, announced []Target, res *Result) ([]target, error) {
	// Announced, in pid order, the last key of a pid winning.
	ann := slices.Clone(announced)
	slices.SortStableFunc(ann, func(a, b Target) int {
		return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.In.ID, b.In.ID), cmp.Compare(a.In.PodUID, b.In.PodUID))
	})
	ts := make([]target, 0, len(ann)+1)
	for i, a := range ann {
		if i+1 < len(ann) && ann[i+1].PID == a.PID && ann[i+1].In == a.In {
			continue
		}
		ts = append(ts, target{pid: a.PID, announced: a.PID, in: a.In, key: a.Key, origin: OriginAnnounced})
	}
	ts, err := s.findInContainers(ctx, ts, res)
	if err != nil {
		return nil, err
	}
	hostPIDs := make(map[int32]bool, len(ts))
	for _, t := range ts {
		hostPIDs[t.pid] = true
	}
	isAnnounced := func(pid int32) bool { return hostPIDs[pid] }
	if s.self != 0 && !isAnnounced(s.self) {
		ts = append(ts, target{pid: s.self, announced: s.self, origin: OriginSelf})
	}

	if len(s.rules) > 0 {
		pids, err := s.src.Pids(ctx)
		if err != nil {
			res.addError(Classify(err), 1, fmt.Errorf("listing processes for include rules: %w", err))
		}
		slices.Sort(pids)
		for i, pid := range pids {
			if i > 0 && pids[i-1] == pid {
				continue
			}
			if pid == s.self || isAnnounced(pid) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if t, ok := s.matchInclude(ctx, pid, res); ok {
				ts = append(ts, t)
			}
		}
	}

	if len(ts) > s.max {
		skipped := len(ts) - s.max
		res.addError(KindLimit, skipped, &LimitError{Limit: s.max, Skipped: skipped})
		clear(ts[s.max:])
		ts = ts[:s.max]
	}
	return ts, nil
}

// matchInclude decides whether the include rules select pid. A process that is gone, or whose
// names cannot be read, is not selected; only unexpected errors are counted, since no one asked
// for that process.
func (s *Scraper) matchInclude(ctx context.Context, pid int32, res *Result) (target, bool) {
	t := target{pid: pid, announced: pid, origin: OriginInclude}
	if tr := s.tracked[pid]; tr != nil {
		ct, err := tr.h.CreateTime(ctx)
		if err == nil && ct == tr.createTime {
			t.tr = tr
			if tr.hasLast && tr.last.Origin == OriginInclude {
				return t, true // rules do not change: still selected
			}
			ok, _, _ := tr.names.matches(ctx, s.rules)
			return t, ok
		}
		// Gone or reused: decide afresh; read() sees the new create time.
	}
	h, err := s.src.Open(pid)
	if err != nil {
		return t, false
	}
	n := &names{p: h}
	ok, op, err := n.matches(ctx, s.rules)
	if !ok && err != nil && Classify(err) == KindOther {
		res.addError(KindOther, 1, &ProcessError{PID: pid, Origin: OriginInclude, Op: op, Kind: KindOther, Err: err})
	}
	t.h, t.n = h, n
	return t, ok
}

// read reads one target into res.
func (s *Scraper) read(ctx context.Context, t *target, res *Result) {
	if t.pid <= 0 {
		s.fail(res, t, "", OpCreateTime, fmt.Errorf("invalid pid %d: %w", t.pid, os.ErrNotExist))
		return
	}
	tr := s.tracked[t.pid]
	var ct int64
	var err error
	switch {
	case t.tr != nil && t.tr == tr:
		ct = tr.createTime // confirmed by the include scan
	case tr != nil:
		ct, err = tr.h.CreateTime(ctx)
	default:
		if t.h == nil {
			t.h, err = s.src.Open(t.pid)
		}
		if err == nil {
			ct, err = t.h.CreateTime(ctx)
		}
	}
	if err != nil {
		name := ""
		if tr != nil && tr.hasLast {
			name = tr.last.ExecutableName
			if Classify(err) != KindNotFound {
				tr.gen = s.gen // probably still running: keep its series going
			}
		}
		s.fail(res, t, name, OpCreateTime, err)
		return
	}

	restarted := false
	if tr != nil && ct != tr.createTime {
		// The pid now belongs to another process: the one read before has ended.
		if tr.hasLast {
			res.Ended = append(res.Ended, tr.last)
			restarted = true
		}
		delete(s.tracked, t.pid)
		tr = nil
		if t.h == nil {
			if t.h, err = s.src.Open(t.pid); err != nil {
				s.fail(res, t, "", OpCreateTime, err)
				return
			}
		}
	}
	if tr == nil {
		tr = &tracked{h: t.h, createTime: ct}
		if t.n != nil {
			tr.names = *t.n
		} else {
			tr.names = names{p: t.h}
		}
		s.tracked[t.pid] = tr
	}

	name, err := tr.names.executableName(ctx)
	if err != nil && s.failed(ctx, res, t, tr, "", OpName, err) {
		return
	}

	r := Reading{PID: t.announced, CreateTime: ct, ExecutableName: name, Key: t.key, Origin: t.origin, In: t.in}
	if !t.in.IsZero() {
		r.HostPID = t.pid
	}
	if !tr.hasLast || tr.last.Key != r.Key || tr.last.Origin != r.Origin || tr.last.ExecutableName != r.ExecutableName ||
		tr.last.PID != r.PID || tr.last.In != r.In {
		if tr.hasLast {
			res.Ended = append(res.Ended, tr.last) // same process under another identity
			tr.hasLast = false                     // reported: the sweep must not report it again
		}
		r.New, r.Restarted = true, restarted
	}

	h := tr.h
	if cpu, err := h.Times(ctx); err == nil {
		r.CPU, r.HasCPU = cpu, true
	} else if s.failed(ctx, res, t, tr, name, OpCPU, err) {
		return
	}
	if rss, err := h.RSS(ctx); err == nil {
		r.RSS, r.HasRSS = rss, true
	} else if s.failed(ctx, res, t, tr, name, OpMemory, err) {
		return
	}
	if n, err := h.NumThreads(ctx); err == nil {
		r.Threads, r.HasThreads = n, true
	} else if s.failed(ctx, res, t, tr, name, OpThreads, err) {
		return
	}
	if n, err := h.NumFDs(ctx); err == nil {
		r.FDs, r.HasFDs = n, true
	} else if s.failed(ctx, res, t, tr, name, OpFDs, err) {
		return
	}

	tr.last, tr.hasLast, tr.gen = r, true, s.gen
	res.Readings = append(res.Readings, r)
}

// failed records a failed read and reports whether the process is gone, which ends its read.
func (s *Scraper) failed(ctx context.Context, res *Result, t *target, tr *tracked, name, op string, err error) bool {
	if s.gone(ctx, tr, err) {
		s.failKind(res, t, name, op, KindNotFound, err)
		return true
	}
	s.fail(res, t, name, op, err)
	return false
}

// gone reports whether err means that the process read as tr no longer exists. An unexpected
// error is checked against the process's create time: a process that ends mid-read can leave
// files empty or half-written rather than missing.
func (s *Scraper) gone(ctx context.Context, tr *tracked, err error) bool {
	switch Classify(err) {
	case KindNotFound:
		return true
	case KindPermission:
		return false
	}
	ct, cerr := tr.h.CreateTime(ctx)
	return Classify(cerr) == KindNotFound || (cerr == nil && ct != tr.createTime)
}

func (s *Scraper) fail(res *Result, t *target, name, op string, err error) {
	s.failKind(res, t, name, op, Classify(err), err)
}

func (s *Scraper) failKind(res *Result, t *target, name, op string, kind ErrorKind, err error) {
	e := &ProcessError{PID: t.announced, In: t.in, Name: name, Key: t.key, Origin: t.origin, Op: op, Kind: kind, Err: err}
	if !t.in.IsZero() && op != OpFind {
		e.HostPID = t.pid
	}
	res.addError(kind, 1, e)
}

// sweep forgets the processes this scrape did not read, reporting them ended.
func (s *Scraper) sweep(res *Result) {
	for pid, tr := range s.tracked {
		if tr.gen != s.gen {
			if tr.hasLast {
				res.Ended = append(res.Ended, tr.last)
			}
			delete(s.tracked, pid)
		}
	}
	slices.SortStableFunc(res.Ended, func(a, b Reading) int { return cmp.Compare(a.PID, b.PID) })
}

// findInContainers replaces each target announced in a container by the host process that the
// container numbers its pid, and drops (with an error) the ones it cannot find: an invalid
// container name, no such process on this host, or several. A pid found before is checked,
// not searched for; the host's processes are listed at most once per scrape, and only when a
// target is not found so. A host pid found for two targets is read once, under the later.
func (s *Scraper) findInContainers(ctx context.Context, ts []target, res *Result) ([]target, error) {
	var missing []int // indexes in ts of targets to search for
	keep := make(map[scopedPID]int32, len(s.found))
	for i := range ts {
		t := &ts[i]
		if t.in.IsZero() {
			continue
		}
		if err := t.in.Validate(); err != nil {
			s.failKind(res, t, "", OpFind, KindOther, err)
			t.lost = true
			continue
		}
		sp := scopedPID{t.announced, t.in}
		if host, ok := s.found[sp]; ok {
			if pl, err := s.src.Placement(ctx, host); err == nil && t.in.Matches(pl, t.announced) {
				t.pid, keep[sp] = host, host
				continue
			}
		}
		missing = append(missing, i)
	}
	if len(missing) > 0 {
		pids, err := s.src.Pids(ctx)
		if err != nil {
			res.addError(Classify(err), 1, fmt.Errorf("listing processes to find the processes of containers: %w", err))
		}
		// Only processes in a pid namespace of their own are read further, and each once.
		want := map[int32]bool{}
		for _, i := range missing {
			want[ts[i].announced] = true
		}
		found := make([][]int32, len(missing))
		for _, pid := range pids {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			pl, err := s.src.Placement(ctx, pid)
			if err != nil || len(pl.NSpid) == 0 || !want[pl.NSpid[len(pl.NSpid)-1]] {
				continue // gone since listed, or a kernel thread: no one asked for it
			}
			for j, i := range missing {
				if ts[i].in.Matches(pl, ts[i].announced) && !slices.Contains(found[j], pid) {
					found[j] = append(found[j], pid)
				}
			}
		}
		for j, i := range missing {
			t := &ts[i]
			switch len(found[j]) {
			case 1:
				t.pid = found[j][0]
				keep[scopedPID{t.announced, t.in}] = t.pid
				continue
			case 0:
				s.failKind(res, t, "", OpFind, KindNotFound, errors.New("no such process on this host"))
			default:
				slices.Sort(found[j])
				s.failKind(res, t, "", OpFind, KindOther, fmt.Errorf(
					"%d processes on this host match (host pids %v): announce container.id, or share one pid namespace in the pod", len(found[j]), found[j]))
			}
			t.lost = true
		}
	}
	s.found = keep

	// Drop the targets not found and all but the last of a host pid.
	last := make(map[int32]int, len(ts))
	for i, t := range ts {
		if !t.lost {
			last[t.pid] = i
		}
	}
	out := ts[:0]
	for i, t := range ts {
		if !t.lost && last[t.pid] == i {
			out = append(out, t)
		}
	}
	return out, nil
}
