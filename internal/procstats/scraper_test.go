package procstats_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats/procstatstest"
)

func python(create int64) procstatstest.Proc {
	return procstatstest.Proc{
		CreateTime: create,
		Name:       "python3",
		Exe:        "/usr/bin/python3.12",
		Cmdline:    "python3 -m nemo_gym.server --port=8000",
		CPU:        procstats.CPUTimes{User: 1.5, System: 0.25, Wait: 0.01, HasWait: true},
		RSS:        100 << 20,
		Threads:    12,
		FDs:        40,
	}
}

func newScraper(t *testing.T, src procstats.Source, opts procstats.Options) *procstats.Scraper {
	t.Helper()
	s, err := procstats.NewScraper(src, opts)
	require.NoError(t, err)
	return s
}

func scrape(t *testing.T, s *procstats.Scraper, targets ...procstats.Target) procstats.Result {
	t.Helper()
	res, err := s.Scrape(context.Background(), targets)
	require.NoError(t, err)
	return res
}

func pidsOf(rs []procstats.Reading) []int32 {
	out := []int32{}
	for _, r := range rs {
		out = append(out, r.PID)
	}
	return out
}

func errorStrings(res procstats.Result) []string {
	out := []string{}
	for _, err := range res.Errors {
		out = append(out, err.Error())
	}
	return out
}

func TestScrapeAnnounced(t *testing.T) {
	src := procstatstest.NewSource("node7")
	src.Set(4242, python(1_700_000_000_000))
	src.Set(4300, procstatstest.Proc{CreateTime: 1_700_000_001_000, Name: "bash", Exe: "/bin/bash", RSS: 4096, Threads: 1, FDs: 3})
	s := newScraper(t, src, procstats.Options{})

	res := scrape(t, s, procstats.Target{PID: 4300, Key: "b"}, procstats.Target{PID: 4242, Key: "a"})
	assert.Empty(t, res.Errors)
	assert.Zero(t, res.Counts.Total())
	assert.Empty(t, res.Ended)
	require.Len(t, res.Readings, 2)
	r := res.Readings[0] // pid order
	assert.Equal(t, procstats.Reading{
		PID: 4242, CreateTime: 1_700_000_000_000, ExecutableName: "python3.12", Key: "a",
		Origin: procstats.OriginAnnounced, New: true,
		CPU: procstats.CPUTimes{User: 1.5, System: 0.25, Wait: 0.01, HasWait: true}, HasCPU: true,
		RSS: 100 << 20, HasRSS: true, Threads: 12, HasThreads: true, FDs: 40, HasFDs: true,
	}, r)
	assert.Equal(t, "bash", res.Readings[1].ExecutableName)
	assert.Equal(t, "b", res.Readings[1].Key)

	// Next scrape: same processes, new values, not new.
	src.Update(4242, func(p *procstatstest.Proc) { p.CPU.User = 2; p.Threads = 13 })
	res = scrape(t, s, procstats.Target{PID: 4242, Key: "a"}, procstats.Target{PID: 4300, Key: "b"})
	require.Len(t, res.Readings, 2)
	assert.False(t, res.Readings[0].New)
	assert.False(t, res.Readings[0].Restarted)
	assert.Equal(t, 2.0, res.Readings[0].CPU.User)
	assert.Equal(t, int64(13), res.Readings[0].Threads)
	assert.Empty(t, res.Ended)
}

func TestHandlesAndNamesAreReused(t *testing.T) {
	src := procstatstest.NewSource("h")
	src.Set(10, python(1000))
	s := newScraper(t, src, procstats.Options{})
	scrape(t, s, procstats.Target{PID: 10, Key: "k"})
	first := src.Calls()
	assert.Equal(t, 6, first) // create time, exe, cpu, memory, threads, fds
	scrape(t, s, procstats.Target{PID: 10, Key: "k"})
	assert.Equal(t, 5, src.Calls()-first, "names are read once per process")
}

func TestPIDReuse(t *testing.T) {
	src := procstatstest.NewSource("h")
	src.Set(4242, python(1000))
	s := newScraper(t, src, procstats.Options{})
	res := scrape(t, s, procstats.Target{PID: 4242, Key: "k"})
	require.Len(t, res.Readings, 1)
	old := res.Readings[0]

	// The process ends and another one gets its pid.
	reused := procstatstest.Proc{CreateTime: 5000, Name: "sleep", Exe: "/usr/bin/sleep", RSS: 1 << 20, Threads: 1, FDs: 3}
	src.Set(4242, reused)
	res = scrape(t, s, procstats.Target{PID: 4242, Key: "k"})
	assert.Empty(t, res.Errors)
	require.Len(t, res.Readings, 1)
	r := res.Readings[0]
	assert.True(t, r.New)
	assert.True(t, r.Restarted)
	assert.Equal(t, int64(5000), r.CreateTime)
	assert.Equal(t, "sleep", r.ExecutableName, "names are read again for the new process")
	assert.Equal(t, int64(1), r.Threads)
	require.Len(t, res.Ended, 1)
	assert.Equal(t, old, res.Ended[0], "the old process is reported ended with its last reading")

	res = scrape(t, s, procstats.Target{PID: 4242, Key: "k"})
	require.Len(t, res.Readings, 1)
	assert.False(t, res.Readings[0].New)
	assert.False(t, res.Readings[0].Restarted)
	assert.Empty(t, res.Ended)
}

func TestProcessExit(t *testing.T) {
	src := procstatstest.NewSource("h")
	src.Set(10, python(1000))
	src.Set(11, python(2000))
	s := newScraper(t, src, procstats.Options{})
	targets := []procstats.Target{{PID: 10, Key: "a"}, {PID: 11, Key: "b"}}
	res, err := s.Scrape(context.Background(), targets)
	require.NoError(t, err)
	last := res.Readings[0]

	src.Remove(10)
	res, err = s.Scrape(context.Background(), targets)
	require.NoError(t, err)
	assert.Equal(t, []int32{11}, pidsOf(res.Readings), "one process's end does not stop the others")
	assert.Equal(t, []string{"pid 10 (python3.12): no such process"}, errorStrings(res))
	assert.Equal(t, procstats.Counts{NotFound: 1}, res.Counts)
	var pe *procstats.ProcessError
	require.ErrorAs(t, res.Errors[0], &pe)
	assert.Equal(t, procstats.KindNotFound, pe.Kind)
	assert.Equal(t, "a", pe.Key)
	assert.ErrorIs(t, pe, os.ErrNotExist)
	require.Len(t, res.Ended, 1)
	assert.Equal(t, last, res.Ended[0])
	assert.Equal(t, 1, s.TrackedCount(), "an ended process is forgotten")

	// Still announced, still not running: counted again, but ended only once.
	res, err = s.Scrape(context.Background(), targets)
	require.NoError(t, err)
	assert.Equal(t, procstats.Counts{NotFound: 1}, res.Counts)
	assert.Equal(t, []string{"pid 10: no such process"}, errorStrings(res))
	assert.Empty(t, res.Ended)
}

func TestNeverRunningAndInvalidPids(t *testing.T) {
	src := procstatstest.NewSource("h")
	s := newScraper(t, src, procstats.Options{})
	res := scrape(t, s, procstats.Target{PID: 999, Key: "k"}, procstats.Target{PID: 0}, procstats.Target{PID: -5})
	assert.Empty(t, res.Readings)
	assert.Empty(t, res.Ended)
	assert.Equal(t, procstats.Counts{NotFound: 3}, res.Counts)
	assert.Equal(t, []string{"pid -5: no such process", "pid 0: no such process", "pid 999: no such process"}, errorStrings(res))
	assert.Zero(t, s.TrackedCount())
}

func TestPermissionDenied(t *testing.T) {
	src := procstatstest.NewSource("h")
	p := python(1000)
	p.Exe = ""
	p.Err = map[string]error{procstats.OpFDs: procstatstest.ErrPermission, "exe": procstatstest.ErrPermission}
	src.Set(4242, p)
	src.Set(4243, python(2000))
	s := newScraper(t, src, procstats.Options{})

	res := scrape(t, s, procstats.Target{PID: 4242, Key: "a"}, procstats.Target{PID: 4243, Key: "b"})
	assert.Equal(t, []string{"pid 4242 (python3): permission denied reading fds"}, errorStrings(res))
	assert.Equal(t, procstats.Counts{Permission: 1}, res.Counts)
	require.Len(t, res.Readings, 2)
	r := res.Readings[0]
	assert.Equal(t, "python3", r.ExecutableName, "an unreadable executable falls back to the process name")
	assert.False(t, r.HasFDs)
	assert.True(t, r.HasCPU)
	assert.True(t, r.HasRSS)
	assert.True(t, r.HasThreads)
	assert.True(t, res.Readings[1].HasFDs)
	assert.ErrorIs(t, res.Err(), os.ErrPermission)
}

func TestOtherErrorKeepsReading(t *testing.T) {
	src := procstatstest.NewSource("h")
	p := python(1000)
	p.Err = map[string]error{procstats.OpMemory: errors.New("malformed statm")}
	src.Set(7, p)
	s := newScraper(t, src, procstats.Options{})
	res := scrape(t, s, procstats.Target{PID: 7})
	assert.Equal(t, []string{"pid 7 (python3.12): reading memory: malformed statm"}, errorStrings(res))
	assert.Equal(t, procstats.Counts{Other: 1}, res.Counts)
	require.Len(t, res.Readings, 1)
	assert.False(t, res.Readings[0].HasRSS)
	assert.True(t, res.Readings[0].HasFDs)
}

func TestGoneMidRead(t *testing.T) {
	src := procstatstest.NewSource("h")
	src.Set(7, python(1000))
	s := newScraper(t, src, procstats.Options{})
	res := scrape(t, s, procstats.Target{PID: 7, Key: "k"})
	last := res.Readings[0]

	// The process ends after its create time was read: the next read is not found.
	src.Update(7, func(p *procstatstest.Proc) {
		p.Err = map[string]error{procstats.OpThreads: procstatstest.ErrNotExist}
	})
	res = scrape(t, s, procstats.Target{PID: 7, Key: "k"})
	assert.Empty(t, res.Readings)
	assert.Equal(t, []string{"pid 7 (python3.12): process ended while reading threads"}, errorStrings(res))
	assert.Equal(t, procstats.Counts{NotFound: 1}, res.Counts)
	assert.Equal(t, []procstats.Reading{last}, res.Ended)
}

// dyingSource's processes end while their CPU times are read, which fails oddly (as a
// half-gone /proc entry can).
type dyingSource struct{ *procstatstest.Source }

type dyingProc struct {
	procstats.Process
	src *procstatstest.Source
	pid int32
}

func (d dyingSource) Open(pid int32) (procstats.Process, error) {
	p, err := d.Source.Open(pid)
	return dyingProc{Process: p, src: d.Source, pid: pid}, err
}

func (d dyingProc) Times(context.Context) (procstats.CPUTimes, error) {
	d.src.Remove(d.pid)
	return procstats.CPUTimes{}, errors.New("stat file is empty, process may have terminated")
}

func TestOddErrorOfDyingProcessIsNotFound(t *testing.T) {
	src := procstatstest.NewSource("h")
	src.Set(7, python(1000))
	s := newScraper(t, dyingSource{src}, procstats.Options{})
	res := scrape(t, s, procstats.Target{PID: 7})
	assert.Empty(t, res.Readings)
	assert.Equal(t, procstats.Counts{NotFound: 1}, res.Counts)
	assert.Equal(t, []string{"pid 7 (python3.12): process ended while reading cpu times"}, errorStrings(res))
}

func TestTransientCreateTimeErrorKeepsTheProcess(t *testing.T) {
	src := procstatstest.NewSource("h")
	src.Set(7, python(1000))
	s := newScraper(t, src, procstats.Options{})
	scrape(t, s, procstats.Target{PID: 7})
	src.Update(7, func(p *procstatstest.Proc) { p.Err = map[string]error{procstats.OpCreateTime: errors.New("EIO")} })
	res := scrape(t, s, procstats.Target{PID: 7})
	assert.Equal(t, procstats.Counts{Other: 1}, res.Counts)
	assert.Empty(t, res.Ended, "an unexpected error does not end the process")
	src.Update(7, func(p *procstatstest.Proc) { p.Err = nil })
	res = scrape(t, s, procstats.Target{PID: 7})
	require.Len(t, res.Readings, 1)
	assert.False(t, res.Readings[0].New)
}

func TestKeyChangeAndUntarget(t *testing.T) {
	src := procstatstest.NewSource("h")
	src.Set(7, python(1000))
	s := newScraper(t, src, procstats.Options{})
	a := scrape(t, s, procstats.Target{PID: 7, Key: "a"}).Readings[0]

	res := scrape(t, s, procstats.Target{PID: 7, Key: "b"})
	require.Len(t, res.Readings, 1)
	assert.True(t, res.Readings[0].New)
	assert.False(t, res.Readings[0].Restarted)
	assert.Equal(t, "b", res.Readings[0].Key)
	assert.Equal(t, []procstats.Reading{a}, res.Ended)
	b := res.Readings[0]

	// No longer announced: ended once, then forgotten.
	res = scrape(t, s)
	assert.Empty(t, res.Readings)
	assert.Empty(t, res.Errors)
	assert.Equal(t, []procstats.Reading{b}, res.Ended)
	assert.Zero(t, s.TrackedCount())
	res = scrape(t, s)
	assert.Empty(t, res.Ended)
}

func TestDuplicateAnnouncementLastKeyWins(t *testing.T) {
	src := procstatstest.NewSource("h")
	src.Set(7, python(1000))
	s := newScraper(t, src, procstats.Options{})
	res := scrape(t, s, procstats.Target{PID: 7, Key: "first"}, procstats.Target{PID: 7, Key: "last"})
	require.Len(t, res.Readings, 1)
	assert.Equal(t, "last", res.Readings[0].Key)
}

func includeHost() *procstatstest.Source {
	src := procstatstest.NewSource("h")
	src.Set(20, python(1000)) // name python3, exe python3.12
	src.Set(21, procstatstest.Proc{CreateTime: 1, Name: "bash", Exe: "/bin/bash", Cmdline: "bash -c gym"})
	src.Set(22, procstatstest.Proc{CreateTime: 2, Name: "launcher", Exe: "/opt/bin/python3 (deleted)", Cmdline: "/opt/bin/python3 worker.py"})
	src.Set(23, procstatstest.Proc{CreateTime: 3, Name: "kworker/0:1"}) // no exe, no command line
	src.Set(24, procstatstest.Proc{CreateTime: 4, Name: "ray", Exe: "/usr/bin/ray", Cmdline: "ray start --head",
		Err: map[string]error{"exe": procstatstest.ErrPermission}})
	return src
}

func TestIncludeByExecutable(t *testing.T) {
	src := includeHost()
	s := newScraper(t, src, procstats.Options{Include: []procstats.IncludeRule{{Executable: "python3"}}})
	res := scrape(t, s)
	assert.Empty(t, res.Errors)
	assert.Equal(t, []int32{20, 22}, pidsOf(res.Readings), "process name or executable file name")
	for _, r := range res.Readings {
		assert.Equal(t, procstats.OriginInclude, r.Origin)
		assert.Empty(t, r.Key)
		assert.True(t, r.New)
	}
	assert.Equal(t, "python3.12", res.Readings[0].ExecutableName)
	assert.Equal(t, "python3", res.Readings[1].ExecutableName, "(deleted) is not part of the name")

	s = newScraper(t, src, procstats.Options{Include: []procstats.IncludeRule{{Executable: "python3.12"}, {Executable: "ray"}}})
	assert.Equal(t, []int32{20, 24}, pidsOf(scrape(t, s).Readings))
}

func TestIncludeByCommandLine(t *testing.T) {
	src := includeHost()
	s := newScraper(t, src, procstats.Options{Include: []procstats.IncludeRule{{CommandLine: `nemo_gym\.server --port=\d+`}}})
	res := scrape(t, s)
	assert.Equal(t, []int32{20}, pidsOf(res.Readings))

	s = newScraper(t, src, procstats.Options{Include: []procstats.IncludeRule{{CommandLine: `gym`}}})
	assert.Equal(t, []int32{20, 21}, pidsOf(scrape(t, s).Readings), "unanchored: searched in the line")

	// Both matchers: both must match.
	s = newScraper(t, src, procstats.Options{Include: []procstats.IncludeRule{{Executable: "bash", CommandLine: `^python`}}})
	assert.Empty(t, scrape(t, s).Readings)
	s = newScraper(t, src, procstats.Options{Include: []procstats.IncludeRule{{Executable: "python3", CommandLine: `worker`}}})
	assert.Equal(t, []int32{22}, pidsOf(scrape(t, s).Readings))
}

func TestIncludedProcessLifecycle(t *testing.T) {
	src := includeHost()
	s := newScraper(t, src, procstats.Options{Include: []procstats.IncludeRule{{Executable: "python3"}}})
	scrape(t, s)
	calls := src.Calls()
	res := scrape(t, s)
	assert.Equal(t, []int32{20, 22}, pidsOf(res.Readings))
	assert.False(t, res.Readings[0].New)
	// Per unmatched process: name, exe (+ the scan's create-time check for matched ones).
	assert.LessOrEqual(t, src.Calls()-calls, 2*5+3*2)

	// Announced while included: read once, as announced (a new identity).
	res = scrape(t, s, procstats.Target{PID: 20, Key: "k"})
	assert.Equal(t, []int32{20, 22}, pidsOf(res.Readings))
	assert.Equal(t, procstats.OriginAnnounced, res.Readings[0].Origin)
	assert.True(t, res.Readings[0].New)
	assert.Equal(t, []int32{20}, pidsOf(res.Ended))

	// An included process ends: ended, and no error (nobody asked for that pid).
	src.Remove(22)
	res = scrape(t, s, procstats.Target{PID: 20, Key: "k"})
	assert.Empty(t, res.Errors)
	assert.Equal(t, []int32{20}, pidsOf(res.Readings))
	assert.Equal(t, []int32{22}, pidsOf(res.Ended))

	// A reused pid is matched afresh.
	src.Set(22, procstatstest.Proc{CreateTime: 99, Name: "python3", Exe: "/usr/bin/python3"})
	res = scrape(t, s)
	assert.Equal(t, []int32{20, 22}, pidsOf(res.Readings))
	assert.Equal(t, procstats.OriginInclude, res.Readings[0].Origin)
	assert.Equal(t, []int32{20}, pidsOf(res.Ended), "announced identity of 20 ended")
	src.Set(22, procstatstest.Proc{CreateTime: 100, Name: "bash", Exe: "/bin/bash"})
	res = scrape(t, s)
	assert.Equal(t, []int32{20}, pidsOf(res.Readings), "the new process on pid 22 does not match")
	assert.Equal(t, []int32{22}, pidsOf(res.Ended))
	assert.Equal(t, 1, s.TrackedCount())
}

func TestIncludeListError(t *testing.T) {
	src := includeHost()
	src.SetPidsError(errors.New("proc not mounted"))
	s := newScraper(t, src, procstats.Options{Include: []procstats.IncludeRule{{Executable: "python3"}}})
	res := scrape(t, s, procstats.Target{PID: 21})
	assert.Equal(t, []int32{21}, pidsOf(res.Readings), "announced pids are still read")
	assert.Equal(t, procstats.Counts{Other: 1}, res.Counts)
	assert.Equal(t, []string{"listing processes for include rules: proc not mounted"}, errorStrings(res))
}

func TestSelf(t *testing.T) {
	self := int32(os.Getpid())
	src := procstatstest.NewSource("h")
	src.Set(self, procstatstest.Proc{CreateTime: 1, Name: "otelcol-gym", Exe: "/usr/bin/otelcol-gym", Threads: 9})
	src.Set(self+1, python(2))
	s := newScraper(t, src, procstats.Options{IncludeSelf: true, Include: []procstats.IncludeRule{{CommandLine: "."}}})
	res := scrape(t, s)
	require.Len(t, res.Readings, 2)
	assert.Equal(t, self, res.Readings[0].PID)
	assert.Equal(t, procstats.OriginSelf, res.Readings[0].Origin)
	assert.Equal(t, "otelcol-gym", res.Readings[0].ExecutableName)
	assert.Equal(t, procstats.OriginInclude, res.Readings[1].Origin)

	// Announced wins over self.
	res = scrape(t, s, procstats.Target{PID: self, Key: "me"})
	require.Len(t, res.Readings, 2)
	assert.Equal(t, procstats.OriginAnnounced, res.Readings[0].Origin)
}

func TestMaxProcesses(t *testing.T) {
	src := procstatstest.NewSource("h")
	for pid := int32(100); pid < 110; pid++ {
		src.Set(pid, python(int64(pid)))
	}
	targets := []procstats.Target{{PID: 104}, {PID: 103}, {PID: 102}, {PID: 101}}
	s := newScraper(t, src, procstats.Options{MaxProcesses: 3, Include: []procstats.IncludeRule{{Executable: "python3"}}})
	res := scrape(t, s, targets...) // 101..104 announced; 100, 105..109 included
	assert.Equal(t, []int32{101, 102, 103}, pidsOf(res.Readings), "announced first, in pid order")
	assert.Equal(t, procstats.Counts{Limit: 1 + 6}, res.Counts)
	assert.Equal(t, []string{"7 processes not read: a scrape reads at most 3 (max processes)"}, errorStrings(res))
	var le *procstats.LimitError
	require.ErrorAs(t, res.Errors[0], &le)
	assert.Equal(t, 7, le.Skipped)
	assert.Equal(t, 3, s.TrackedCount(), "the cache holds at most MaxProcesses")
}

func TestDefaultMaxProcesses(t *testing.T) {
	src := procstatstest.NewSource("h")
	var targets []procstats.Target
	for pid := int32(1); pid <= procstats.DefaultMaxProcesses+5; pid++ {
		src.Set(pid, python(1))
		targets = append(targets, procstats.Target{PID: pid})
	}
	s := newScraper(t, src, procstats.Options{})
	res := scrape(t, s, targets...)
	assert.Len(t, res.Readings, procstats.DefaultMaxProcesses)
	assert.Equal(t, 5, res.Counts.Limit)
}

func TestCancelledScrapeEndsNothing(t *testing.T) {
	src := procstatstest.NewSource("h")
	src.Set(7, python(1))
	src.Set(8, python(1))
	s := newScraper(t, src, procstats.Options{})
	scrape(t, s, procstats.Target{PID: 7}, procstats.Target{PID: 8})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := s.Scrape(ctx, []procstats.Target{{PID: 7}, {PID: 8}})
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, res.Ended)
	assert.Equal(t, 2, s.TrackedCount())
	res = scrape(t, s, procstats.Target{PID: 7}, procstats.Target{PID: 8})
	assert.Len(t, res.Readings, 2)
	assert.False(t, res.Readings[0].New)
}

func TestIncludeRuleValidate(t *testing.T) {
	assert.NoError(t, procstats.IncludeRule{Executable: "python3"}.Validate())
	assert.NoError(t, procstats.IncludeRule{CommandLine: `^python3? .*gym`}.Validate())
	assert.NoError(t, procstats.IncludeRule{Executable: "python3", CommandLine: "x"}.Validate())
	assert.EqualError(t, procstats.IncludeRule{}.Validate(), "an include rule needs executable or command_line")
	err := procstats.IncludeRule{CommandLine: "(unclosed"}.Validate()
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "command_line: error parsing regexp"), err.Error())

	_, err = procstats.NewScraper(procstatstest.NewSource("h"), procstats.Options{Include: []procstats.IncludeRule{{Executable: "a"}, {}, {CommandLine: "["}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "include[1]: an include rule needs")
	assert.Contains(t, err.Error(), "include[2]: command_line:")
	_, err = procstats.NewScraper(procstatstest.NewSource("h"), procstats.Options{MaxProcesses: -1})
	assert.Error(t, err)
}

func TestClassify(t *testing.T) {
	assert.Equal(t, procstats.ErrorKind(""), procstats.Classify(nil))
	assert.Equal(t, procstats.KindPermission, procstats.Classify(procstatstest.ErrPermission))
	assert.Equal(t, procstats.KindNotFound, procstats.Classify(procstatstest.ErrNotExist))
	assert.Equal(t, procstats.KindOther, procstats.Classify(errors.New("x")))
	c := procstats.Counts{NotFound: 1, Permission: 2, Other: 3, Limit: 4}
	assert.Equal(t, 10, c.Total())
	assert.Equal(t, 2, c.Of(procstats.KindPermission))
	assert.Equal(t, 4, c.Of(procstats.KindLimit))
	assert.Equal(t, "include", procstats.OriginInclude.String())
}

func TestIncludeScanErrors(t *testing.T) {
	src := includeHost()
	src.Update(21, func(p *procstatstest.Proc) { p.Err = map[string]error{procstats.OpCmdline: errors.New("EIO")} })
	src.Update(24, func(p *procstatstest.Proc) {
		p.Err = map[string]error{procstats.OpCmdline: procstatstest.ErrPermission}
	})
	src.Update(23, func(p *procstatstest.Proc) { p.Err = map[string]error{procstats.OpCmdline: procstatstest.ErrNotExist} })
	s := newScraper(t, src, procstats.Options{Include: []procstats.IncludeRule{{CommandLine: "gym"}}})
	res := scrape(t, s)
	assert.Equal(t, []int32{20}, pidsOf(res.Readings))
	// Gone or hidden processes are not errors (no one asked for them); unexpected failures are.
	assert.Equal(t, procstats.Counts{Other: 1}, res.Counts)
	assert.Equal(t, []string{"pid 21: reading command line: EIO"}, errorStrings(res))
}

func TestKeyChangeThenGoneEndsOnce(t *testing.T) {
	src := procstatstest.NewSource("h")
	src.Set(7, python(1000))
	s := newScraper(t, src, procstats.Options{})
	a := scrape(t, s, procstats.Target{PID: 7, Key: "a"}).Readings[0]
	src.Update(7, func(p *procstatstest.Proc) { p.Err = map[string]error{procstats.OpFDs: procstatstest.ErrNotExist} })
	res := scrape(t, s, procstats.Target{PID: 7, Key: "b"})
	assert.Empty(t, res.Readings)
	assert.Equal(t, []procstats.Reading{a}, res.Ended)
	assert.Zero(t, s.TrackedCount())
}
