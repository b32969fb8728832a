package aggregate

import (
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Values of the evidence attributes the aggregator writes itself.
var (
	compactionBefore = []byte(schema.Attr(schema.AttrNemoGymCompactionTokensPoint).Values[0])
	compactionAfter  = []byte(schema.Attr(schema.AttrNemoGymCompactionTokensPoint).Values[1])
)

// evidence records one item of a run file's rollout evidence (internal/rollouts): the
// counters once per item, one histogram sample per value given.
func (r *Resource) evidence(a *Aggregator, sk *Sink, it *events.EvidenceItem) {
	k := &sk.kb
	switch it.Kind {
	case events.EvidenceRow:
		r.series(a, sk, k.begin(schema.GymEvidenceRowsTotal).bool(it.Trajectory)).val++
	case events.EvidenceModelCall:
		k.begin(schema.GymEvidenceModelCallsTotal).str(it.Model).str(it.Dialect).str(it.StatusClass).str(it.FinishReason).str(it.Outcome)
		r.series(a, sk, k).val++
		if it.HasDuration {
			r.histogram(a, sk, k.begin(schema.GymEvidenceModelCallDurationMs).str(it.Model).str(it.Dialect).str(it.Outcome), it.DurationMS)
		}
		if it.HasTTFT {
			r.histogram(a, sk, k.begin(schema.GymEvidenceModelCallTtftMs).str(it.Model).str(it.Dialect), it.TTFTMS)
		}
		for t := range events.NumResponseTokenTypes {
			if it.HasTokens[t] {
				r.histogram(a, sk, k.begin(schema.GymEvidenceModelCallTokens).str(it.Model).str(it.Dialect).str(responseTokenTypes[t]), float64(it.Tokens[t]))
			}
		}
	case events.EvidenceToolCall:
		r.series(a, sk, k.begin(schema.GymEvidenceToolCallsTotal).str(it.ToolName).str(it.Status).str(it.TimingSource)).val++
		if it.HasDuration {
			r.histogram(a, sk, k.begin(schema.GymEvidenceToolCallDurationMs).str(it.ToolName).str(it.Status), it.DurationMS)
		}
	case events.EvidenceInvocation:
		r.series(a, sk, k.begin(schema.GymEvidenceAgentInvocationsTotal).str(it.Status).bool(it.Subagent)).val++
	case events.EvidenceSandbox:
		r.series(a, sk, k.begin(schema.GymEvidenceSandboxesTotal).str(it.Role).str(it.Provider).str(it.Status)).val++
		sample := func(id schema.InstrumentID, has bool, v float64) {
			if has {
				r.histogram(a, sk, k.begin(id).str(it.Role).str(it.Provider), v)
			}
		}
		sample(schema.GymEvidenceSandboxWallTimeS, it.HasWall, it.WallS)
		sample(schema.GymEvidenceSandboxCpuTimeS, it.HasCPU, it.CPUS)
		sample(schema.GymEvidenceSandboxPeakMemoryMib, it.HasPeak, it.PeakMiB)
	case events.EvidenceCompaction:
		r.series(a, sk, k.begin(schema.GymEvidenceCompactionsTotal).str(it.Status)).val++
		if it.HasTokensBefore {
			r.histogram(a, sk, k.begin(schema.GymEvidenceCompactionTokens).str(it.Status).str(compactionBefore), float64(it.TokensBefore))
		}
		if it.HasTokensAfter {
			r.histogram(a, sk, k.begin(schema.GymEvidenceCompactionTokens).str(it.Status).str(compactionAfter), float64(it.TokensAfter))
		}
	case events.EvidenceGap:
		r.series(a, sk, k.begin(schema.GymEvidenceGapsTotal).str(it.Code)).val++
	case events.EvidenceProblem:
		r.series(a, sk, k.begin(schema.GymEvidenceProblemsTotal).str(it.Code)).val += it.Count
	}
}
