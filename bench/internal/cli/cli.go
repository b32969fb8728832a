// Package cli is what the bench programs' command lines share: the binaries they run, the
// shape of the generated Gym stream and of the OTLP load, the check before a run, and the
// machine line their reports start with. One home for each default, so that the programs'
// figures speak of the same binaries and the same load.
package cli

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// Collector registers --collector: the otelcol-gym binary (make build's).
func Collector(p *string) {
	flag.StringVar(p, "collector", "_build/otelcol-gym", "the otelcol-gym binary")
}

// Gymevents registers --gymevents: the generator (make gymevents').
func Gymevents(p *string) {
	flag.StringVar(p, "gymevents", "_build/gymevents", "the gymevents binary")
}

// Combos registers --combos: harness.OTLPShape's declared attribute sets per instrument and
// attribute, the OTLP load's shape (the OTLP peer's, and the gateway's agents').
func Combos(p *int) {
	flag.IntVar(p, "combos", 3, "declared attribute sets per instrument and attribute (cap; the OTLP peer's shape)")
}

// Stream is the shape of a stream `gymevents gen` generates.
type Stream struct {
	Events    int64
	Processes int
	Batch     int
	Seed      uint64
}

// Register registers --events (events is the program's default), --processes, --batch and
// --seed: the same generator defaults in every program.
func (s *Stream) Register(events int64, eventsHelp string) {
	flag.Int64Var(&s.Events, "events", events, eventsHelp)
	flag.IntVar(&s.Processes, "processes", 64, "Gym processes in the generated stream")
	flag.IntVar(&s.Batch, "batch", 1000, "lines per HTTP body (and per stretch of one process in a file)")
	flag.Uint64Var(&s.Seed, "seed", 1, "generator seed (of the first run where there are several: each run adds one)")
}

// Args are gymevents gen's flags for s.
func (s Stream) Args() []string {
	return []string{
		"--events", strconv.FormatInt(s.Events, 10),
		"--processes", strconv.Itoa(s.Processes),
		"--batch", strconv.Itoa(s.Batch),
		"--seed", strconv.FormatUint(s.Seed, 10),
	}
}

// GenLoad is what a program that loads otelcol-gym with `gymevents gen` takes: the two
// binaries and the stream's shape.
type GenLoad struct {
	Collector, Gymevents string
	Stream               Stream
}

// Register registers --collector, --gymevents and the stream's flags (Stream.Register).
func (g *GenLoad) Register(events int64, eventsHelp string) {
	Collector(&g.Collector)
	Gymevents(&g.Gymevents)
	g.Stream.Register(events, eventsHelp)
}

// Ready checks that every binary exists (target is the make target that builds them, named
// in the error) and makes outDir, emptied first when fresh.
func Ready(outDir string, fresh bool, target string, bins ...string) error {
	for _, bin := range bins {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%w (make %s)", err, target)
		}
	}
	if fresh {
		_ = os.RemoveAll(outDir)
	}
	return os.MkdirAll(outDir, 0o755)
}

// Machine is the first line of a report: CPUs, the machine and the Go release.
func Machine() string {
	return fmt.Sprintf("machine: %d CPUs (nproc), %s; %s", runtime.NumCPU(), harness.MachineInfo(), runtime.Version())
}

// Ints parses a comma-separated list of positive integers (a flag's value).
func Ints(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: a positive integer", s)
		}
		out = append(out, n)
	}
	return out, nil
}
