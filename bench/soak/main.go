// Command soak runs the real otelcol-gym under steady load and watches its resources
// (`make soak-load DURATION=10m RATE=100000` runs it):
//
//	go run ./bench/soak --duration 10m --rate 100000 [--interval 5s]
//
// A collector is started on the bench configuration (gym receiver over HTTP, the default
// processors, otlp_http to a sink in this process that counts and discards), and
// `gymevents gen` sends it --rate events per second for --duration. Every --interval the
// harness samples the collector's RSS (/proc/<pid>/status), Go heap (its own
// otelcol_process_runtime_heap_alloc_bytes), goroutines (the pprof extension's goroutine
// profile), open file descriptors (/proc/<pid>/fd), threads and CPU, and prints them.
// Verdict: after a warm-up (the first 10% of the run, at least 30 s), the median of the last
// third of the samples is compared with the median of the first third: RSS may grow by
// max(10%, 16 MiB), goroutines and file descriptors by 5, or the run is "not flat".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/gym-telemetry/otelcol-gym/bench/internal/cli"
	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

type sample struct {
	at                 time.Duration
	rss, heap          int64
	goroutines, fds    int
	threads            int
	cpuPct             float64
	accepted, exported int64
}

func main() {
	var collector, gymevents string
	cli.Collector(&collector)
	cli.Gymevents(&gymevents)
	var (
		outDir    = flag.String("out-dir", "_build/bench/soak", "where the configuration and the log go")
		duration  = flag.Duration("duration", 10*time.Minute, "how long the load lasts")
		rate      = flag.Float64("rate", 100000, "events per second")
		interval  = flag.Duration("interval", 5*time.Second, "time between two samples")
		processes = flag.Int("processes", 64, "Gym processes in the generated stream")
		conns     = flag.Int("connections", 4, "HTTP connections of the generator")
	)
	flag.Parse()
	var flat bool
	harness.Main("bench/soak", func(ctx context.Context) (err error) {
		flat, err = run(ctx, collector, gymevents, *outDir, *duration, *rate, *interval, *processes, *conns)
		return err
	})
	if !flat {
		os.Exit(3)
	}
}

func run(ctx context.Context, collector, gymevents, outDir string, duration time.Duration, rate float64, interval time.Duration, processes, conns int) (bool, error) {
	if duration <= 0 || rate <= 0 || interval <= 0 {
		return false, fmt.Errorf("--duration, --rate and --interval must be positive")
	}
	sink, err := harness.StartSink()
	if err != nil {
		return false, err
	}
	defer sink.Close()
	c, ports, err := harness.StartGym(ctx, harness.ServiceOptions{Name: "otelcol-gym-soak", Bin: collector, Dir: outDir},
		sink.URL, "", "10s")
	if err != nil {
		return false, err
	}
	defer c.Stop()

	fmt.Println(cli.Machine())
	fmt.Printf("soak: %s at %.0f events/s (%d Gym processes, %d connections), a sample every %s; collector pid %d, log %s\n\n",
		duration, rate, processes, conns, interval, c.Pid, c.LogPath)

	type genDone struct {
		rep harness.GenReport
		err error
	}
	done := make(chan genDone, 1)
	go func() {
		rep, err := harness.Gen(ctx, gymevents, "--endpoint", fmt.Sprintf("http://127.0.0.1:%d", ports.HTTP),
			"--rate", strconv.FormatFloat(rate, 'f', -1, 64), "--duration", duration.String(),
			"--events", strconv.FormatInt(int64(rate*duration.Seconds()), 10),
			"--processes", strconv.Itoa(processes), "--concurrency", strconv.Itoa(conns))
		done <- genDone{rep, err}
	}()

	fmt.Printf("%8s %9s %9s %10s %4s %7s %6s %12s %9s\n", "t", "RSS MiB", "heap MiB", "goroutines", "fds", "threads", "CPU %", "lines acc.", "exports")
	var samples []sample
	start := time.Now()
	lastCPU, _ := c.CPU()
	lastT := start
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var g genDone
loop:
	for {
		select {
		case g = <-done:
			break loop
		case <-ctx.Done():
			g = <-done
			break loop
		case now := <-tick.C:
			if !c.Alive() {
				return false, fmt.Errorf("the collector exited; its log:\n%s", c.LogTail(30))
			}
			s := sample{at: now.Sub(start).Round(time.Second)}
			mem, _ := harness.ProcMem(c.Pid)
			s.rss, s.threads = mem.RSS, mem.Threads
			s.fds, _ = harness.ProcFDs(c.Pid)
			s.goroutines, _ = c.Goroutines(ctx)
			if m, err := c.Metrics(ctx); err == nil {
				s.heap = int64(harness.Sum(m, "otelcol_process_runtime_heap_alloc_bytes"))
				s.accepted = int64(harness.Sum(m, "otelcol_receiver_gym_lines_accepted"))
			}
			s.exported, _ = sink.Requests()
			cpu, _ := c.CPU()
			s.cpuPct = 100 * (cpu - lastCPU).Seconds() / now.Sub(lastT).Seconds()
			lastCPU, lastT = cpu, now
			samples = append(samples, s)
			fmt.Printf("%8s %9.1f %9.1f %10d %4d %7d %6.1f %12d %9d\n", s.at, mb(s.rss), mb(s.heap), s.goroutines, s.fds, s.threads, s.cpuPct, s.accepted, s.exported)
		}
	}
	if g.err != nil {
		return false, g.err
	}
	fmt.Printf("\ngymevents gen: sent %d events in %.1fs (%.0f events/s), accepted %d, rejected %d, not delivered %d lines, 503 retries %d\n",
		g.rep.Events, g.rep.Seconds, g.rep.EventsPerSec, g.rep.AcceptedEvents, g.rep.Rejected, g.rep.FailedLines, g.rep.Retries503)
	return verdict(samples, duration), nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func verdict(samples []sample, duration time.Duration) bool {
	warm := max(30*time.Second, duration/10)
	var steady []sample
	for _, s := range samples {
		if s.at >= warm {
			steady = append(steady, s)
		}
	}
	if len(steady) < 6 {
		fmt.Printf("verdict: too few samples after the %s warm-up (%d) to judge\n", warm, len(steady))
		return false
	}
	third := len(steady) / 3
	first, last := steady[:third], steady[len(steady)-third:]
	med := func(ss []sample, f func(sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	rss := func(s sample) float64 { return mb(s.rss) }
	heap := func(s sample) float64 { return mb(s.heap) }
	gor := func(s sample) float64 { return float64(s.goroutines) }
	fds := func(s sample) float64 { return float64(s.fds) }
	r0, r1 := med(first, rss), med(last, rss)
	h0, h1 := med(first, heap), med(last, heap)
	g0, g1 := med(first, gor), med(last, gor)
	f0, f1 := med(first, fds), med(last, fds)
	// Least-squares slope of RSS over the steady samples, MiB per minute.
	var sx, sy, sxx, sxy float64
	for _, s := range steady {
		x, y := s.at.Minutes(), rss(s)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(steady))
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	fmt.Printf("after the %s warm-up, median of the first third -> last third of %d samples:\n", warm, len(steady))
	fmt.Printf("  RSS %.1f -> %.1f MiB (slope %+.2f MiB/min), heap %.1f -> %.1f MiB, goroutines %.0f -> %.0f, fds %.0f -> %.0f\n",
		r0, r1, slope, h0, h1, g0, g1, f0, f1)
	flat := r1 <= r0+max(0.10*r0, 16) && g1 <= g0+5 && f1 <= f0+5
	if flat {
		fmt.Println("verdict: flat")
	} else {
		fmt.Println("verdict: NOT FLAT")
	}
	return flat
}
