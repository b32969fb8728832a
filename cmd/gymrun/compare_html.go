package main

// compare's HTML report: one self-contained file (inline CSS, inline SVG drawn here, no script,
// no font, nothing fetched) with, per benchmark, the change's interval against 0 and the reward
// histograms of A and B. html/template escapes every value (benchmark names come from files).

import (
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"os"
	"strings"
)

//go:embed compare.html.tmpl
var compareHTML string

var compareTmpl = template.Must(template.New("compare").Funcs(template.FuncMap{"num": num}).Parse(compareHTML))

// num formats a number that may be absent ("-").
func num(format string, v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

// Chart geometry, in SVG user units.
const (
	chartW     = 560.0
	chartPad   = 40.0 // left and right margins
	intervalH  = 64.0
	histH      = 150.0
	histBottom = 24.0 // room for the axis labels
)

type htmlReport struct {
	CompareReport
	Note string // how the verdicts hold the family-wise error
	Rows []htmlBench
}

type htmlBench struct {
	Name string
	CompareBench
	Causes   string
	Head     string   // the test and the causes
	Moved    []string // the changes behind the causes
	Interval *intervalChart
	Hist     *histChart
}

// intervalChart: the change (a point) and its interval (a line) on an axis that holds 0.
type intervalChart struct {
	W, H             float64 // the chart's size
	Verdict          string  // its class
	X0, X, Lo, Hi    float64 // positions of 0, the change, the interval's ends
	Min, Max         string  // the axis' end labels, "" where 0's would overlap them
	MinX, MaxX, MidY float64
	TickY, LabelY    float64 // the end of 0's tick, the labels' baseline
}

// histChart: the rewards of A and B as shares of their n, in bars on one axis.
type histChart struct {
	W, H     float64 // the chart's size
	Bars     []bar
	Lo, Hi   string
	Top      string // the share at the chart's top
	BaseY    float64
	LabelY   float64 // the axis labels' baseline
	LoX, HiX float64
}

type bar struct {
	Side       string // "a" or "b": its class
	X, Y, W, H float64
	Title      string
}

// writeHTMLFile writes the report of r to path.
func writeHTMLFile(path string, r CompareReport) error {
	hr := htmlReport{CompareReport: r, Note: familyNote(r)}
	for _, n := range sortedNames(r.Benchmarks) {
		c := r.Benchmarks[n]
		hb := htmlBench{Name: n, CompareBench: c, Causes: strings.Join(c.Causes, ", ")}
		hb.Head, hb.Moved = compareDetail(c)
		if c.Delta != nil {
			hb.Interval = newIntervalChart(*c.Delta, *c.CI95, c.Verdict)
		}
		hb.Hist = newHistChart(c.A, c.B)
		hr.Rows = append(hr.Rows, hb)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := compareTmpl.Execute(f, hr); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// scale maps [lo, hi] onto the chart's width between its margins.
func scale(lo, hi float64) func(float64) float64 {
	return func(v float64) float64 { return round2(chartPad + (v-lo)/(hi-lo)*(chartW-2*chartPad)) }
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func newIntervalChart(delta float64, ci [2]float64, verdict string) *intervalChart {
	lo, hi := min(ci[0], 0), max(ci[1], 0)
	pad := (hi - lo) * 0.1
	if pad == 0 {
		pad = 0.05
	}
	lo, hi = lo-pad, hi+pad
	if !finite(lo, hi, hi-lo) { // an interval too wide to scale
		return nil
	}
	x := scale(lo, hi)
	c := &intervalChart{
		W: chartW, H: intervalH, Verdict: verdict, X0: x(0), X: x(delta), Lo: x(ci[0]), Hi: x(ci[1]),
		Min: fmt.Sprintf("%.3f", lo), Max: fmt.Sprintf("%.3f", hi),
		MinX: chartPad, MaxX: chartW - chartPad, MidY: intervalH / 2, TickY: intervalH - 12, LabelY: intervalH - 2,
	}
	const room = 48 // a label's width, about
	if c.X0-c.MinX < room {
		c.Min = ""
	}
	if c.MaxX-c.X0 < room {
		c.Max = ""
	}
	return c
}

func newHistChart(a, b *SideStats) *histChart {
	var hs []*Histogram
	var ns []int64
	var sides []string
	for i, s := range []*SideStats{a, b} {
		if s != nil && s.Histogram != nil && len(s.Histogram.Counts) > 0 && s.N > 0 {
			hs, ns, sides = append(hs, s.Histogram), append(ns, s.N), append(sides, []string{"a", "b"}[i])
		}
	}
	if len(hs) == 0 {
		return nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, h := range hs {
		lo, hi = min(lo, h.Lo), max(hi, h.Hi)
	}
	if !finite(lo, hi, hi-lo) { // the two runs' rewards too far apart to scale
		return nil
	}
	if hi == lo {
		lo, hi = lo-0.5, hi+0.5
	}
	x := scale(lo, hi)
	top := 0.0
	for i, h := range hs {
		for _, c := range h.Counts {
			top = max(top, float64(c)/float64(ns[i]))
		}
	}
	plotH := histH - histBottom - 8
	ch := &histChart{W: chartW, H: histH, Lo: fmt.Sprintf("%.3g", lo), Hi: fmt.Sprintf("%.3g", hi), Top: fmt.Sprintf("%.0f%%", 100*top),
		BaseY: histH - histBottom, LabelY: histH - 4, LoX: chartPad, HiX: chartW - chartPad}
	for i, h := range hs {
		k := float64(len(h.Counts))
		w := (h.Hi - h.Lo) / k
		if w == 0 { // every value is lo: one bar a twentieth of the axis wide
			w = (hi - lo) / histBins
		}
		for j, c := range h.Counts {
			if c == 0 {
				continue
			}
			left := h.Lo + float64(j)*w
			if h.Hi == h.Lo {
				left = h.Lo - w/2
			}
			share := float64(c) / float64(ns[i])
			bh := round2(share / top * plotH)
			if !finite(left+w, x(left), x(left+w)) {
				return nil // rewards near the limits of float64: no chart to draw, the table says why
			}
			ch.Bars = append(ch.Bars, bar{
				Side: sides[i], X: x(left), W: max(round2(x(left+w)-x(left)), 1), Y: round2(ch.BaseY - bh), H: bh,
				Title: fmt.Sprintf("%s: [%.3g, %.3g]: %d of %d (%.1f%%)", strings.ToUpper(sides[i]), left, left+w, c, ns[i], 100*share),
			})
		}
	}
	return ch
}
