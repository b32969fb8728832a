package scorecard

import (
	"errors"
	"fmt"
	"strings"
)

// HistoryHeading is the heading of the section of docs/performance.md whose table keeps one
// row per `make bench`.
const HistoryHeading = "## History"

// Run is what a history row says about the run besides the figures.
type Run struct {
	Date    string // 2006-01-02
	Commit  string // short hash, "+dirty" when the tree had changes
	Machine string // nproc x CPU model
	Load    string // load averages
}

// HistoryRow is the markdown row of a run: date, commit, machine, load, then one cell per row
// (the paths' order of the History table's header).
func HistoryRow(run Run, rows []Row) string {
	cells := []string{run.Date, run.Commit, run.Machine, run.Load}
	for _, r := range rows {
		cells = append(cells, Cell(r))
	}
	return "| " + strings.Join(cells, " | ") + " |"
}

// Cell is a path's figures in a history row: "1.05 M vs 25 k events/CPU-s (x42.0)", then the
// asides; "-" when not measured.
func Cell(r Row) string {
	if !r.Measured {
		return "-"
	}
	var s string
	if r.FixedRef > 0 {
		s = fmt.Sprintf("%s (%s)", Quantity(r.Result.Figure, r.Unit), r.RatioText())
	} else {
		s = fmt.Sprintf("%s vs %s (%s)", strings.TrimSuffix(Quantity(r.Result.Figure, r.Unit), " "+r.Unit),
			Quantity(r.Ref, r.Unit), r.RatioText())
	}
	for _, a := range r.Result.Aside {
		s += fmt.Sprintf("; %s %s", a.Name, Number(a.Value))
	}
	return s
}

// InsertHistory returns doc with row added as the last row of the first table in the section
// headed HistoryHeading.
func InsertHistory(doc, row string) (string, error) {
	lines := strings.Split(doc, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == HistoryHeading {
			start = i
			break
		}
	}
	if start < 0 {
		return "", errors.New("no section " + HistoryHeading)
	}
	last := -1
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "## ") || strings.HasPrefix(l, "# ") {
			break
		}
		if strings.HasPrefix(l, "|") {
			last = i
		} else if last >= 0 {
			break
		}
	}
	if last < 0 {
		return "", errors.New("no table in " + HistoryHeading)
	}
	out := append([]string{}, lines[:last+1]...)
	out = append(out, row)
	out = append(out, lines[last+1:]...)
	return strings.Join(out, "\n"), nil
}
