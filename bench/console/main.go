// Command console measures the gym_console receiver's decoder against what a user would
// otherwise write, Python's json.loads per line, on the same bytes: the real OpenTelemetry Python
// SDK's console stdout (testdata/console/real-sdk-stdout.log: compact metrics batches and spans,
// a pretty-printed log record, uvicorn's lines), repeated to --mb megabytes. Both run on one
// core; the figure is megabytes of stdout per CPU-second (getrusage: every thread of this
// process, the GC's included; Python's time.process_time of its loop, start-up left out).
//
//	go run ./bench/console [--rounds 3] [--mb 32] [--scorecard FILE]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/bench/internal/cli"
	"github.com/gym-telemetry/otelcol-gym/bench/internal/scorecard"
	"github.com/gym-telemetry/otelcol-gym/internal/console"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

// pythonLoads reads the file as a user would: json.loads on every line that starts a JSON
// object (a line that does not parse, such as the first line of a pretty-printed record, is
// skipped). It times its own loop and prints what it parsed.
const pythonLoads = `
import json, sys, time
c = time.process_time()
size = records = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        size += len(line)
        if line.startswith(b"{"):
            try:
                json.loads(line)
            except ValueError:
                continue
            records += 1
print(json.dumps({"bytes": size, "records": records, "cpu": time.process_time() - c}))
`

type sink struct{ batches int64 }

func (*sink) Takes(console.Kind) bool   { return true }
func (s *sink) Metrics(pmetric.Metrics) { s.batches++ }
func (s *sink) Traces(ptrace.Traces)    { s.batches++ }
func (s *sink) Logs(plog.Logs)          { s.batches++ }

func main() {
	var (
		stdout, outDir, card string
		mb, rounds           int
	)
	flag.StringVar(&stdout, "stdout", "testdata/console/real-sdk-stdout.log", "the console stdout to repeat")
	flag.StringVar(&outDir, "out-dir", "_build/bench/console", "where the repeated stdout goes (Python reads it there)")
	flag.IntVar(&mb, "mb", 32, "megabytes of stdout per run")
	flag.IntVar(&rounds, "rounds", 3, "runs of each; the median is the figure")
	flag.StringVar(&card, "scorecard", "", "write the figures for bench/scorecard to this file")
	flag.Parse()
	if err := run(stdout, outDir, card, mb, rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench/console:", err)
		os.Exit(1)
	}
}

func run(stdout, outDir, card string, mb, rounds int) error {
	one, err := os.ReadFile(stdout)
	if err != nil {
		return err
	}
	one = append(bytes.TrimRight(one, "\n"), '\n')
	data := bytes.Repeat(one, max(1, mb<<20/len(one)))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(outDir, "stdout.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		return errors.New("python3 is not installed")
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	runtime.GOMAXPROCS(1)
	fmt.Println(cli.Machine())
	fmt.Printf("stdout: %s repeated %d times: %d lines, %.1f MB; %s\n", stdout, len(data)/len(one), len(lines), float64(len(data))/1e6, pyVersion(py))

	var gym, pyRates []float64
	for round := range rounds {
		g, stats, batches := decode(lines, len(data))
		p, records, err := python(py, path)
		if err != nil {
			return err
		}
		if len(stats.Rejected) != 0 {
			return fmt.Errorf("gym_console rejected records: %v", stats.Rejected)
		}
		gym, pyRates = append(gym, g), append(pyRates, p)
		fmt.Printf("round %d  gym_console %6.1f MB/CPU-s (%d records accepted, %d batches)   json.loads %6.1f MB/CPU-s (%d records)\n",
			round+1, g, stats.Accepted, batches, p, records)
	}
	g, p := median(gym), median(pyRates)
	fmt.Printf("\ngym_console / json.loads, MB of stdout per CPU-second (median of %d): x%.2f (%.1f against %.1f)\n", rounds, g/p, g, p)
	if card == "" {
		return nil
	}
	return scorecard.Save(card, scorecard.Result{Path: scorecard.Console, Figure: g, Reference: p})
}

// decode feeds every line through one decoder, as the receiver does, and returns MB per
// CPU-second.
func decode(lines [][]byte, size int) (float64, ingest.Stats, int64) {
	s := &sink{}
	d := console.NewLineDecoder("bench", 1<<22, s, ratelog.NewLogger(zap.NewNop(), 1, time.Minute))
	runtime.GC()
	c0 := cpuTime()
	for _, l := range lines {
		_, _ = d.Line(l)
	}
	stats := *d.Flush()
	cpu := (cpuTime() - c0).Seconds()
	return float64(size) / cpu / 1e6, stats, s.batches
}

func python(py, path string) (float64, int64, error) {
	out, err := exec.Command(py, "-c", pythonLoads, path).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("python3: %w", err)
	}
	var res struct {
		Bytes, Records int64
		CPU            float64
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, 0, fmt.Errorf("python3 said %q: %w", out, err)
	}
	if res.CPU <= 0 {
		return 0, 0, fmt.Errorf("python3 said %q: no CPU time", out)
	}
	return float64(res.Bytes) / res.CPU / 1e6, res.Records, nil
}

func pyVersion(py string) string {
	out, err := exec.Command(py, "--version").Output()
	if err != nil {
		return "python3"
	}
	return string(bytes.TrimSpace(out))
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
