package main

// The summary's report: the JSON document (gymrun.summary/v1) and the table a person reads.

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gym-telemetry/otelcol-gym/internal/prices"
)

// Schema names the JSON document's format; a change of meaning gets a new version.
const Schema = "gymrun.summary/v1"

// Report is the JSON document.
type Report struct {
	Schema     string                 `json:"schema"`
	Files      []FileReport           `json:"files"`
	Benchmarks map[string]BenchReport `json:"benchmarks"`
	// Overflow names the numbers that do not fit (overflow.go), sorted: JSON Pointers to a
	// null that would not be a finite number, or to an integer sum saturated at the largest
	// int64. Empty for any real run.
	Overflow []string `json:"overflow"`
	warnings []string // what overflowed and from which file, for standard error
}

// FileReport is one run file read: the rows applied and those rejected, by reason.
type FileReport struct {
	Path     string           `json:"path"`
	Kind     string           `json:"kind"`
	Rows     int64            `json:"rows"`
	Rejected int64            `json:"rejected"`
	ByReason map[string]int64 `json:"rejected_by_reason"`
}

// BenchReport is one benchmark's statistics.
type BenchReport struct {
	Attempts      int64                       `json:"attempts"`
	Scored        int64                       `json:"scored"`
	Failed        int64                       `json:"failed"`
	FailedByClass map[string]int64            `json:"failed_by_class"`
	FailedByKind  map[string]int64            `json:"failed_by_kind"`
	FailedByGroup map[string]int64            `json:"failed_by_group"`
	Masked        int64                       `json:"masked"`
	Reward        Reward                      `json:"reward"`
	PassRate      *float64                    `json:"pass_rate"`
	Responses     int64                       `json:"responses"`
	Truncated     int64                       `json:"truncated"`
	Tokens        map[string]map[string]int64 `json:"tokens"`
	ToolCalls     ToolCalls                   `json:"tool_calls"`
	DurationMS    *Durations                  `json:"duration_ms"`
	// From the rows' rollout evidence (ng_trajectory, ng_agent_observations).
	ModelCalls ModelCalls       `json:"model_calls"`
	Sandboxes  map[string]int64 `json:"sandboxes"` // by outcome
	Evidence   EvidenceReport   `json:"evidence"`
	Cost       *Cost            `json:"cost,omitempty"` // with --prices only
}

// Reward is the mean reward over its explicit denominator n: scored, unmasked rows whose reward
// is a finite number. The rows left out are counted apart.
type Reward struct {
	N    int64       `json:"n"`
	Sum  *float64    `json:"sum"` // null only when it overflows (the document's overflow)
	Mean *float64    `json:"mean"`
	SD   *float64    `json:"sd"` // sample standard deviation: what compare's Welch test needs
	CI95 *[2]float64 `json:"ci95"`
	// Tasks: the task indices of the n rewards (0 when a row gives none); SEByTask and
	// CI95ByTask: the mean's standard error and interval clustered by task (two tasks or more).
	Tasks      int64       `json:"tasks"`
	SEByTask   *float64    `json:"se_by_task"`
	CI95ByTask *[2]float64 `json:"ci95_by_task"`
	NaN        int64       `json:"nan"`
	Missing    int64       `json:"missing"`
	Infinite   int64       `json:"infinite"`
	Histogram  *Histogram  `json:"histogram"` // of the n rewards
}

// ToolCalls are the function calls of the responses whose output is a list.
type ToolCalls struct {
	Rows int64 `json:"rows"`
	Sum  int64 `json:"sum"`
	// ByTool: the tool calls of the rows' rollout evidence, by tool name.
	ByTool map[string]ToolStat `json:"by_tool"`
}

// Durations are nearest-rank percentiles of ng_perf.total_latency_ms over N rows.
type Durations struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// report builds the JSON document of the summary and the files read; with a price table, each
// benchmark's cost. A number that does not fit is null or saturated, and named (overflow.go).
func (s *Summary) report(files []FileReport, table *prices.Table) Report {
	out := Report{Schema: Schema, Files: files, Benchmarks: map[string]BenchReport{}, Overflow: []string{}}
	for _, name := range sortedNames(s.benches) {
		b := s.benches[name]
		o := &overflows{bench: name}
		br := BenchReport{
			Attempts: b.attempts, Scored: b.scored, Failed: b.failed,
			FailedByClass: b.failedByClass, FailedByKind: b.failedByKind, FailedByGroup: b.failedByGroup, Masked: b.masked,
			Reward:    Reward{N: b.rewards.n, NaN: b.rewardNaN, Missing: b.rewardMissing, Infinite: b.rewardInf},
			Responses: b.responses, Truncated: b.truncated, Tokens: b.tokens,
			ToolCalls: ToolCalls{Rows: b.toolCallRows, Sum: b.toolCalls},
		}
		br.Reward.Sum = o.num(b.rewardSum, &o.rewards, "reward", "sum")
		if h := b.hist.report(); h != nil {
			// The HTML report scales by hi − lo: it must be finite too.
			if finite(h.Lo, h.Hi, h.Hi-h.Lo) {
				br.Reward.Histogram = h
			} else {
				o.rewards = append(o.rewards, pointer("benchmarks", name, "reward", "histogram"))
			}
		}
		if n := b.rewards.n; n > 0 {
			br.Reward.Mean = o.num(b.rewards.mean, &o.rewards, "reward", "mean")
			if sd, ok := b.rewards.sd(); ok {
				if br.Reward.SD = o.num(sd, &o.rewards, "reward", "sd"); br.Reward.SD != nil {
					br.Reward.CI95 = o.pair(meanInterval(b.rewards, sd, b.binary), &o.rewards, "reward", "ci95")
				}
			}
			if b.binary {
				rate := float64(b.passes) / float64(n)
				br.PassRate = &rate
			}
			ts := b.taskSums()
			br.Reward.Tasks = int64(len(ts))
			if e, ok := clustered(ts); ok {
				if br.Reward.SEByTask = o.num(e.se, &o.rewards, "reward", "se_by_task"); br.Reward.SEByTask != nil {
					br.Reward.CI95ByTask = o.pair(taskInterval(e, n, b.binary), &o.rewards, "reward", "ci95_by_task")
				}
			}
		}
		for _, typ := range sortedNames(b.tokens) {
			for _, m := range sortedNames(b.tokens[typ]) {
				if b.satTokens[[2]string{typ, m}] {
					o.sums = append(o.sums, pointer("benchmarks", name, "tokens", typ, m))
				}
			}
		}
		if b.satToolCalls {
			o.sums = append(o.sums, pointer("benchmarks", name, "tool_calls", "sum"))
		}
		if len(b.durations) > 0 {
			d := slices.Clone(b.durations)
			slices.Sort(d)
			br.DurationMS = &Durations{N: len(d), P50: percentile(d, 50), P90: percentile(d, 90), P99: percentile(d, 99)}
		}
		b.ev.report(&br)
		if table != nil {
			br.Cost = cost(table, &br, b, o)
		}
		out.Benchmarks[name] = br
		out.Overflow = append(out.Overflow, o.all()...)
		out.warnings = append(out.warnings, o.warnings(b)...)
	}
	slices.Sort(out.Overflow)
	return out
}

// taskInterval is the 95% interval of a mean clustered by task (e, over n rewards): for a pass
// rate, Wilson's at the effective number of rewards p(1 − p)/se² (between the tasks and the
// rewards: at a rate of 0 or 1, the tasks), which stays within [0, 1]; else Student's t.
func taskInterval(e est, n int64, binary bool) [2]float64 {
	if !binary {
		return e.ci95()
	}
	lo, hi := e.df+1, float64(n)
	eff := lo
	if v := e.mean * (1 - e.mean); v > 0 {
		eff = hi
		if e.se > 0 {
			eff = min(max(v/(e.se*e.se), lo), hi)
		}
	}
	return wilsonEff(e.mean, eff)
}

// writeText writes the report as tables: one line per benchmark, then failures, tokens and
// the files read.
func writeText(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	names := sortedNames(r.Benchmarks)
	byRollout := false
	fmt.Fprintln(tw, "benchmark\tattempts\tscored\tfailed\tmasked\treward n\ttasks\tmean\tci95\tpass\tnan/missing\ttruncated/responses\ttool calls\tp50 ms\tp90 ms\tp99 ms\t")
	for _, n := range names {
		b := r.Benchmarks[n]
		mean, ci, pass, tasks := "-", "-", "-", "-"
		if b.Reward.Mean != nil {
			mean = fmt.Sprintf("%.4f", *b.Reward.Mean)
		}
		// By task when the tasks are known (the unit), else by rollout, marked.
		if b.Reward.CI95ByTask != nil {
			ci = fmt.Sprintf("[%.4f, %.4f]", b.Reward.CI95ByTask[0], b.Reward.CI95ByTask[1])
		} else if b.Reward.CI95 != nil {
			ci, byRollout = fmt.Sprintf("[%.4f, %.4f]*", b.Reward.CI95[0], b.Reward.CI95[1]), true
		}
		if b.Reward.Tasks > 0 {
			tasks = fmt.Sprint(b.Reward.Tasks)
		}
		if b.PassRate != nil {
			pass = fmt.Sprintf("%.1f%%", 100**b.PassRate)
		}
		p50, p90, p99 := "-", "-", "-"
		if d := b.DurationMS; d != nil {
			p50, p90, p99 = fmt.Sprintf("%.0f", d.P50), fmt.Sprintf("%.0f", d.P90), fmt.Sprintf("%.0f", d.P99)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%d/%d\t%d/%d\t%d\t%s\t%s\t%s\t\n",
			n, b.Attempts, b.Scored, b.Failed, b.Masked, b.Reward.N, tasks, mean, ci, pass,
			b.Reward.NaN, b.Reward.Missing, b.Truncated, b.Responses, b.ToolCalls.Sum, p50, p90, p99)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if byRollout {
		fmt.Fprintln(w, "*: by rollout, not by task (a row gives no task index)")
	}
	var lines []string
	for _, n := range names {
		b := r.Benchmarks[n]
		for _, c := range sortedNames(b.FailedByClass) {
			lines = append(lines, fmt.Sprintf("  %s\tclass\t%s\t%d\t", n, c, b.FailedByClass[c]))
		}
		for _, k := range sortedNames(b.FailedByKind) {
			lines = append(lines, fmt.Sprintf("  %s\tkind\t%s\t%d\t", n, k, b.FailedByKind[k]))
		}
	}
	section(w, "\nfailures:", lines)
	lines = lines[:0]
	for _, n := range names {
		b := r.Benchmarks[n]
		for _, t := range sortedNames(b.Tokens) {
			for _, m := range sortedNames(b.Tokens[t]) {
				lines = append(lines, fmt.Sprintf("  %s\t%s\t%s\t%d\t", n, t, m, b.Tokens[t][m]))
			}
		}
	}
	section(w, "\ntokens (benchmark, type, model):", lines)
	lines = lines[:0]
	for _, n := range names {
		lines = append(lines, evidenceLines(n, r.Benchmarks[n])...)
	}
	section(w, "\nmodel calls, tools and sandboxes (from the rows' trajectories):", lines)
	writeCost(w, r, names)
	writeOverflow(w, r)
	lines = lines[:0]
	for _, f := range r.Files {
		reasons := make([]string, 0, len(f.ByReason))
		for _, reason := range sortedNames(f.ByReason) {
			reasons = append(reasons, fmt.Sprintf("%s=%d", reason, f.ByReason[reason]))
		}
		lines = append(lines, fmt.Sprintf("  %s\t%s\t%d rows\t%d rejected\t%s\t", f.Path, f.Kind, f.Rows, f.Rejected, strings.Join(reasons, " ")))
	}
	section(w, "\nfiles:", lines)
	return nil
}

// section writes a heading and its lines aligned, nothing when there are none.
func section(w io.Writer, heading string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, heading)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	_ = tw.Flush()
}
