// Command e2e is the end-to-end benchmark of otelcol-gym (`make bench` runs it): the real
// binary, on loopback, under `gymevents gen` load.
//
//	go run ./bench/e2e [--collector _build/otelcol-gym] [--gymevents _build/gymevents]
//
// Throughput: for each GOMAXPROCS (1 and 2) a collector is started on a bench configuration
// (gym receiver over HTTP, collection_interval 10s, memory_limiter and batch, otlp_http to a
// sink in this process that decodes, counts and discards), warmed up, then driven --repeat
// times by `gymevents gen --pregen` (every body generated before the timed part, so that the
// generator does not take CPU from the collector while it sends) with --events events in
// bodies of --batch lines over --connections connections. The collector's CPU time
// (user+sys, /proc/<pid>/stat) is read before the run and after the first export that
// follows it (so the aggregation and export of what was sent are paid for); the wall time is
// the generator's, from the first body sent to the last answer. The median run by events
// per CPU-second is printed, with the collector's RSS.
//
// Series: for counter and histogram series at each --series count, a fresh collector gets
// that many distinct series (1,000 per resource, within the default cardinality limit), and
// the harness reads the live heap after a forced GC (pprof heap?gc=1) and the RSS before and
// after: memory per series. Then it measures the export: the collector's CPU per collection
// (over --export-intervals idle collections, minus an idle collector's), the time from the
// collection to the last byte at the sink, and the bytes on the wire.
//
// Profile: --profile S captures S seconds of CPU profile of a collector under load (the pprof
// extension) and prints its top entries.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gym-telemetry/otelcol-gym/bench/internal/cli"
	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

type options struct {
	cli.GenLoad
	outDir              string
	procs               string
	repeat, connections int
	series              string
	exportIntervals     int
	profile             int
	interval            time.Duration
}

func main() {
	var o options
	o.Register(3_000_000, "events per measured run")
	flag.StringVar(&o.outDir, "out-dir", "_build/bench", "where the configurations, logs and profiles go")
	flag.StringVar(&o.procs, "gomaxprocs", "1,2", "GOMAXPROCS values to run the collector with")
	flag.IntVar(&o.repeat, "repeat", 3, "measured runs per GOMAXPROCS (the median is reported)")
	flag.IntVar(&o.connections, "connections", 4, "HTTP connections of the generator")
	flag.StringVar(&o.series, "series", "10000,100000", "series counts for the memory and export measurements (empty: skip)")
	flag.IntVar(&o.exportIntervals, "export-intervals", 3, "collections measured per export-cost figure")
	flag.IntVar(&o.profile, "profile", 30, "seconds of CPU profile under load (0: skip)")
	flag.DurationVar(&o.interval, "collection-interval", 10*time.Second, "the receiver's collection_interval")
	flag.Parse()
	harness.Main("bench/e2e", func(ctx context.Context) error { return run(ctx, o) })
}

func run(ctx context.Context, o options) error {
	if err := cli.Ready(o.outDir, false, "build gymevents", o.Collector, o.Gymevents); err != nil {
		return err
	}
	sink, err := harness.StartSink()
	if err != nil {
		return err
	}
	defer sink.Close()

	fmt.Println(cli.Machine())
	fmt.Printf("collector: %s; generator: %s\n\n", o.Collector, o.Gymevents)

	var idlePerCollection time.Duration
	if o.procs != "" {
		res, idle, err := throughput(ctx, o, sink)
		if err != nil {
			return err
		}
		idlePerCollection = idle
		printThroughput(o, res)
	}
	if o.series != "" {
		if err := series(ctx, o, sink, idlePerCollection); err != nil {
			return err
		}
	}
	if o.profile > 0 {
		if err := profile(ctx, o, sink); err != nil {
			return err
		}
	}
	return nil
}

func startGym(ctx context.Context, o options, sink *harness.Sink, name string, env ...string) (*harness.Service, harness.GymPorts, error) {
	return harness.StartGym(ctx, harness.ServiceOptions{Name: name, Bin: o.Collector, Env: env, Dir: o.outDir},
		sink.URL, "", o.interval.String())
}

type runResult struct {
	gomaxprocs     int
	runs           []runResult // all runs of this GOMAXPROCS (in the summary row only)
	sent, accepted int64
	cpu            time.Duration
	wall           float64
	rss, hwm       int64
	retries503     int64
	genCPU         time.Duration // the generator's CPU while sending (its total minus generating)
}

func (r runResult) perCPU() float64  { return float64(r.accepted) / r.cpu.Seconds() }
func (r runResult) perWall() float64 { return float64(r.accepted) / r.wall }

// throughput measures events per CPU-second and per wall-second for each GOMAXPROCS. It also
// returns the CPU an idle collector spends per collection.
func throughput(ctx context.Context, o options, sink *harness.Sink) ([]runResult, time.Duration, error) {
	var out []runResult
	var idlePerCollection time.Duration
	seed := o.Stream.Seed
	procs, err := cli.Ints(o.procs)
	if err != nil {
		return nil, 0, fmt.Errorf("--gomaxprocs: %w", err)
	}
	for _, n := range procs {
		c, ports, err := startGym(ctx, o, sink, fmt.Sprintf("otelcol-gym-p%d", n), fmt.Sprintf("GOMAXPROCS=%d", n))
		if err != nil {
			return nil, 0, err
		}
		endpoint := fmt.Sprintf("http://127.0.0.1:%d", ports.HTTP)
		if err := postTiny(ctx, endpoint); err != nil { // so that collections export something
			c.Stop()
			return nil, 0, err
		}
		if idlePerCollection == 0 {
			// An idle collector's CPU over three collections (one event received).
			if _, err := sink.WaitCollection(ctx, time.Now(), 0); err != nil {
				c.Stop()
				return nil, 0, err
			}
			c0, _ := c.CPU()
			if _, err := waitCollections(ctx, sink, 3); err != nil {
				c.Stop()
				return nil, 0, err
			}
			c1, _ := c.CPU()
			idlePerCollection = (c1 - c0) / 3
		}
		// Warm-up: the series exist and the buffers are grown before the measured runs.
		if _, err := harness.Gen(ctx, o.Gymevents, genArgs(o, endpoint, o.Stream.Events/5, seed)...); err != nil {
			c.Stop()
			return nil, 0, err
		}
		seed++
		var runs []runResult
		for r := range o.repeat {
			res, err := measureRun(ctx, o, sink, c, endpoint, seed)
			seed++
			if err != nil {
				c.Stop()
				return nil, 0, err
			}
			res.gomaxprocs = n
			fmt.Printf("  GOMAXPROCS=%d run %d: %d events accepted, CPU %.2fs, wall %.2fs: %.0f events/CPU-s, %.0f events/wall-s (generator: ~%.2fs of CPU while sending)\n",
				n, r+1, res.accepted, res.cpu.Seconds(), res.wall, res.perCPU(), res.perWall(), res.genCPU.Seconds())
			runs = append(runs, res)
		}
		c.Stop()
		slices.SortFunc(runs, func(a, b runResult) int {
			switch {
			case a.perCPU() < b.perCPU():
				return -1
			case a.perCPU() > b.perCPU():
				return 1
			}
			return 0
		})
		med := runs[len(runs)/2]
		med.runs = runs
		out = append(out, med)
	}
	fmt.Printf("  idle collector: %.1f ms of CPU per collection interval\n\n", idlePerCollection.Seconds()*1000)
	return out, idlePerCollection, nil
}

func genArgs(o options, endpoint string, events int64, seed uint64) []string {
	s := o.Stream
	s.Events, s.Seed = events, seed
	return append([]string{
		"--endpoint", endpoint, "--pregen",
		"--concurrency", strconv.Itoa(o.connections),
		"--duration", "10m", // a bound, never reached
	}, s.Args()...)
}

func measureRun(ctx context.Context, o options, sink *harness.Sink, c *harness.Service, endpoint string, seed uint64) (runResult, error) {
	cpu0, err := c.CPU()
	if err != nil {
		return runResult{}, err
	}
	rep, err := harness.Gen(ctx, o.Gymevents, genArgs(o, endpoint, o.Stream.Events, seed)...)
	if err != nil {
		return runResult{}, err
	}
	sentAt := time.Now()
	// The first export after the run: what was sent has been aggregated and exported.
	wctx, cancel := context.WithTimeout(ctx, 2*o.interval+30*time.Second)
	defer cancel()
	if _, err := sink.WaitCollection(wctx, sentAt, 200*time.Millisecond); err != nil {
		return runResult{}, fmt.Errorf("no export after the run: %w", err)
	}
	cpu1, err := c.CPU()
	if err != nil {
		return runResult{}, err
	}
	mem, _ := harness.ProcMem(c.Pid)
	if rep.AcceptedEvents != rep.Events || rep.Rejected > 0 || rep.FailedLines > 0 {
		fmt.Printf("  WARNING: sent %d events, accepted %d, rejected %d, not delivered %d lines\n",
			rep.Events, rep.AcceptedEvents, rep.Rejected, rep.FailedLines)
	}
	return runResult{
		sent: rep.Events, accepted: rep.AcceptedEvents,
		cpu: cpu1 - cpu0, wall: rep.Seconds,
		rss: mem.RSS, hwm: mem.HWM, retries503: rep.Retries503,
		genCPU: rep.CPU - time.Duration(rep.PregenSeconds*float64(time.Second)),
	}, nil
}

// bestWall is the run with the most events per wall-second: on a shared machine the wall
// time of a run is its CPU time plus the time other processes took the cores.
func (r runResult) bestWall() runResult {
	best := r
	for _, x := range r.runs {
		if x.perWall() > best.perWall() {
			best = x
		}
	}
	return best
}

func printThroughput(o options, res []runResult) {
	fmt.Printf("End to end: HTTP in (bodies of %d lines, %d connections, %d Gym processes), aggregate, OTLP/HTTP out; %d runs of %d events per GOMAXPROCS\n",
		o.Stream.Batch, o.connections, o.Stream.Processes, o.repeat, o.Stream.Events)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "GOMAXPROCS\tevents sent\tevents accepted\tCPU s\tevents/CPU-s (median)\t(min-max)\twall s\tevents/wall-s (best)\tRSS MiB\tpeak RSS MiB\t503 retries\t")
	for _, r := range res {
		lo, hi := r.runs[0].perCPU(), r.runs[len(r.runs)-1].perCPU()
		w := r.bestWall()
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.2f\t%.0f\t%.0f-%.0f\t%.2f\t%.0f\t%.0f\t%.0f\t%d\t\n",
			r.gomaxprocs, r.sent, r.accepted, r.cpu.Seconds(), r.perCPU(), lo, hi, w.wall, w.perWall(),
			float64(r.rss)/(1<<20), float64(r.hwm)/(1<<20), r.retries503)
	}
	_ = tw.Flush()
	if len(res) == 2 && res[0].gomaxprocs == 1 && res[1].gomaxprocs == 2 {
		fmt.Printf("scaling 1 -> 2 cores, events per wall-second (best runs): x%.2f (the generator's HTTP client shares the same cores)\n",
			res[1].bestWall().perWall()/res[0].bestWall().perWall())
	}
	fmt.Println()
}

// waitCollections waits for n more collections and returns the last.
func waitCollections(ctx context.Context, sink *harness.Sink, n int) (harness.Collection, error) {
	var last harness.Collection
	after := time.Now()
	for range n {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		c, err := sink.WaitCollection(wctx, after, 200*time.Millisecond)
		cancel()
		if err != nil {
			return last, err
		}
		last, after = c, c.Time
	}
	return last, nil
}

type seriesKind struct {
	name, metric string
	line         func(i int) string
}

var kinds = []seriesKind{
	{"counter", "gym.sandbox.create_retry_total", func(i int) string {
		return `{"event":"sandbox.create_retry","provider":"p` + strconv.Itoa(i) + `"}`
	}},
	{"histogram", "gym.sandbox.exec_duration_ms", func(i int) string {
		return `{"event":"sandbox.exec","provider":"p` + strconv.Itoa(i) + `","duration_ms":` + strconv.Itoa(100+i%5000) + `}`
	}},
}

const seriesPerResource = 1000

func series(ctx context.Context, o options, sink *harness.Sink, idle time.Duration) error {
	counts, err := cli.Ints(o.series)
	if err != nil {
		return fmt.Errorf("--series: %w", err)
	}
	for _, n := range counts {
		if n < seriesPerResource {
			return fmt.Errorf("--series: %d (at least %d)", n, seriesPerResource)
		}
	}
	fmt.Printf("Series: %d distinct series per resource (sandbox.create_retry -> counter, sandbox.exec -> histogram of 13 buckets, by provider), GOMAXPROCS=2\n", seriesPerResource)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tseries\texported points\theap/series B\tRSS/series B\texport CPU ms\texport latency ms\twire KB/collection\t")
	for _, k := range kinds {
		for _, n := range counts {
			r, err := seriesRun(ctx, o, sink, k, n, idle)
			if err != nil {
				return err
			}
			fmt.Printf("  %s x %d: heap +%.1f MiB, RSS +%.1f MiB, export %.1f ms of CPU\n", k.name, n,
				float64(r.heap)/(1<<20), float64(r.rss)/(1<<20), r.exportCPU.Seconds()*1000)
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%.1f\t%.1f\t%.0f\t\n", k.name, n, r.points,
				float64(r.heap)/float64(n), float64(r.rss)/float64(n),
				r.exportCPU.Seconds()*1000, r.latency.Seconds()*1000, float64(r.wire)/1e3)
		}
	}
	_ = tw.Flush()
	fmt.Printf("export CPU: the collector's user+sys per collection over %d collections, minus an idle collector's (%.1f ms); latency: collection time to the last byte at the sink (median)\n\n",
		o.exportIntervals, idle.Seconds()*1000)
	return nil
}

type seriesResult struct {
	points    int64
	heap, rss int64
	exportCPU time.Duration
	latency   time.Duration
	wire      int64
}

func seriesRun(ctx context.Context, o options, sink *harness.Sink, k seriesKind, n int, idle time.Duration) (seriesResult, error) {
	var r seriesResult
	c, ports, err := startGym(ctx, o, sink, fmt.Sprintf("otelcol-gym-%s-%d", k.name, n), "GOMAXPROCS=2")
	if err != nil {
		return r, err
	}
	defer c.Stop()
	if err := postTiny(ctx, fmt.Sprintf("http://127.0.0.1:%d", ports.HTTP)); err != nil {
		return r, err
	}
	if _, err := waitCollections(ctx, sink, 1); err != nil {
		return r, err
	}
	h0, err := c.HeapAfterGC(ctx)
	if err != nil {
		return r, err
	}
	m0, _ := harness.ProcMem(c.Pid)

	url := fmt.Sprintf("http://127.0.0.1:%d/v1/events", ports.HTTP)
	var b bytes.Buffer
	for res := 0; res*seriesPerResource < n; res++ {
		b.Reset()
		fmt.Fprintf(&b, `{"event":"resource","attributes":{"service.name":"nemo-gym/series","service.instance.id":"series-%d","nemo.run.id":"bench"}}`+"\n", res)
		for i := range min(seriesPerResource, n-res*seriesPerResource) {
			b.WriteString(k.line(i))
			b.WriteByte('\n')
		}
		if err := post(ctx, url, b.Bytes()); err != nil {
			return r, err
		}
	}
	coll, err := waitCollections(ctx, sink, 1)
	if err != nil {
		return r, err
	}
	r.points = coll.Series[k.metric]
	if r.points < int64(n) {
		fmt.Printf("  WARNING: %s: %d series sent, %d points of %s exported\n", k.name, n, r.points, k.metric)
	}
	h1, err := c.HeapAfterGC(ctx)
	if err != nil {
		return r, err
	}
	m1, _ := harness.ProcMem(c.Pid)
	r.heap, r.rss = h1.Alloc-h0.Alloc, m1.RSS-m0.RSS

	// Export cost: CPU between two collections' arrivals, over exportIntervals collections.
	first, err := waitCollections(ctx, sink, 1)
	if err != nil {
		return r, err
	}
	cpu0, _ := c.CPU()
	var lat []time.Duration
	after := first.Time
	var last harness.Collection
	for range o.exportIntervals {
		wctx, cancel := context.WithTimeout(ctx, 2*o.interval+time.Minute)
		last, err = sink.WaitCollection(wctx, after, 200*time.Millisecond)
		cancel()
		if err != nil {
			return r, err
		}
		after = last.Time
		lat = append(lat, last.Latency())
	}
	cpu1, _ := c.CPU()
	r.exportCPU = (cpu1-cpu0)/time.Duration(o.exportIntervals) - idle
	slices.Sort(lat)
	r.latency = lat[len(lat)/2]
	r.wire = last.WireBytes
	return r, nil
}

// postTiny sends one resource and one event: a collector that has received nothing exports
// nothing, and the harness keys on exports.
func postTiny(ctx context.Context, endpoint string) error {
	return post(ctx, endpoint+"/v1/events", []byte(`{"event":"resource","attributes":{"service.name":"nemo-gym/bench","service.instance.id":"tiny"}}`+"\n"+
		`{"event":"event_loop.lag","loop":"main","lag_ms":1.5}`+"\n"))
}

func post(ctx context.Context, url string, data []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var ans struct{ Accepted, Rejected int64 }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &ans) != nil || ans.Rejected > 0 {
		return fmt.Errorf("POST %s: %s %s", url, resp.Status, body)
	}
	return nil
}

func profile(ctx context.Context, o options, sink *harness.Sink) error {
	c, ports, err := startGym(ctx, o, sink, "otelcol-gym-profile", "GOMAXPROCS=2")
	if err != nil {
		return err
	}
	defer c.Stop()
	path, _ := filepath.Abs(filepath.Join(o.outDir, "otelcol-gym.cpu.pprof"))
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", ports.HTTP)
	// The generator works while it sends here (the run is too long to generate beforehand):
	// it shares the machine's cores with the collector, which the profile does not see.
	type genDone struct {
		rep harness.GenReport
		err error
	}
	done := make(chan genDone, 1)
	go func() {
		s := o.Stream
		s.Events, s.Seed = 1_000_000_000, 99
		rep, err := harness.Gen(ctx, o.Gymevents, append([]string{"--endpoint", endpoint,
			"--duration", fmt.Sprintf("%ds", o.profile+6), "--concurrency", strconv.Itoa(o.connections)}, s.Args()...)...)
		done <- genDone{rep, err}
	}()
	time.Sleep(3 * time.Second)
	cpu0, _ := c.CPU()
	t0 := time.Now()
	perr := c.CPUProfile(ctx, o.profile, path)
	cpu1, _ := c.CPU()
	wall := time.Since(t0)
	g := <-done
	if perr != nil {
		return perr
	}
	if g.err != nil {
		return g.err
	}
	fmt.Printf("CPU profile: %ds of otelcol-gym (GOMAXPROCS=2) under gymevents gen (generating while sending: %.0f events/s, %d accepted); collector CPU %.1fs over %.1fs wall; %s\n",
		o.profile, g.rep.EventsPerSec, g.rep.AcceptedEvents, (cpu1 - cpu0).Seconds(), wall.Seconds(), path)
	for _, args := range [][]string{
		{"tool", "pprof", "-top", "-nodecount=25", o.Collector, path},
		{"tool", "pprof", "-top", "-cum", "-nodecount=25", o.Collector, path},
	} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Printf("go %s: %v\n", strings.Join(args, " "), err)
		}
		fmt.Println()
	}
	return nil
}
