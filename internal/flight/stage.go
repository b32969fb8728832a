package flight

import "strings"

// Stage is what a rollout was doing when its last span arrived: the kind of that span.
type Stage uint8

// The stages, one per kind of Gym's child spans; other is a span with a rollout id and a name
// Gym's code does not give (a custom span of an environment).
const (
	StageOther Stage = iota
	StageModelCall
	StageVerify
	StageAgent
	StageSandbox
	StageHTTP
	stageCount
)

var stageNames = [stageCount]string{"other", "model_call", "verify", "agent", "sandbox", "http"}

// String is the stage's value of the nemo.gym.rollout.stage attribute.
func (s Stage) String() string {
	if s >= stageCount {
		return stageNames[StageOther]
	}
	return stageNames[s]
}

// RolloutSpan is the span that ends when the rollout ends.
const RolloutSpan = "gym.rollout"

// classify returns the stage of a span name, and whether it is the rollout's own span.
func classify(name string) (stage Stage, rollout bool) {
	switch name {
	case "gym.model.chat_completions", "gym.model.responses", "gym.model.messages":
		return StageModelCall, false
	case "gym.verify":
		return StageVerify, false
	case "gym.agent.responses":
		return StageAgent, false
	case "gym.sandbox.start", "gym.sandbox.exec":
		return StageSandbox, false
	case RolloutSpan:
		return StageOther, true
	}
	if strings.HasPrefix(name, "HTTP ") { // the HTTP client conventions: "HTTP <METHOD>"
		return StageHTTP, false
	}
	return StageOther, false
}
