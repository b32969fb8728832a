package rollouts

import (
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The resource of a run's rows.
const (
	ServiceName = "nemo-gym/rollout_collection"
	SourceName  = "rollout_files"
	runIDKey    = "nemo.run.id"
	serviceKey  = "service.name"
)

// Resource returns the attributes of a run's resource: service.name, gym.source, log.file.path
// (the main output's path) and nemo.run.id when runID is not empty, each by the resource rule
// of every input (normalize.FreeString), and how many of the values it cut.
func Resource(mainPath, runID string) (attrs []events.ResourceAttr, cut int) {
	value := func(v string) []byte {
		b := normalize.FreeString([]byte(v))
		if len(b) != len(v) {
			cut++
		}
		return b
	}
	attrs = []events.ResourceAttr{
		{Key: []byte(serviceKey), Kind: events.ValueString, Str: []byte(ServiceName)},
		{Key: []byte(schema.ResourceSourceKey), Kind: events.ValueString, Str: []byte(SourceName)},
		{Key: []byte(schema.ResourceFilePathKey), Kind: events.ValueString, Str: value(mainPath)},
	}
	if runID != "" {
		attrs = append(attrs, events.ResourceAttr{Key: []byte(runIDKey), Kind: events.ValueString, Str: value(runID)})
	}
	return attrs, cut
}

// The outcomes of the schema's nemo.gym.rollout.outcome (scored, failed, omitted) the rows give.
var (
	outcomes = schema.Attr(schema.AttrNemoGymRolloutOutcome).Values
	scored   = []byte(outcomes[0])
	failed   = []byte(outcomes[1])
)

// MaxRowEvents is the most events a row maps to.
const MaxRowEvents = 4

// Events maps a row of a file of kind to the events the aggregator applies (the same events
// the Gym event stream's rollout.completed, rollout.size, rollout.duration and rollout.health
// lines decode to, and the rollout response only run files give), and returns how many of evs
// it filled. Normalisation is the aggregator's: the events carry the raw values.
func (r *Row) Events(kind Kind, evs *[MaxRowEvents]events.Event) int {
	switch kind {
	case Main:
		evs[0] = events.Event{
			Type: events.EventRolloutCompleted, Outcome: scored, DispatchName: r.DispatchName(),
			Reward: r.Reward, HasReward: r.HasReward, Masked: r.Masked,
			TaskIndex: r.TaskIndex, RolloutIndex: r.RolloutIndex, HasTaskIndex: r.HasTaskIndex, HasRolloutIndex: r.HasRolloutIndex,
		}
		n := 1
		if r.HasTurns || r.HasToolCalls {
			evs[n] = events.Event{Type: events.EventRolloutSize, Turns: r.Turns, ToolCalls: r.ToolCalls}
			if r.HasTurns {
				evs[n].SizeFields |= events.HasTurns
			}
			if r.HasToolCalls {
				evs[n].SizeFields |= events.HasToolCalls
			}
			n++
		}
		if r.HasResponse {
			ev := &evs[n]
			*ev = events.Event{
				Type: events.EventRolloutResponse, DispatchName: r.DispatchName(), Model: r.Model,
				FinishReason: r.FinishReason(), HasOutput: r.HasOutput, ToolCalls: r.FunctionCalls,
			}
			for t := range NumTokenTypes {
				ev.ResponseTokens[t], ev.HasResponseTokens[t] = r.Tokens(t)
			}
			n++
		}
		if r.HasLatency {
			evs[n] = events.Event{Type: events.EventRolloutDuration, DurationMS: r.Latency}
			n++
		}
		return n
	case Failures:
		evs[0] = events.Event{
			Type: events.EventRolloutCompleted, Outcome: failed, DispatchName: r.DispatchName(),
			FailureClass: r.FailureClass, FailureKind: r.FailureKind(), FailureType: r.FailureType,
			TaskIndex: r.TaskIndex, RolloutIndex: r.RolloutIndex, HasTaskIndex: r.HasTaskIndex, HasRolloutIndex: r.HasRolloutIndex,
		}
		return 1
	case Verdicts:
		// The health report reads scored rollouts only.
		evs[0] = events.Event{Type: events.EventRolloutHealth, Verdict: r.Verdict, Outcome: scored, Flagged: r.Findings}
		return 1
	}
	return 0
}
