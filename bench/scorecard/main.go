// Command scorecard prints the table `make bench` ends with: the four paths' figures (written by
// their harnesses with --scorecard into --dir; the console path's read from the Go benchmarks'
// output, BenchmarkRealSDK) against their references, ratios, goals and whether each is met
// (bench/internal/scorecard holds the goals). With --history it adds the run's row (date,
// commit, machine, load, figures) to the History table of that file.
//
//	go run ./bench/scorecard --dir _build/bench/scorecard [--go-bench FILE] [--history docs/performance.md]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/gym-telemetry/otelcol-gym/bench/internal/scorecard"
	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

func main() {
	var dir, goBench, history string
	flag.StringVar(&dir, "dir", "_build/bench/scorecard", "the harnesses' --scorecard files (*.json)")
	flag.StringVar(&goBench, "go-bench", "", "`go test -bench` output with BenchmarkRealSDK's runs (the console path)")
	flag.StringVar(&history, "history", "", "add this run's row to the History table of this markdown file")
	flag.Parse()
	if err := run(dir, goBench, history); err != nil {
		fmt.Fprintln(os.Stderr, "bench/scorecard:", err)
		os.Exit(1)
	}
}

func run(dir, goBench, history string) error {
	results, err := scorecard.Load(dir)
	if err != nil {
		return err
	}
	if goBench != "" {
		f, err := os.Open(goBench)
		if err != nil {
			return err
		}
		r, ok, err := scorecard.ConsoleResult(f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", goBench, err)
		}
		if ok {
			results = append(results, r)
		}
	}
	rows := scorecard.Judge(scorecard.Paths, results)
	r := scorecard.Run{
		Date:    time.Now().UTC().Format("2006-01-02"),
		Commit:  commit(),
		Machine: fmt.Sprintf("%d x %s", runtime.NumCPU(), cpuModel()),
		Load:    load(),
	}
	fmt.Printf("\nmake bench: the four paths against their references (%s, %s, %s, load average %s)\n\n", r.Date, r.Commit, r.Machine, r.Load)
	if err := scorecard.Print(os.Stdout, rows); err != nil {
		return err
	}
	row := scorecard.HistoryRow(r, rows)
	if history == "" {
		fmt.Printf("\nhistory row:\n%s\n", row)
		return nil
	}
	doc, err := os.ReadFile(history)
	if err != nil {
		return err
	}
	out, err := scorecard.InsertHistory(string(doc), row)
	if err != nil {
		return fmt.Errorf("%s: %w", history, err)
	}
	if err := os.WriteFile(history, []byte(out), 0o644); err != nil {
		return err
	}
	fmt.Printf("\nadded to %s, %s:\n%s\n", history, scorecard.HistoryHeading, row)
	return nil
}

// commit is HEAD's short hash, "+dirty" when the tree differs from it.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if err := exec.Command("git", "diff", "--quiet", "HEAD", "--", ".", ":!docs/performance.md").Run(); err != nil {
		c += "+dirty"
	}
	return c
}

func cpuModel() string {
	m, _, _ := strings.Cut(harness.MachineInfo(), ",")
	return m
}

func load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
