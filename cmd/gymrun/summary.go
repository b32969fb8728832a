package main

// The summary: an events.Sink that accumulates the events of a run's rows (mapped by
// internal/rollouts, as the receiver maps them) by benchmark, with the attribute rules of the
// aggregator (internal/normalize), then the statistics of each benchmark.

import (
	"math"
	"sort"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// absent names an attribute a row does not give (schema.Absent).
const absent = schema.Absent

// truncated are the finish reasons of a response cut at its token limit: the schema's set,
// which the alert rules use too.
var truncated = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range schema.TruncatedFinishReasons {
		m[r] = true
	}
	return m
}()

// bench accumulates one benchmark (dispatch name).
type bench struct {
	attempts, scored, failed, masked int64
	failedByClass, failedByKind      map[string]int64
	failedByGroup                    map[string]int64 // failureGroup's
	// Rewards of scored, unmasked rows: finite numbers (their moments and histogram), and
	// the rows counted apart.
	rewards                             moments
	hist                                histogram
	rewardInf, rewardNaN, rewardMissing int64
	rewardSum                           float64
	binary                              bool // every finite reward is 0 or 1
	passes                              int64
	// keyed are the finite rewards by rollout (compare's pairing, kept when the summary's
	// keyed is set); unkeyed counts those whose row lacks a task or rollout index.
	keyed                   []keyedReward
	unkeyed                 int64
	responses, truncated    int64
	tokens                  map[string]map[string]int64 // type, model
	toolCallRows, toolCalls int64
	durations               []float64 // ms, one per row that gives it
}

func newBench() *bench {
	return &bench{failedByClass: map[string]int64{}, failedByKind: map[string]int64{}, failedByGroup: map[string]int64{}, tokens: map[string]map[string]int64{}, binary: true}
}

// Summary is the sink of every file read: benchmarks by dispatch name.
type Summary struct {
	reg     *normalize.Registry // nil: Gym's registry, the receiver's default
	benches map[string]*bench
	// cur is the benchmark of the row being applied: a row's rollout.completed comes first
	// (Row.Events), its size and duration events, which name no dispatch, after it.
	cur *bench
	// keyed: keep each finite reward with its rollout's key, for compare's pairing.
	keyed bool
}

// NewSummary returns an empty summary.
func NewSummary() *Summary { return &Summary{benches: map[string]*bench{}} }

// SetResource: the summary is by benchmark, whatever the run.
func (s *Summary) SetResource([]events.ResourceAttr) error { return nil }

// DefaultResource: see SetResource.
func (s *Summary) DefaultResource() {}

func (s *Summary) bench(dispatch []byte) *bench {
	name := s.attr(schema.AttrNemoGymRolloutDispatchName, dispatch)
	b := s.benches[name]
	if b == nil {
		b = newBench()
		s.benches[name] = b
	}
	return b
}

// attr is v normalised by the attribute's rule, absent when the rule leaves it out.
func (s *Summary) attr(id schema.AttrID, v []byte) string {
	out, _ := s.reg.StringValidUTF8(id, v)
	if len(out) == 0 {
		return absent
	}
	return string(out)
}

func name(v []byte) string {
	if len(v) == 0 {
		return absent
	}
	return string(v)
}

// Apply accumulates one event of a row.
func (s *Summary) Apply(ev *events.Event) {
	switch ev.Type {
	case events.EventRolloutCompleted:
		b := s.bench(ev.DispatchName)
		s.cur = b
		b.attempts++
		if string(ev.Outcome) != schema.ScoredOutcome {
			b.failed++
			class, kind := name(normalize.FailureClass(ev.FailureClass)), name(s.reg.FailureKind(ev.FailureKind))
			b.failedByClass[class]++
			b.failedByKind[kind]++
			b.failedByGroup[failureGroup(class, kind)]++
			return
		}
		b.scored++
		b.reward(ev, s.keyed)
	case events.EventRolloutResponse:
		b := s.bench(ev.DispatchName)
		b.responses++
		if truncated[s.attr(schema.AttrNemoGymRolloutFinishReason, ev.FinishReason)] {
			b.truncated++
		}
		model := s.attr(schema.AttrGenAiResponseModel, ev.Model)
		types := schema.Attr(schema.AttrGenAiTokenType).Values
		for t := range events.NumResponseTokenTypes {
			if ev.HasResponseTokens[t] {
				m := b.tokens[types[t]]
				if m == nil {
					m = map[string]int64{}
					b.tokens[types[t]] = m
				}
				m[model] += ev.ResponseTokens[t]
			}
		}
		if ev.HasOutput {
			b.toolCallRows++
			b.toolCalls += ev.ToolCalls
		}
	case events.EventRolloutDuration:
		if s.cur != nil {
			s.cur.durations = append(s.cur.durations, ev.DurationMS)
		}
	}
}

// reward counts a scored row's reward: masked rows and rows without a finite number apart,
// the others into the mean (and by key when keyed).
func (b *bench) reward(ev *events.Event, keyed bool) {
	switch _, scored := normalize.RewardRange(ev.Reward); {
	case ev.Masked:
		b.masked++
	case !ev.HasReward:
		b.rewardMissing++
	case !scored:
		b.rewardNaN++
	case math.IsInf(ev.Reward, 0):
		b.rewardInf++
	default:
		r := ev.Reward
		b.rewards.add(r)
		b.hist.add(r)
		b.rewardSum += r
		switch {
		case !keyed:
		case ev.HasTaskIndex && ev.HasRolloutIndex:
			b.keyed = append(b.keyed, keyedReward{task: ev.TaskIndex, rollout: ev.RolloutIndex, reward: r})
		default:
			b.unkeyed++
		}
		if r == 1 {
			b.passes++
		} else if r != 0 {
			b.binary = false
		}
	}
}

// percentile is the nearest-rank p-th percentile of sorted (0 < p <= 100).
func percentile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// sortedNames returns the keys of m in order.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
