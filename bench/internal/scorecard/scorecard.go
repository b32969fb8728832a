// Package scorecard is the one table `make bench` ends with: each of the four paths' figure
// against its reference (built and measured apart, by its own harness), the ratio, the goal and
// whether it is met; and the row docs/performance.md keeps in its History table.
//
// Each harness writes what it measured as a Result (Save, one JSON file per path; the console
// path's is read from BenchmarkRealSDK's output, ConsoleResult); the scorecard program
// (bench/scorecard) reads them (Load), judges them (Judge) and prints them.
// The goals live here, in Paths, and nowhere else.
package scorecard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// The paths' names, as the harnesses write them.
const (
	Events  = "events"
	Console = "console"
	OTLP    = "otlp"
	ColdRun = "coldrun"
)

// Result is what one harness measured on one path: its figure and its reference's, in the
// path's unit (Path.Unit). Aside holds figures worth keeping beside them (another reference,
// the CPU time of a wall-clock figure).
type Result struct {
	Path      string  `json:"path"`
	Figure    float64 `json:"figure"`
	Reference float64 `json:"reference,omitempty"`
	Aside     []Aside `json:"aside,omitempty"`
}

// Aside is a named figure kept beside a Result's.
type Aside struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Path is one row of the table: what is measured, against what, and the goal.
type Path struct {
	Name     string
	Title    string // what the figure is
	Unit     string
	RefTitle string  // what the reference is
	FixedRef float64 // a reference that is a budget rather than a measurement (0: measured)
	Inverse  bool    // the ratio is reference / figure (a cost: how many times the reference's)
	Goal     float64 // the ratio's goal
	AtMost   bool    // the goal is met when the ratio is at most Goal (else at least)
	HowToRun string  // the make target (or variable) that measures it
}

// Paths are the four paths, in the table's order, with their goals.
var Paths = []Path{
	{Name: Events, Title: "events-v1 over HTTP, aggregated and exported (otelcol-gym)", Unit: "events/CPU-s",
		RefTitle: "stock collector: filelog + json_parser + signal_to_metrics", Goal: 60, HowToRun: "make bench-peer"},
	{Name: Console, Title: "gym_console on the real SDK's stdout", Unit: "MB/CPU-s",
		RefTitle: "Python json.loads of its records", Goal: 2, HowToRun: "BenchmarkRealSDK in make bench's Go benchmarks"},
	{Name: OTLP, Title: "OTLP through gymattrs (otelcol-gym)", Unit: "points/CPU-s",
		RefTitle: "OTLP receive floor: otlp -> debug, no processor", Inverse: true, Goal: 1.25, AtMost: true,
		HowToRun: "make bench-otlp-peer"},
	{Name: ColdRun, Title: "cold make run (fresh clone, empty Go caches) to running", Unit: "s",
		RefTitle: "the 2-minute budget", FixedRef: 120, Goal: 1, AtMost: true,
		HowToRun: "BENCH_COLD=1 make bench"},
}

// Row is a path judged.
type Row struct {
	Path
	Result   *Result // nil: not measured
	Ref      float64
	Ratio    float64
	Measured bool
	Met      bool
}

// Judge pairs every path with its result (by name; the last one of a name wins) and judges it.
// A path without a result, or with a figure or reference that is not a positive number, is
// not measured.
func Judge(paths []Path, results []Result) []Row {
	byName := map[string]Result{}
	for _, r := range results {
		byName[r.Path] = r
	}
	rows := make([]Row, 0, len(paths))
	for _, p := range paths {
		row := Row{Path: p}
		if r, ok := byName[p.Name]; ok {
			row.Result = &r
			row.Ref = r.Reference
			if p.FixedRef > 0 {
				row.Ref = p.FixedRef
			}
			if positive(r.Figure) && positive(row.Ref) {
				row.Measured = true
				row.Ratio = r.Figure / row.Ref
				if p.Inverse {
					row.Ratio = row.Ref / r.Figure
				}
				if p.AtMost {
					row.Met = row.Ratio <= p.Goal
				} else {
					row.Met = row.Ratio >= p.Goal
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// GoalText is the goal as the table writes it: ">= x60", "<= 1.25x", "within 2 min 00 s".
func (p Path) GoalText() string {
	switch {
	case p.FixedRef > 0:
		return "within " + Quantity(p.FixedRef*p.Goal, p.Unit)
	case p.AtMost:
		return fmt.Sprintf("<= %sx", trim(p.Goal))
	default:
		return fmt.Sprintf(">= x%s", trim(p.Goal))
	}
}

// RatioText is the ratio as the table writes it.
func (r Row) RatioText() string {
	if !r.Measured {
		return "-"
	}
	if r.Inverse || r.AtMost {
		return fmt.Sprintf("%.2fx", r.Ratio)
	}
	if r.Ratio < 10 {
		return fmt.Sprintf("x%.2f", r.Ratio)
	}
	return fmt.Sprintf("x%.1f", r.Ratio)
}

// Verdict is "yes", "no" or "not measured (how to run it)".
func (r Row) Verdict() string {
	switch {
	case !r.Measured:
		return "not measured (" + r.HowToRun + ")"
	case r.Met:
		return "yes"
	default:
		return "no"
	}
}

// Quantity writes a figure in its unit: seconds as minutes and seconds, rates with k and M.
func Quantity(v float64, unit string) string {
	if unit == "s" {
		s := int(math.Round(v))
		if s < 60 {
			return fmt.Sprintf("%d s", s)
		}
		return fmt.Sprintf("%d min %02d s", s/60, s%60)
	}
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f M %s", v/1e6, unit)
	case v >= 1e4:
		return fmt.Sprintf("%.0f k %s", v/1e3, unit)
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	default:
		return fmt.Sprintf("%s %s", trim(v), unit)
	}
}

// Number writes a figure without a unit: 2.31 M, 67 k, 181.2.
func Number(v float64) string {
	return strings.TrimSuffix(Quantity(v, "-"), " -")
}

func trim(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// Print writes the table: path, figure, reference, ratio, goal, met.
func Print(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "path\tfigure\treference\tratio\tgoal\tmet?")
	for _, r := range rows {
		fig, ref := "-", r.RefTitle
		if r.Result != nil && positive(r.Result.Figure) {
			fig = Quantity(r.Result.Figure, r.Unit)
		}
		if r.Measured {
			ref = Quantity(r.Ref, r.Unit) + " (" + r.RefTitle + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Title, fig, ref, r.RatioText(), r.GoalText(), r.Verdict())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Result == nil {
			continue
		}
		for _, a := range r.Result.Aside {
			if _, err := fmt.Fprintf(w, "  %s: %s %s\n", r.Name, a.Name, Number(a.Value)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Save writes r to path as JSON (a harness's --scorecard FILE).
func Save(path string, r Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Load reads every *.json file of dir as a Result. A missing dir is no results.
func Load(dir string) ([]Result, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if r.Path == "" {
			return nil, errors.New(f + ": no path")
		}
		out = append(out, r)
	}
	return out, nil
}
