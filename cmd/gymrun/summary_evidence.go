package main

// The summary's rollout evidence: what each row's ng_trajectory and ng_agent_observations say
// of its model calls, tool calls and sandboxes, as internal/rollouts reads them for the
// receiver (the same decoder: an item in both objects is one, a bad item is left out), with
// the aggregator's attribute rules. Evidence events name no benchmark: they follow their
// row's rollout.completed (Row.Events, then Row.Evidence).

import (
	"fmt"
	"slices"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// evidence accumulates one benchmark's evidence.
type evidence struct {
	rows, withTrajectory int64
	modelCalls           int64
	errors               map[string]int64 // by error category (outcome other than ok)
	durations, ttfts     []float64
	tools                map[string]*ToolStat
	sandboxes            map[string]int64 // by outcome
	gaps, problems       map[string]int64
}

func newEvidence() evidence {
	return evidence{errors: map[string]int64{}, tools: map[string]*ToolStat{}, sandboxes: map[string]int64{}, gaps: map[string]int64{}, problems: map[string]int64{}}
}

var (
	toolCompleted = schema.Attr(schema.AttrNemoGymToolStatus).Values[0] // completed
	callOK        = "ok"
)

// evidence accumulates one evidence event into the benchmark of the row being applied.
func (s *Summary) evidence(it *events.EvidenceItem) {
	if s.cur == nil {
		return
	}
	e := &s.cur.ev
	switch it.Kind {
	case events.EvidenceRow:
		e.rows++
		if it.Trajectory {
			e.withTrajectory++
		}
	case events.EvidenceModelCall:
		e.modelCalls++
		if o := s.attr(schema.AttrNemoGymModelCallOutcome, it.Outcome); o != callOK {
			e.errors[o]++
		}
		if it.HasDuration {
			e.durations = append(e.durations, it.DurationMS)
		}
		if it.HasTTFT {
			e.ttfts = append(e.ttfts, it.TTFTMS)
		}
	case events.EvidenceToolCall:
		name := s.attr(schema.AttrNemoGymToolName, it.ToolName)
		t := e.tools[name]
		if t == nil {
			t = &ToolStat{}
			e.tools[name] = t
		}
		t.N++
		if s.attr(schema.AttrNemoGymToolStatus, it.Status) != toolCompleted {
			t.Failed++
		}
	case events.EvidenceSandbox:
		e.sandboxes[s.attr(schema.AttrNemoGymSandboxOutcome, it.Status)]++
	case events.EvidenceGap:
		e.gaps[s.attr(schema.AttrNemoGymEvidenceGapCode, it.Code)]++
	case events.EvidenceProblem:
		e.problems[string(it.Code)] += it.Count
	}
}

// ModelCalls are the model calls of a benchmark's trajectories.
type ModelCalls struct {
	N          int64            `json:"n"`
	Errors     map[string]int64 `json:"errors"` // by error category
	DurationMS *Percentiles     `json:"duration_ms"`
	TTFTMS     *Percentiles     `json:"ttft_ms"`
}

// Percentiles are nearest-rank percentiles over n samples (null: none).
type Percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// ToolStat is one tool's calls: failed are those whose status is not completed.
type ToolStat struct {
	N      int64 `json:"n"`
	Failed int64 `json:"failed"`
}

// EvidenceReport is how much of a benchmark's rows carry evidence, and what Gym could not
// observe (gaps) or the collector could not read (problems), by code.
type EvidenceReport struct {
	Rows           int64            `json:"rows"`
	WithTrajectory int64            `json:"with_trajectory"`
	Gaps           map[string]int64 `json:"gaps"`
	Problems       map[string]int64 `json:"problems"`
}

func percentiles(xs []float64) *Percentiles {
	if len(xs) == 0 {
		return nil
	}
	d := slices.Clone(xs)
	slices.Sort(d)
	return &Percentiles{N: len(d), P50: percentile(d, 50), P90: percentile(d, 90), P99: percentile(d, 99)}
}

// report fills a benchmark's evidence fields.
func (e *evidence) report(br *BenchReport) {
	br.ModelCalls = ModelCalls{N: e.modelCalls, Errors: e.errors, DurationMS: percentiles(e.durations), TTFTMS: percentiles(e.ttfts)}
	br.ToolCalls.ByTool = map[string]ToolStat{}
	for n, t := range e.tools {
		br.ToolCalls.ByTool[n] = *t
	}
	br.Sandboxes = e.sandboxes
	br.Evidence = EvidenceReport{Rows: e.rows, WithTrajectory: e.withTrajectory, Gaps: e.gaps, Problems: e.problems}
}

// evidenceLines are the text summary's lines of a benchmark's evidence (none without).
func evidenceLines(n string, b BenchReport) []string {
	var lines []string
	if b.Evidence.WithTrajectory == 0 && b.ModelCalls.N == 0 && len(b.ToolCalls.ByTool) == 0 && len(b.Sandboxes) == 0 {
		return nil
	}
	lines = append(lines, fmt.Sprintf("  %s\trows with trajectory\t%d/%d\t", n, b.Evidence.WithTrajectory, b.Evidence.Rows))
	mc := b.ModelCalls
	lines = append(lines, fmt.Sprintf("  %s\tmodel calls\t%d\t%s\t", n, mc.N, pct("ms", mc.DurationMS)+" "+pct("ttft ms", mc.TTFTMS)))
	for _, c := range sortedNames(mc.Errors) {
		lines = append(lines, fmt.Sprintf("  %s\tmodel call errors\t%d\t%s\t", n, mc.Errors[c], c))
	}
	for _, t := range sortedNames(b.ToolCalls.ByTool) {
		ts := b.ToolCalls.ByTool[t]
		lines = append(lines, fmt.Sprintf("  %s\ttool %s\t%d\t%d failed\t", n, t, ts.N, ts.Failed))
	}
	for _, o := range sortedNames(b.Sandboxes) {
		lines = append(lines, fmt.Sprintf("  %s\tsandboxes %s\t%d\t", n, o, b.Sandboxes[o]))
	}
	for _, g := range sortedNames(b.Evidence.Gaps) {
		lines = append(lines, fmt.Sprintf("  %s\tgap %s\t%d\t", n, g, b.Evidence.Gaps[g]))
	}
	for _, p := range sortedNames(b.Evidence.Problems) {
		lines = append(lines, fmt.Sprintf("  %s\tproblem %s\t%d\t", n, p, b.Evidence.Problems[p]))
	}
	return lines
}

func pct(unit string, p *Percentiles) string {
	if p == nil {
		return unit + " -"
	}
	return fmt.Sprintf("%s p50 %.0f p90 %.0f p99 %.0f", unit, p.P50, p.P90, p.P99)
}
