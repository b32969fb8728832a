package main

// compare's text form: a table a person reads in an 80-column terminal, then what moved.

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// writeCompareText writes one line per benchmark (reward n and mean in A and B, the change and
// its raw 95% interval, the verdict from the adjusted p-value), then per benchmark the test, the
// p-values, the detectable effect and the causes with the shares that moved, then the overall
// verdict and how the family was judged.
func writeCompareText(w io.Writer, r CompareReport) error {
	fmt.Fprintf(w, "A: %s\nB: %s\n\n", r.A, r.B)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tn A/B\tmean A\tmean B\tdelta\t95% interval\tverdict\t")
	names := sortedNames(r.Benchmarks)
	for _, n := range names {
		c := r.Benchmarks[n]
		na, nb, ma, mb := "-", "-", "-", "-"
		if c.A != nil {
			na, ma = fmt.Sprint(c.A.N), fmtMean(c.A.Mean)
		}
		if c.B != nil {
			nb, mb = fmt.Sprint(c.B.N), fmtMean(c.B.Mean)
		}
		delta, ci := "-", "-"
		if c.Delta != nil {
			delta, ci = fmt.Sprintf("%+.3f", *c.Delta), fmt.Sprintf("[%+.3f, %+.3f]", c.CI95[0], c.CI95[1])
		}
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\t\n", n, na, nb, ma, mb, delta, ci, c.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range names {
		writeCompareDetail(w, n, r.Benchmarks[n])
	}
	fmt.Fprintf(w, "\nverdict: %s (%s)\n", r.Verdict, familyNote(r))
	return nil
}

// familyNote says how the verdicts hold the family-wise error.
func familyNote(r CompareReport) string {
	if r.Correction == correctionNone {
		return fmt.Sprintf("no correction: each of %d benchmarks at level %g", r.Family, r.Level)
	}
	return fmt.Sprintf("%s over %d benchmarks at level %g", r.Correction, r.Family, r.Level)
}

func fmtMean(m *float64) string {
	if m == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *m)
}

// writeCompareDetail writes how a benchmark was judged: the test, the causes and each change
// behind them, one a line.
func writeCompareDetail(w io.Writer, name string, c CompareBench) {
	head, lines := compareDetail(c)
	fmt.Fprintf(w, "\n%s: %s\n", name, head)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// compareDetail says how a benchmark was judged (the text form's and the HTML report's words):
// the test and the causes, then each change behind the causes.
func compareDetail(c CompareBench) (head string, lines []string) {
	switch {
	case c.OnlyIn != "":
		return "only in " + strings.ToUpper(c.OnlyIn), nil
	case c.Test == testPaired:
		head = fmt.Sprintf("paired over %d tasks", c.Pairs)
		if la, lb := c.A.Tasks-c.Pairs, c.B.Tasks-c.Pairs; la > 0 || lb > 0 {
			head += fmt.Sprintf(" (left out: %d tasks of A and %d of B without a reward in the other run)", la, lb)
		}
	case c.Test == testClustered:
		head = fmt.Sprintf("unpaired, clustered by task (%d and %d tasks)", c.A.Tasks, c.B.Tasks)
	case c.Test == testWelch:
		head = "Welch's t (unpaired, by rollout: a run's rows give no task index)"
	case c.Reason == reasonOneTask:
		head = "one task: no spread between tasks to judge by, no test"
	case c.Reason == reasonNotFinite:
		head = "rewards too large for a finite interval, no test"
	default:
		head = "too few rewards for an interval"
	}
	if c.PValue != nil {
		head += fmt.Sprintf("; p %.2g (adjusted %.2g)", *c.PValue, *c.PAdj)
	}
	switch {
	case c.MDE80 != nil:
		head += fmt.Sprintf("; detectable ±%.3f", *c.MDE80)
	case c.PValue != nil:
		head += "; every task moved alike (no spread)"
	}
	causes := "none"
	if len(c.Causes) > 0 {
		causes = strings.Join(c.Causes, ", ")
	}
	head += "; causes: " + causes
	if c.A.N != c.B.N {
		lines = append(lines, fmt.Sprintf("%-10s %d -> %d rewards", "reward n", c.A.N, c.B.N))
	}
	for _, s := range append(append([]string{}, attemptShares...), denominatorShares...) {
		if sh := c.Shares[s]; sh.Moved {
			lines = append(lines, fmt.Sprintf("%-10s %.1f%% -> %.1f%% of %s (z %+.2f)", s, 100*sh.A, 100*sh.B, sh.Of, sh.Z))
		}
	}
	return head, lines
}
