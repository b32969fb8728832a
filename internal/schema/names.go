package schema

// ScoredOutcome is the outcome of a rollout that was scored: nemo.gym.rollout.outcome's first
// value (metadata.yaml), under which failure fields are not attributes and rewards count. Every
// reader of outcomes (the aggregator, the bounding rules, the live page, gymrun) takes it here.
var ScoredOutcome = Attr(AttrNemoGymRolloutOutcome).Values[0]

// Absent is how a report names an optional attribute a point or row does not carry (no failure
// kind, no model): it matches no attribute's rule, so it never stands for a value. gymrun and
// the live page show it alike.
const Absent = "(none)"

// EvidenceScopeName is the instrumentation scope of the spans the gym receiver makes from the
// rollout evidence of Gym's run files (a finished rollout's history, read after the fact). The
// flight recorder leaves spans of this scope out: they say nothing of what is in flight now.
const EvidenceScopeName = "github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/evidence"

// The span attributes of the rollout evidence's spans beside the GenAI conventions' (gen_ai.*,
// error.type): the rollout's identity on every span, its record on the root span, and what Gym
// says of its sandboxes and calls.
const (
	SpanRunID          = "nemo.run.id"
	SpanRolloutID      = "nemo.gym.rollout.id"
	SpanTaskID         = "nemo.gym.task.id"
	SpanTaskIndex      = "nemo.gym.task.index"
	SpanRolloutIndex   = "nemo.gym.rollout.index"
	SpanReward         = "nemo.gym.rollout.reward"
	SpanModelCallID    = "nemo.gym.model_call.id"
	SpanSandboxID      = "nemo.gym.sandbox.id"
	SpanSandboxExit    = "nemo.gym.sandbox.exit_code"
	SpanSandboxWallS   = "nemo.gym.sandbox.wall_time_s"
	SpanSandboxCPUS    = "nemo.gym.sandbox.cpu_time_s"
	SpanSandboxPeakMiB = "nemo.gym.sandbox.peak_memory_mib"
	SpanTimesDerived   = "nemo.gym.evidence.times_derived"
)
