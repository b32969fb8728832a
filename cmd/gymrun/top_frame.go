package main

// One frame of gymrun top: plain lines of at most width columns, sections of a few rows each
// (the largest first, the rest counted), so that a frame fits an 80x24 terminal.

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gym-telemetry/otelcol-gym/internal/live"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// sectionRows is how many rows a section shows; the others are counted in a last row.
const sectionRows = 4

// showNum writes a number as the API gives it: a whole number exactly, else three significant
// digits.
func showNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-" // unknown: the page's API wrote null
	}
	if v == float64(int64(v)) && v < 1e15 && v > -1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// cut is s in at most n columns.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func showOpt(v *float64, unit string) string {
	if v == nil {
		return "-"
	}
	return showNum(*v) + unit
}

// lines collects a frame's lines, each cut to width.
type lines struct {
	width int
	out   []string
}

func (l *lines) add(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	l.out = append(l.out, cut(s, l.width))
}

// rows adds at most sectionRows of n rows (row(i) writes the i'th), then how many are left.
func (l *lines) rows(n int, row func(i int)) {
	for i := range min(n, sectionRows) {
		row(i)
	}
	if n > sectionRows {
		l.add("          … %d more", n-sectionRows)
	}
}

// writeFrame writes f in at most width columns.
func writeFrame(w io.Writer, f frame, width int) {
	l := &lines{width: max(width, 40)}
	at := "-"
	if !f.asOf.IsZero() {
		at = f.asOf.UTC().Format(time.TimeOnly) + " UTC"
	}
	l.add("gymrun top  %s  %s  q quits, n next run", f.url, at)
	switch {
	case f.err != nil:
		l.add("cannot read the live page: %v", f.err)
	case len(f.runs) == 0:
		l.add("no run yet: the collector has exported no Gym metric with a nemo.run.id")
	case f.run != nil:
		writeRunSection(l, f)
	}
	if f.health != nil {
		writeHealthSection(l, f.health)
	}
	_, _ = io.WriteString(w, strings.Join(l.out, "\n")+"\n")
}

func writeRunSection(l *lines, f frame) {
	r := f.run
	l.add("run %s (%d of %d)  %d servers  %d series", r.ID, f.index+1, len(f.runs), r.Servers, r.Series)
	l.add("rollouts  %s completed  %s/min  %s in flight  %s stalled  oldest %s",
		showNum(r.CompletedTotal), showOpt(r.PerMinute, ""), showNum(r.InFlight), showNum(r.Stalled), showOpt(r.OldestAge, "s"))
	outcomes := schema.Attr(schema.AttrNemoGymRolloutOutcome).Values
	var by []string
	for _, o := range outcomes {
		if v, ok := r.Completed[o]; ok {
			by = append(by, o+" "+showNum(v))
		}
	}
	l.add("          %s", strings.Join(by, "  "))
	if len(r.Failures) > 0 {
		l.add("failures  by kind")
		l.rows(len(r.Failures), func(i int) { l.add("          %-40s %12s", cut(r.Failures[i].Name, 40), showNum(r.Failures[i].Value)) })
	}
	if len(r.Rewards) > 0 {
		ranges := schema.Attr(schema.AttrNemoGymRolloutRewardRange).Values
		head := fmt.Sprintf("%-24s %8s", "rewards", "scored")
		for _, rg := range ranges {
			head += fmt.Sprintf(" %8s", rg)
		}
		l.add("%s", head)
		l.rows(len(r.Rewards), func(i int) {
			rw := r.Rewards[i]
			row := fmt.Sprintf("  %-22s %8s", cut(rw.Dispatch, 22), showNum(rw.Total))
			for _, rg := range ranges {
				row += fmt.Sprintf(" %8s", showNum(rw.ByRange[rg]))
			}
			l.add("%s", row)
		})
	}
	writeTokenSection(l, r.Tokens)
	if c := r.Cost; c != nil {
		per := "-"
		if c.PerScoredRollout != nil {
			per = fmt.Sprintf("$%.4f", *c.PerScoredRollout)
		}
		usd := "-"
		if !math.IsNaN(c.USD) && !math.IsInf(c.USD, 0) {
			usd = fmt.Sprintf("$%.4f", c.USD)
		}
		l.add("cost      %s  %s per scored rollout  %d models priced  %d unpriced rows",
			usd, per, len(c.ByModel), len(c.Unpriced))
	}
	if len(r.Flight) > 0 {
		flight := slices.Clone(r.Flight)
		slices.SortStableFunc(flight, func(a, b live.FlightRow) int {
			return cmp.Or(cmp.Compare(b.Stalled, a.Stalled), cmp.Compare(b.InFlight, a.InFlight))
		})
		l.add("%-24s %-24s %10s %10s", "in flight", "stage", "in flight", "stalled")
		l.rows(len(flight), func(i int) {
			l.add("  %-22s %-24s %10s %10s", cut(flight[i].Server, 22), cut(flight[i].Stage, 24), showNum(flight[i].InFlight), showNum(flight[i].Stalled))
		})
	}
	if len(r.ServerRows) > 0 {
		l.add("%-28s %10s %10s %10s %8s", "servers", "lag p99", "gc p99", "memory", "cpu")
		l.rows(len(r.ServerRows), func(i int) {
			s := r.ServerRows[i]
			// The instance without the run's id it usually starts with: the part that tells
			// the processes of one server apart.
			name := cut(cmp.Or(s.Name, s.Service)+" "+strings.TrimPrefix(s.Instance, r.ID+"-"), 26)
			var mem *float64
			if s.Memory != nil {
				mib := *s.Memory / (1 << 20)
				mem = &mib
			}
			l.add("  %-26s %10s %10s %10s %8s", name, distP99(s.Lag), distP99(s.GCPause), showOpt(mem, "Mi"), showOpt(s.CPU, "%"))
		})
	}
}

func writeTokenSection(l *lines, tokens []live.TokenRow) {
	if len(tokens) == 0 {
		return
	}
	l.add("%-24s %-12s %-28s %12s", "tokens", "type", "model or server", "tokens")
	l.rows(len(tokens), func(i int) {
		t := tokens[i]
		l.add("  %-22s %-12s %-28s %12s", cut(t.Instrument, 22), cut(t.Type, 12), cut(cmp.Or(t.Model, t.Server), 28), showNum(t.Tokens))
	})
}

func distP99(d *live.Dist) string {
	if d == nil {
		return "-"
	}
	return showOpt(d.P99, "ms")
}

func writeHealthSection(l *lines, h *live.CollectorHealth) {
	if h.Error != "" {
		l.add("collector  cannot read its own metrics: %s", h.Error)
		return
	}
	// At most three lines of counts, each within the width; the page has them all.
	const first, indent, maxLines = "collector", "         ", 3
	line, lines := first, 1
	for _, fam := range h.Families {
		part := "  " + cmp.Or(fam.Title, fam.Name) + " " + showNum(fam.Total)
		if utf8.RuneCountInString(line+part) > l.width && line != first {
			if lines == maxLines {
				line += "  …"
				break
			}
			l.add("%s", line)
			line, lines = indent, lines+1
		}
		line += part
	}
	l.add("%s", line)
}
