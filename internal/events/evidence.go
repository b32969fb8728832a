package events

// EventEvidence is one item of a run file's rollout evidence (ng_trajectory,
// ng_agent_observations): made by the rollouts source, never decoded from a line (the event
// stream has no such event; its name is not in EventNames). Event.Evidence holds it.
const EventEvidence = EventRolloutResponse + 1

// EvidenceKind is what an evidence item is.
type EvidenceKind uint8

const (
	// EvidenceRow: one main-output row; Trajectory says whether it carries ng_trajectory.
	EvidenceRow EvidenceKind = iota
	EvidenceModelCall
	EvidenceToolCall
	EvidenceInvocation
	EvidenceSandbox
	EvidenceCompaction
	EvidenceGap
	// EvidenceProblem: Count problems of kind Problem in one row.
	EvidenceProblem
)

// EvidenceItem is one item of a row's rollout evidence, its values raw (the aggregator
// normalises them by the schema's rules). Every []byte is valid UTF-8, nil when absent.
type EvidenceItem struct {
	Kind EvidenceKind

	// EvidenceRow
	Trajectory bool

	// EvidenceModelCall (Model, Dialect, StatusClass, FinishReason, Outcome; Tokens by
	// ResponseToken type); DurationMS also of a tool call.
	Model, Dialect, StatusClass, FinishReason, Outcome []byte
	DurationMS, TTFTMS                                 float64
	HasDuration, HasTTFT                               bool
	Tokens                                             [NumResponseTokenTypes]int64
	HasTokens                                          [NumResponseTokenTypes]bool

	// EvidenceToolCall (Status also of an invocation, a sandbox's and a compaction's outcome)
	ToolName, TimingSource []byte
	Status                 []byte

	// EvidenceInvocation
	Subagent bool

	// EvidenceSandbox
	Role, Provider           []byte
	WallS, CPUS, PeakMiB     float64
	HasWall, HasCPU, HasPeak bool

	// EvidenceCompaction
	TokensBefore, TokensAfter       int64
	HasTokensBefore, HasTokensAfter bool

	// EvidenceGap: Code; EvidenceProblem: Code is the problem, Count how many.
	Code  []byte
	Count int64
}
