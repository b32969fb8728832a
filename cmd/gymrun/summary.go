package main

// The summary: an events.Sink that accumulates the events of a run's rows (mapped by
// internal/rollouts, as the receiver maps them) by benchmark, with the attribute rules of the
// aggregator (internal/normalize), then the statistics of each benchmark.

import (
	"math"
	"slices"
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
	// tasks are the finite rewards by task index (the unit of the intervals, and compare's
	// pairing); untasked counts those whose row gives no task index.
	tasks                   map[int64]taskSum
	untasked                int64
	responses, truncated    int64
	tokens                  map[string]map[string]int64 // type, model
	toolCallRows, toolCalls int64
	durations               []float64 // ms, one per row that gives it
	// What overflow.go needs to say what did not fit and where: the sums saturated (token
	// type and model; tool calls) and the file from which the first did, the largest reward
	// in magnitude and its file.
	satTokens            map[[2]string]bool
	satToolCalls         bool
	satFile, largestFile string
	largest              float64
	ev                   evidence // summary_evidence.go
}

func newBench() *bench {
	return &bench{failedByClass: map[string]int64{}, failedByKind: map[string]int64{}, failedByGroup: map[string]int64{}, tokens: map[string]map[string]int64{}, satTokens: map[[2]string]bool{}, tasks: map[int64]taskSum{}, binary: true, ev: newEvidence()}
}

// Summary is the sink of every file read: benchmarks by dispatch name.
type Summary struct {
	reg     *normalize.Registry // nil: Gym's registry, the receiver's default
	benches map[string]*bench
	// cur is the benchmark of the row being applied: a row's rollout.completed comes first
	// (Row.Events), its size and duration events, which name no dispatch, after it.
	cur *bench
	// file is the file being read: what overflowed is said with the file it came from.
	file string
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
		b.reward(ev, s.file)
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
				var sat bool
				if m[model], sat = addSat(m[model], ev.ResponseTokens[t]); sat {
					b.saturated(s.file)
					b.satTokens[[2]string{types[t], model}] = true
				}
			}
		}
		if ev.HasOutput {
			b.toolCallRows++
			var sat bool
			if b.toolCalls, sat = addSat(b.toolCalls, ev.ToolCalls); sat {
				b.saturated(s.file)
				b.satToolCalls = true
			}
		}
	case events.EventRolloutDuration:
		if s.cur != nil {
			s.cur.durations = append(s.cur.durations, ev.DurationMS)
		}
	case events.EventEvidence:
		s.evidence(ev.Evidence)
	}
}

// reward counts a scored row's reward: masked rows and rows without a finite number apart,
// the others into the mean and their task's sum.
func (b *bench) reward(ev *events.Event, file string) {
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
		if math.Abs(r) > math.Abs(b.largest) {
			b.largest, b.largestFile = r, file
		}
		b.rewards.add(r)
		b.hist.add(r)
		b.rewardSum += r
		if ev.HasTaskIndex {
			ts := b.tasks[ev.TaskIndex]
			b.tasks[ev.TaskIndex] = taskSum{n: ts.n + 1, sum: ts.sum + r}
		} else {
			b.untasked++
		}
		if r == 1 {
			b.passes++
		} else if r != 0 {
			b.binary = false
		}
	}
}

// saturated notes the file from which a sum first saturated.
func (b *bench) saturated(file string) {
	if b.satFile == "" {
		b.satFile = file
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

// taskSums are the benchmark's tasks by index, nil when a reward has no task index (its task
// is unknown, so no interval is by task).
func (b *bench) taskSums() []taskSum {
	if b == nil || b.untasked > 0 {
		return nil
	}
	keys := b.taskKeys()
	out := make([]taskSum, len(keys))
	for i, k := range keys {
		out[i] = b.tasks[k]
	}
	return out
}

// taskKeys are the benchmark's task indices in order: sums over tasks are the same bytes every run.
func (b *bench) taskKeys() []int64 {
	keys := make([]int64, 0, len(b.tasks))
	for k := range b.tasks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
