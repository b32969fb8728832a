// Command peer compares otelcol-gym with a stock collector on the same generated Gym stream
// (`make bench-peer` builds the stock collector from bench/peer/builder-config.yaml and runs
// this):
//
//	go run ./bench/peer --peer _build/peer/otelcol-peer [--collector _build/otelcol-gym]
//
// `gymevents gen --out` writes the stream (--events events of --processes Gym processes, the
// same generator and seed as `make bench`) to a file once. Each collector is then started on
// an empty directory, and once it is up (its CPU time read), the file is hard-linked into
// that directory: both read the same bytes from their beginning,
//
//   - otelcol-gym with its files transport (and, for reference, over HTTP: the same stream
//     posted by `gymevents gen --pregen`),
//   - the stock collector with file_log + json_parser -> signal_to_metrics (the Gym
//     metrics that signal_to_metrics can express: see e2e/harness/config.go) ->
//     nop,
//
// until its own telemetry says every line was read (otelcol_receiver_gym_lines_* for
// otelcol-gym, otelcol_receiver_accepted_log_records for file_log). The collector's CPU time
// (user+sys from /proc/<pid>/stat) over that span gives events per CPU-second; the ratio
// otelcol-gym / stock is printed.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/gym-telemetry/otelcol-gym/bench/internal/cli"
	"github.com/gym-telemetry/otelcol-gym/bench/internal/scorecard"
	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

type options struct {
	cli.GenLoad
	peer, outDir string
	scorecard    string
	gomaxprocs   int
	limit        time.Duration
}

func main() {
	var o options
	o.Register(1_000_000, "events in the generated stream")
	flag.StringVar(&o.peer, "peer", "_build/peer/otelcol-peer", "the stock collector built from bench/peer/builder-config.yaml")
	flag.StringVar(&o.outDir, "out-dir", "_build/bench/peer", "where the stream, configurations and logs go")
	flag.IntVar(&o.gomaxprocs, "gomaxprocs", 2, "GOMAXPROCS of both collectors")
	flag.DurationVar(&o.limit, "limit", 15*time.Minute, "give up on a collector that has not read the stream within this long")
	flag.StringVar(&o.scorecard, "scorecard", "", "write the figures for bench/scorecard (otelcol-gym over HTTP against the stock collector) to this file")
	flag.Parse()
	harness.Main("bench/peer", func(ctx context.Context) error { return run(ctx, o) })
}

type result struct {
	name, input  string
	events       int64
	cpu          time.Duration
	wall         time.Duration
	hwm          int64
	complete     bool
	readToNumber float64
}

func (r result) perCPU() float64  { return float64(r.events) / r.cpu.Seconds() }
func (r result) perWall() float64 { return float64(r.events) / r.wall.Seconds() }

func run(ctx context.Context, o options) error {
	if err := cli.Ready(o.outDir, true, "bench-peer", o.Collector, o.peer, o.Gymevents); err != nil {
		return err
	}
	stream := filepath.Join(o.outDir, "stream.jsonl")
	shape := o.Stream.Args()
	rep, err := harness.Gen(ctx, o.Gymevents, append([]string{"--out", stream}, shape...)...)
	if err != nil {
		return err
	}
	fmt.Println(cli.Machine())
	fmt.Printf("stream: %s: %d events, %d lines (%.1f MB), %d Gym processes, seed %d; GOMAXPROCS=%d\n\n",
		stream, rep.Events, rep.Lines, float64(rep.Bytes)/1e6, o.Stream.Processes, o.Stream.Seed, o.gomaxprocs)

	env := fmt.Sprintf("GOMAXPROCS=%d", o.gomaxprocs)
	if err := checkPeer(ctx, o, stream, env); err != nil {
		return err
	}
	var results []result

	gym, err := runGymFile(ctx, o, stream, rep, env)
	if err != nil {
		return err
	}
	results = append(results, gym)
	peer, err := runPeer(ctx, o, stream, rep, env)
	if err != nil {
		return err
	}
	results = append(results, peer)
	httpRes, err := runGymHTTP(ctx, o, shape, env)
	if err != nil {
		return err
	}
	results = append(results, httpRes)

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "collector\tinput\tevents\tCPU s\twall s\tevents/CPU-s\tevents/wall-s\tpeak RSS MiB\tcomplete\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.2f\t%.0f\t%.0f\t%.0f\t%v\t\n", r.name, r.input, r.events,
			r.cpu.Seconds(), r.wall.Seconds(), r.perCPU(), r.perWall(), float64(r.hwm)/(1<<20), r.complete)
	}
	_ = tw.Flush()
	fmt.Printf("\nratio otelcol-gym / stock, events per CPU-second: x%.1f (same file), x%.1f (otelcol-gym over HTTP)\n",
		gym.perCPU()/peer.perCPU(), httpRes.perCPU()/peer.perCPU())
	fmt.Printf("stock collector: %.2f us of CPU per event; otelcol-gym: %.3f us (file), %.3f us (HTTP)\n",
		1e6/peer.perCPU(), 1e6/gym.perCPU(), 1e6/httpRes.perCPU())
	if o.scorecard == "" {
		return nil
	}
	return scorecard.Save(o.scorecard, scorecard.Result{Path: scorecard.Events, Figure: httpRes.perCPU(), Reference: peer.perCPU(),
		Aside: []scorecard.Aside{{Name: "otelcol-gym on the file, events/CPU-s", Value: math.Round(gym.perCPU())}}})
}

// feed starts reading: the stream appears in the watched directory at once (a hard link).
func feed(stream, dir string) error {
	return os.Link(stream, filepath.Join(dir, "stream.jsonl"))
}

// waitRead polls read() until it reaches want, the collector has used no CPU for 5 s
// (stalled), or limit passes.
func waitRead(ctx context.Context, c *harness.Service, want float64, limit time.Duration, read func() float64) (bool, float64) {
	deadline := time.Now().Add(limit)
	lastCPU, _ := c.CPU()
	still := time.Now()
	for {
		got := read()
		if got >= want {
			return true, got
		}
		cpu, err := c.CPU()
		if err != nil || time.Now().After(deadline) || ctx.Err() != nil {
			return false, got
		}
		if cpu != lastCPU {
			lastCPU, still = cpu, time.Now()
		} else if time.Since(still) > 5*time.Second {
			return false, got
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// startGym starts otelcol-gym (reading filesGlob when set) with a sink of its own, whose
// exports nothing measures; stop stops both.
func startGym(ctx context.Context, o options, name, filesGlob, env string) (c *harness.Service, ports harness.GymPorts, stop func(), err error) {
	sink, err := harness.StartSink()
	if err != nil {
		return nil, ports, nil, err
	}
	c, ports, err = harness.StartGym(ctx, harness.ServiceOptions{
		Name: name, Bin: o.Collector, Dir: o.outDir, Env: []string{env},
	}, sink.URL, filesGlob, "10s")
	if err != nil {
		sink.Close()
		return nil, ports, nil, err
	}
	return c, ports, func() { c.Stop(); sink.Close() }, nil
}

func runGymFile(ctx context.Context, o options, stream string, rep harness.GenReport, env string) (result, error) {
	r := result{name: "otelcol-gym", input: "file (files transport)", events: rep.Events}
	dir := filepath.Join(o.outDir, "gym-watch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	c, _, stop, err := startGym(ctx, o, "otelcol-gym-files", filepath.Join(dir, "*.jsonl"), env)
	if err != nil {
		return r, err
	}
	defer stop()
	time.Sleep(time.Second)
	if err := measureRead(ctx, o, c, &r, stream, dir, rep,
		"otelcol_receiver_gym_lines_accepted", "otelcol_receiver_gym_lines_rejected", "otelcol_receiver_gym_lines_unknown"); err != nil {
		return r, err
	}
	if !r.complete {
		fmt.Printf("WARNING: otelcol-gym read %.0f of %d lines\n", r.readToNumber, rep.Lines)
	}
	return r, nil
}

// measureRead feeds the stream into dir, where c reads it, and waits until c's own metrics
// (the sum of read) count every line: r gets the wall and CPU time, the peak RSS and whether
// every line was read.
func measureRead(ctx context.Context, o options, c *harness.Service, r *result, stream, dir string, rep harness.GenReport, read ...string) error {
	cpu0, _ := c.CPU()
	t0 := time.Now()
	if err := feed(stream, dir); err != nil {
		return err
	}
	r.complete, r.readToNumber = waitRead(ctx, c, float64(rep.Lines), o.limit, func() float64 {
		m, err := c.Metrics(ctx)
		if err != nil {
			return 0
		}
		return harness.Sum(m, read...)
	})
	r.wall = time.Since(t0)
	cpu1, _ := c.CPU()
	r.cpu = cpu1 - cpu0
	mem, _ := harness.ProcMem(c.Pid)
	r.hwm = mem.HWM
	return nil
}

func runPeer(ctx context.Context, o options, stream string, rep harness.GenReport, env string) (result, error) {
	r := result{name: "stock v0.160.0", input: "file (file_log + json_parser -> signal_to_metrics)", events: rep.Events}
	dir := filepath.Join(o.outDir, "peer-watch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	c, err := harness.StartPeer(ctx, harness.ServiceOptions{
		Name: "otelcol-peer", Bin: o.peer, Dir: o.outDir, Env: []string{env},
	}, filepath.Join(dir, "*.jsonl"), false)
	if err != nil {
		return r, err
	}
	defer c.Stop()
	time.Sleep(time.Second) // file_log's first poll has found nothing
	if err := measureRead(ctx, o, c, &r, stream, dir, rep,
		"otelcol_receiver_accepted_log_records", "otelcol_receiver_refused_log_records", "otelcol_receiver_failed_log_records"); err != nil {
		return r, err
	}
	if !r.complete {
		fmt.Printf("WARNING: the stock collector read %.0f of %d lines (its log: %s)\n", r.readToNumber, rep.Lines, c.LogPath)
	}
	return r, nil
}

var debugCountsRE = regexp.MustCompile(`"metrics": (\d+), "data points": (\d+)`)

// checkPeer runs the stock collector with the debug exporter on the stream's first lines and
// checks that signal_to_metrics makes metrics of them (the measured run discards them).
func checkPeer(ctx context.Context, o options, stream, env string) error {
	const lines = 20000
	dir := filepath.Join(o.outDir, "peer-check")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	in, err := os.ReadFile(stream)
	if err != nil {
		return err
	}
	cut, n := 0, 0
	for cut < len(in) && n < lines {
		i := bytes.IndexByte(in[cut:], '\n')
		if i < 0 {
			break
		}
		cut += i + 1
		n++
	}
	c, err := harness.StartPeer(ctx, harness.ServiceOptions{
		Name: "otelcol-peer-check", Bin: o.peer, Dir: o.outDir, Env: []string{env},
	}, filepath.Join(dir, "*.jsonl"), true)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "head.jsonl"), in[:cut], 0o600); err != nil {
		c.Stop()
		return err
	}
	done, _ := waitRead(ctx, c, float64(n), time.Minute, func() float64 {
		m, err := c.Metrics(ctx)
		if err != nil {
			return 0
		}
		return harness.Sum(m, "otelcol_receiver_accepted_log_records")
	})
	time.Sleep(time.Second)
	c.Stop()
	var metrics, points, most int64
	for _, m := range debugCountsRE.FindAllStringSubmatch(c.LogTail(1<<20), -1) {
		a, _ := strconv.ParseInt(m[1], 10, 64)
		b, _ := strconv.ParseInt(m[2], 10, 64)
		metrics, points, most = metrics+a, points+b, max(most, a)
	}
	if !done || points == 0 {
		return fmt.Errorf("the stock collector made no metrics of the stream's first %d lines (read all: %v); its log: %s", n, done, c.LogPath)
	}
	fmt.Printf("check: the stock collector's signal_to_metrics (%d metrics defined) made %d metrics (up to %d in one batch), %d data points of the first %d lines (debug exporter, %s)\n\n",
		harness.PeerMetricCount(), metrics, most, points, n, c.LogPath)
	return nil
}

func runGymHTTP(ctx context.Context, o options, shape []string, env string) (result, error) {
	r := result{name: "otelcol-gym", input: "HTTP (gymevents gen --pregen)"}
	c, ports, stop, err := startGym(ctx, o, "otelcol-gym-http", "", env)
	if err != nil {
		return r, err
	}
	defer stop()
	cpu0, _ := c.CPU()
	rep, err := harness.Gen(ctx, o.Gymevents, append([]string{"--endpoint", fmt.Sprintf("http://127.0.0.1:%d", ports.HTTP), "--pregen", "--duration", "10m"}, shape...)...)
	if err != nil {
		return r, err
	}
	cpu1, _ := c.CPU()
	r.events, r.cpu = rep.AcceptedEvents, cpu1-cpu0
	r.wall = time.Duration(rep.Seconds * float64(time.Second))
	r.complete = rep.AcceptedEvents == rep.Events
	mem, _ := harness.ProcMem(c.Pid)
	r.hwm = mem.HWM
	return r, nil
}
