package procstats_test

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"testing"

	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats/procstatstest"
)

// benchScrape measures one steady-state scrape (every process already known).
func benchScrape(b *testing.B, src procstats.Source, opts procstats.Options, targets []procstats.Target, want int) {
	b.Helper()
	s, err := procstats.NewScraper(src, opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	res, err := s.Scrape(ctx, targets)
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Readings) != want || res.Counts.Total() != 0 {
		b.Fatalf("read %d processes (want %d), errors %v", len(res.Readings), want, res.Err())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Scrape(ctx, targets); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(want), "ns/process")
}

// BenchmarkScrapeFake is the Scraper's own cost, over fake processes.
func BenchmarkScrapeFake(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("announced=%d", n), func(b *testing.B) {
			src := procstatstest.NewSource("h")
			targets := make([]procstats.Target, n)
			for i := range n {
				pid := int32(1000 + i)
				src.Set(pid, python(int64(pid)))
				targets[i] = procstats.Target{PID: pid, Key: fmt.Sprintf("resource-%d", i)}
			}
			benchScrape(b, src, procstats.Options{}, targets, n)
		})
	}
}

// startSleepers starts n real idle processes and returns their pids.
func startSleepers(b *testing.B, n int) []procstats.Target {
	b.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		b.Skip("real processes on Linux and macOS")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		b.Skip("no sleep")
	}
	targets := make([]procstats.Target, 0, n)
	cmds := make([]*exec.Cmd, 0, n)
	b.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	for i := range n {
		c := exec.Command(sleep, "3600")
		if err := c.Start(); err != nil {
			b.Skipf("started %d of %d processes: %v", i, n, err)
		}
		cmds = append(cmds, c)
		targets = append(targets, procstats.Target{PID: int32(c.Process.Pid), Key: fmt.Sprintf("resource-%d", i)})
	}
	return targets
}

// BenchmarkScrapeHost reads real processes with gopsutil: n `sleep` processes it starts, and
// every process of the host.
func BenchmarkScrapeHost(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("announced=%d", n), func(b *testing.B) {
			targets := startSleepers(b, n)
			benchScrape(b, procstats.NewHostSource(), procstats.Options{}, targets, n)
		})
	}
	b.Run("announced=all-host-pids", func(b *testing.B) {
		src := procstats.NewHostSource()
		pids, err := src.Pids(context.Background())
		if err != nil {
			b.Skip(err)
		}
		// Only this user's processes (others' fds are unreadable unprivileged) that stay alive.
		s, _ := procstats.NewScraper(src, procstats.Options{})
		var targets []procstats.Target
		for _, pid := range pids {
			targets = append(targets, procstats.Target{PID: pid})
		}
		res, _ := s.Scrape(context.Background(), targets)
		targets = targets[:0]
		for _, r := range res.Readings {
			targets = append(targets, procstats.Target{PID: r.PID})
		}
		b.Logf("%d host processes, %d readable", len(pids), len(targets))
		benchScrape(b, src, procstats.Options{}, targets, len(targets))
	})
	// Include rules scan every process of the host (the sleepers included) on every scrape.
	b.Run("include-scan=100-of-host", func(b *testing.B) {
		sleepers := startSleepers(b, 100)
		src := procstats.NewHostSource()
		pids, _ := src.Pids(context.Background())
		b.Logf("scanning %d host processes", len(pids))
		opts := procstats.Options{Include: []procstats.IncludeRule{{Executable: "sleep", CommandLine: "^" + regexp.QuoteMeta(sleepPath()) + " 3600$"}}}
		benchScrape(b, src, opts, nil, len(sleepers))
	})
}

func sleepPath() string {
	p, _ := exec.LookPath("sleep")
	return p
}
