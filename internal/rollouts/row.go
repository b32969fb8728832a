// Package rollouts reads the rows of the files a NeMo Gym rollout collection writes (the main
// output STEM.jsonl, the failures sidecar STEM_failures.jsonl and the health report
// rollout_verdicts.jsonl) in one streaming pass: the few keys the rollout instruments need are
// extracted, every other value is skipped without being decoded, copied or held, so a row of
// hundreds of MiB costs the same bounded buffer as a row of 2 KiB.
package rollouts

import (
	"bytes"
	"strings"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Kind is which of a run's files a row comes from: it decides the keys that are mapped.
type Kind uint8

const (
	// Main is STEM.jsonl: one scored attempt per row.
	Main Kind = iota
	// Failures is STEM_failures.jsonl: one failed attempt per row.
	Failures
	// Verdicts is rollout_verdicts.jsonl: one health-evaluated rollout per row.
	Verdicts
)

func (k Kind) String() string {
	switch k {
	case Main:
		return "main"
	case Failures:
		return "failures"
	case Verdicts:
		return "verdicts"
	}
	return "invalid"
}

// Limits of what a row may hold in its mapped values: far above what Gym writes, and what
// keeps a row's memory bounded whatever the file says.
const (
	// MaxValueBytes is how much of a mapped string is kept (the rest is validated and
	// skipped). Every rule that reads these strings caps them at 256 bytes or less.
	MaxValueBytes = 512
	// MaxFindings is the most distinct check ids read from one verdict row's findings.
	MaxFindings = 1024
	// maxNumberBytes bounds a number token of a mapped key.
	maxNumberBytes = 128
)

// Row is what a row says, for the mapping. Every []byte is valid UTF-8 and points into the
// RowDecoder's buffers: valid until the next call of Next.
type Row struct {
	// Main and failures rows.
	EnvironmentServer []byte // _ng_environment_server
	AgentName         []byte // agent_ref.name
	RunID             []byte // _ng_run_id
	// The rollout's identity in its run: _ng_task_index, _ng_rollout_index (integers >= 0).
	TaskIndex, RolloutIndex       int64
	HasTaskIndex, HasRolloutIndex bool

	// Main rows.
	Reward       float64 // NaN and +/-Inf possible
	HasReward    bool
	Masked       bool // mask_sample
	Turns        int64
	ToolCalls    int64
	HasTurns     bool // ng_perf.num_turns
	HasToolCalls bool // ng_perf.num_tool_calls

	// Main rows: the model's response (response.*) and the rollout's latency.
	HasResponse bool   // response is an object
	Model       []byte // response.model, nil unless a non-empty string
	Status      []byte // response.status, nil unless a string
	Incomplete  []byte // response.incomplete_details.reason, nil unless a string
	HasOutput   bool   // response.output is an array
	// FunctionCalls counts the response.output items whose type is function_call.
	FunctionCalls int64
	// usage: response.usage's token counts by spelling (Responses, Chat) and type, and
	// which are given: Tokens chooses.
	usage      [numSpellings][NumTokenTypes]int64
	usageHas   [numSpellings][NumTokenTypes]bool
	Latency    float64 // ng_perf.total_latency_ms
	HasLatency bool
	// Evidence is the row's rollout evidence (ng_trajectory, ng_agent_observations): set for
	// every main row (its Len events, the row's coverage first), nil for the other files'.
	Evidence *Evidence

	// Failures rows.
	FailureClass []byte // _ng_failure_class
	FailureType  []byte // _ng_failure_type
	// kinds are failure_kind, _ng_failure_kind, _ng_failure_record.failure.failure_kind:
	// FailureKind returns the first present.
	kinds [3][]byte

	// Verdicts rows.
	Verdict  []byte   // healthy, unhealthy or unobserved
	Findings [][]byte // distinct raw check ids of findings, in order of first appearance
}

// FailureKind is the row's failure kind: failure_kind, else _ng_failure_kind, else
// _ng_failure_record.failure.failure_kind (an empty string counts as absent).
func (r *Row) FailureKind() []byte {
	for _, k := range r.kinds {
		if len(k) > 0 {
			return k
		}
	}
	return nil
}

// DispatchName is _ng_environment_server, else agent_ref.name, else "unknown".
func (r *Row) DispatchName() []byte {
	if len(r.EnvironmentServer) > 0 {
		return r.EnvironmentServer
	}
	if len(r.AgentName) > 0 {
		return r.AgentName
	}
	return unknown
}

var unknown = []byte("unknown") // the dispatch name and the finish reason of a row that names none

func (r *Row) reset() {
	findings := r.Findings[:0]
	*r = Row{Findings: findings}
}

// keeps tells whether a check id is added to Findings: the row has room and has it not yet.
// One past MaxFindings is dropped without a count (the row is good; nothing counts it).
func (r *Row) keeps(id []byte) bool {
	if len(r.Findings) >= MaxFindings {
		return false
	}
	for _, f := range r.Findings {
		if bytes.Equal(f, id) {
			return false
		}
	}
	return true
}

// clear forgets what the members of an object of ctx set, before the object is read again.
func (r *Row) clear(ctx context) {
	switch ctx {
	case ctxAgentRef:
		r.AgentName = nil
	case ctxPerf:
		r.Turns, r.ToolCalls, r.HasTurns, r.HasToolCalls = 0, 0, false, false
	case ctxFailureRecord, ctxFailure:
		r.kinds[2] = nil
	case ctxResponse:
		r.HasResponse, r.Model, r.Status, r.Incomplete, r.HasOutput, r.FunctionCalls = false, nil, nil, nil, false, 0
		r.usage, r.usageHas = [numSpellings][NumTokenTypes]int64{}, [numSpellings][NumTokenTypes]bool{}
	case ctxIncomplete:
		r.Incomplete = nil
	case ctxUsage:
		r.usage, r.usageHas = [numSpellings][NumTokenTypes]int64{}, [numSpellings][NumTokenTypes]bool{}
	}
}

// Token types of gym.rollout.tokens (gen_ai.token.type), the events' own.
const (
	TokenInput       = events.ResponseTokenInput
	TokenOutput      = events.ResponseTokenOutput
	TokenReasoning   = events.ResponseTokenReasoning
	TokenCachedInput = events.ResponseTokenCachedInput
	NumTokenTypes    = events.NumResponseTokenTypes
)

// Spellings of response.usage: the Responses API's, and Chat Completions'.
const (
	spellingResponses = iota
	spellingChat
	numSpellings
)

// Tokens returns the count of token type t the usage gives: in the Responses spelling when
// it gives the type, else in the Chat spelling.
func (r *Row) Tokens(t int) (int64, bool) {
	for sp := range numSpellings {
		if r.usageHas[sp][t] {
			return r.usage[sp][t], true
		}
	}
	return 0, false
}

// FinishReason is response.incomplete_details.reason when a non-empty string, else
// response.status when a non-empty string, else unknown.
func (r *Row) FinishReason() []byte {
	if len(r.Incomplete) > 0 {
		return r.Incomplete
	}
	if len(r.Status) > 0 {
		return r.Status
	}
	return unknown
}

// Verdict values of the health report: the schema's nemo.gym.health.verdict.
var verdicts = func() (out [][]byte) {
	for _, v := range schema.Attr(schema.AttrNemoGymHealthVerdict).Values {
		out = append(out, []byte(v))
	}
	return out
}()

var verdictNames = strings.Join(schema.Attr(schema.AttrNemoGymHealthVerdict).Values, ", ")
