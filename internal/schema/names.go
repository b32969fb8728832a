package schema

// ScoredOutcome is the outcome of a rollout that was scored: nemo.gym.rollout.outcome's first
// value (metadata.yaml), under which failure fields are not attributes and rewards count. Every
// reader of outcomes (the aggregator, the bounding rules, the live page, gymrun) takes it here.
var ScoredOutcome = Attr(AttrNemoGymRolloutOutcome).Values[0]

// Absent is how a report names an optional attribute a point or row does not carry (no failure
// kind, no model): it matches no attribute's rule, so it never stands for a value. gymrun and
// the live page show it alike.
const Absent = "(none)"
