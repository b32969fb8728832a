package scorecard

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func judgeOne(t *testing.T, p Path, r Result) Row {
	t.Helper()
	rows := Judge([]Path{p}, []Result{r})
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	return rows[0]
}

func TestJudgeHigherIsBetter(t *testing.T) {
	p := Path{Name: "x", Unit: "events/CPU-s", Goal: 60}
	for _, c := range []struct {
		fig, ref, ratio float64
		met             bool
	}{
		{1_050_000, 25_000, 42, false},
		{1_500_000, 25_000, 60, true},
		{3_000_000, 25_000, 120, true},
	} {
		r := judgeOne(t, p, Result{Path: "x", Figure: c.fig, Reference: c.ref})
		if !r.Measured || math.Abs(r.Ratio-c.ratio) > 1e-9 || r.Met != c.met {
			t.Errorf("%v / %v: measured %v ratio %v met %v; want ratio %v met %v", c.fig, c.ref, r.Measured, r.Ratio, r.Met, c.ratio, c.met)
		}
	}
}

func TestJudgeCostAgainstAFloor(t *testing.T) {
	p := Path{Name: "otlp", Unit: "points/CPU-s", Inverse: true, Goal: 1.25, AtMost: true}
	// The floor does 380 k points per CPU-second, the processor 273 k: it costs 1.39x the floor.
	r := judgeOne(t, p, Result{Path: "otlp", Figure: 273_000, Reference: 380_000})
	if math.Abs(r.Ratio-380.0/273.0) > 1e-9 || r.Met {
		t.Errorf("ratio %v met %v", r.Ratio, r.Met)
	}
	r = judgeOne(t, p, Result{Path: "otlp", Figure: 320_000, Reference: 380_000})
	if r.Ratio > 1.25 || !r.Met {
		t.Errorf("ratio %v met %v", r.Ratio, r.Met)
	}
	if got := r.RatioText(); got != "1.19x" {
		t.Errorf("RatioText %q", got)
	}
}

func TestJudgeBudget(t *testing.T) {
	p := Path{Name: "cold", Unit: "s", FixedRef: 120, Goal: 1, AtMost: true}
	// A reference in the result does not replace the budget.
	r := judgeOne(t, p, Result{Path: "cold", Figure: 156, Reference: 1})
	if r.Ref != 120 || math.Abs(r.Ratio-1.3) > 1e-9 || r.Met {
		t.Errorf("ref %v ratio %v met %v", r.Ref, r.Ratio, r.Met)
	}
	if r = judgeOne(t, p, Result{Path: "cold", Figure: 120}); !r.Met {
		t.Error("exactly the budget is within it")
	}
	if got := p.GoalText(); got != "within 2 min 00 s" {
		t.Errorf("GoalText %q", got)
	}
}

func TestJudgeNotMeasured(t *testing.T) {
	p := Path{Name: "x", Goal: 2, HowToRun: "make x"}
	rows := Judge([]Path{p, {Name: "y", Goal: 1}}, []Result{
		{Path: "y", Figure: 5, Reference: 0},          // no reference
		{Path: "z", Figure: 1, Reference: 1},          // no such path
		{Path: "y", Figure: math.NaN(), Reference: 1}, // the last of a name wins
	})
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.Measured || r.Met {
			t.Errorf("%s: measured %v met %v", r.Name, r.Measured, r.Met)
		}
	}
	if rows[0].Verdict() != "not measured (make x)" || rows[0].RatioText() != "-" || Cell(rows[0]) != "-" {
		t.Errorf("verdict %q ratio %q cell %q", rows[0].Verdict(), rows[0].RatioText(), Cell(rows[0]))
	}
}

func TestPathsHaveGoals(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Paths {
		if p.Goal <= 0 || p.Unit == "" || p.Title == "" || p.RefTitle == "" || p.HowToRun == "" || seen[p.Name] {
			t.Errorf("path %+v", p)
		}
		seen[p.Name] = true
	}
	for _, n := range []string{Events, Console, OTLP, ColdRun} {
		if !seen[n] {
			t.Errorf("no path %s", n)
		}
	}
}

func TestQuantity(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{156.4, "s", "2 min 36 s"},
		{59.6, "s", "1 min 00 s"},
		{9, "s", "9 s"},
		{1_050_000, "events/CPU-s", "1.05 M events/CPU-s"},
		{67_400, "points/CPU-s", "67 k points/CPU-s"},
		{312.4, "MB/CPU-s", "312 MB/CPU-s"},
		{1.754, "MB/CPU-s", "1.75 MB/CPU-s"},
		{181.24, "-", "181 -"},
	} {
		if got := Quantity(c.v, c.unit); got != c.want {
			t.Errorf("Quantity(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

func TestPrintAndHistoryRow(t *testing.T) {
	rows := Judge(Paths, []Result{
		{Path: Events, Figure: 1_050_000, Reference: 25_000},
		{Path: OTLP, Figure: 273_000, Reference: 380_000, Aside: []Aside{{"transform points/CPU-s", 67_000}}},
	})
	var b bytes.Buffer
	if err := Print(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"x42.0", ">= x60", "1.39x", "<= 1.25x", "not measured (BENCH_COLD=1 make bench)", "transform points/CPU-s 67 k"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	row := HistoryRow(Run{Date: "2026-12-07", Commit: "abc1234", Machine: "2 x AMD EPYC", Load: "1.0"}, rows)
	want := "| 2026-12-07 | abc1234 | 2 x AMD EPYC | 1.0 | 1.05 M vs 25 k events/CPU-s (x42.0) | - | " +
		"273 k vs 380 k points/CPU-s (1.39x); transform points/CPU-s 67 k | - |"
	if row != want {
		t.Errorf("row\n%s\nwant\n%s", row, want)
	}
}

func TestInsertHistory(t *testing.T) {
	doc := "# P\n\n## History\n\ntext\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nafter\n\n## Next\n\n| x |\n"
	got, err := InsertHistory(doc, "| 3 | 4 |")
	if err != nil {
		t.Fatal(err)
	}
	want := "# P\n\n## History\n\ntext\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nafter\n\n## Next\n\n| x |\n"
	if got != want {
		t.Errorf("got\n%s", got)
	}
	if _, err := InsertHistory("# P\n\n## Other\n\n| a |\n", "| 1 |"); err == nil {
		t.Error("no History section: want an error")
	}
	if _, err := InsertHistory("## History\n\nno table\n\n## Next\n\n| a |\n", "| 1 |"); err == nil {
		t.Error("no table in the section: want an error")
	}
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	in := Result{Path: Console, Figure: 300, Reference: 150, Aside: []Aside{{"lines", 42}}}
	if err := Save(filepath.Join(dir, "console.json"), in); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil || len(got) != 1 || got[0].Figure != 300 || got[0].Aside[0].Value != 42 {
		t.Fatalf("%+v %v", got, err)
	}
	if got, err := Load(filepath.Join(dir, "none")); err != nil || len(got) != 0 {
		t.Errorf("a missing dir: %v %v", got, err)
	}
}

func TestConsoleResultFromGoBench(t *testing.T) {
	out := `goos: linux
BenchmarkStdoutMix-2   	    1000	   1000 ns/op	 300.0 MB/cpu-s
BenchmarkRealSDK/gym_console-2         	    4000	    100000 ns/op	 189.00 MB/s	       184.0 cpu-MB/s	   38000 B/op	     616 allocs/op
BenchmarkRealSDK/python_json_loads-2   	      10	 120000000 ns/op	       120.0 cpu-MB/s
BenchmarkRealSDK/gym_console-2         	    4000	    100000 ns/op	 189.00 MB/s	       170.0 cpu-MB/s
BenchmarkRealSDK/gym_console-2         	    4000	    100000 ns/op	 189.00 MB/s	       190.0 cpu-MB/s
PASS
`
	r, ok, err := ConsoleResult(strings.NewReader(out))
	if err != nil || !ok {
		t.Fatalf("ok %v err %v", ok, err)
	}
	if r.Path != Console || r.Figure != 184 || r.Reference != 120 {
		t.Errorf("%+v", r)
	}
	if _, ok, err := ConsoleResult(strings.NewReader("BenchmarkRealSDK/gym_console 1 1 ns/op 5 cpu-MB/s\n")); ok || err != nil {
		t.Errorf("no reference run: ok %v err %v", ok, err)
	}
	if _, _, err := ConsoleResult(strings.NewReader("BenchmarkX 1 x cpu-MB/s\n")); err == nil {
		t.Error("a value that is not a number: want an error")
	}
}

func TestMedian(t *testing.T) {
	if Median(nil) != 0 || Median([]float64{3, 1, 2}) != 2 || Median([]float64{4, 1, 2, 3}) != 2.5 {
		t.Error("median")
	}
}
