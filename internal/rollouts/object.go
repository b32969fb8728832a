package rollouts

import (
	"fmt"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// Objects and arrays: the members of a row are read by the context of the object that holds
// them; a mapped key is decoded, any other value skipped.

// Reasons a row is rejected: a fixed set, for the receiver's self-telemetry (those that the
// events decoder shares are defined in ingest).
const (
	ReasonTooLong      = ingest.ReasonTooLong      // over max_line_bytes
	ReasonInvalidUTF8  = ingest.ReasonInvalidUTF8  // inside a mapped value
	ReasonInvalidJSON  = ingest.ReasonInvalidJSON  // not JSON where it had to be read
	ReasonNotObject    = "not_object"              // the row is not a JSON object
	ReasonWrongType    = ingest.ReasonWrongType    // a mapped key holds a value of another type
	ReasonOutOfRange   = ingest.ReasonOutOfRange   // a count below 0 or beyond int64
	ReasonMissingField = ingest.ReasonMissingField // a verdict row without verdict
	ReasonInvalidValue = ingest.ReasonInvalidValue // a verdict outside healthy/unhealthy/unobserved
)

// DefaultBufferBytes is the read buffer of NewRowDecoder(0): the most a RowDecoder holds of a row.
const DefaultBufferBytes = 256 << 10

// Slots of the mapped strings.
const (
	slotEnvironmentServer = iota
	slotAgentName
	slotRunID
	slotFailureClass
	slotFailureType
	slotKind0
	slotKind1
	slotKind2
	slotVerdict
	slotCheck
	slotCheckID
	slotModel
	slotStatus
	slotIncomplete
	slotItemType
	numSlots
)
const maxKeyBytes = 64

// Contexts: which object the members being read belong to.
type context uint8

const (
	ctxMain context = iota
	ctxFailures
	ctxVerdicts
	ctxAgentRef
	ctxPerf
	ctxFailureRecord
	ctxFailure
	ctxFinding
	// Main rows' response (response.*), read leniently: a value of another type than the
	// mapping wants records nothing instead of rejecting the row.
	ctxResponse
	ctxIncomplete
	ctxUsage
	ctxInputDetails      // usage.input_tokens_details
	ctxOutputDetails     // usage.output_tokens_details
	ctxPromptDetails     // usage.prompt_tokens_details
	ctxCompletionDetails // usage.completion_tokens_details
	ctxOutputItem
	// Main rows' rollout evidence (evidence_decode.go), read leniently.
	ctxEvTrajectory   // ng_trajectory
	ctxEvObservations // ng_agent_observations
	ctxEvItem         // an item of their arrays
	ctxEvMeta         // a model call's response_metadata
	ctxEvTokens       // a model call's token_stats
	ctxEvRef          // a model-call reference (spans only)
	ctxEvTurn         // a turn of ng_trajectory (spans only)
)

func ctxOf(k Kind) context {
	switch k {
	case Failures:
		return ctxFailures
	case Verdicts:
		return ctxVerdicts
	}
	return ctxMain
}

// object reads an object's members after its '{'.
func (r *RowDecoder) object(ctx context, row *Row) bool {
	c, empty, ok := r.open('}')
	for ok && !empty {
		if c != '"' {
			r.failf(ReasonInvalidJSON, "want a key, got %q", c)
			return false
		}
		r.pos++
		if !r.readKey() {
			return false
		}
		if c = r.at(); c <= ' ' {
			if c, ok = r.ws(); !ok {
				return false
			}
		}
		if c != ':' {
			r.failf(ReasonInvalidJSON, "want ':' after key %q, got %q", r.key, c)
			return false
		}
		r.pos++
		if r.at() <= ' ' {
			if _, ok = r.ws(); !ok {
				return false
			}
		}
		if !r.member(ctx, row) {
			return false
		}
		c, empty, ok = r.next('}', "an object")
	}
	return ok
}

// open reads up to the first byte of a container's first item, after its opening bracket:
// empty when it is the closing bracket (read).
func (r *RowDecoder) open(close byte) (c byte, empty, ok bool) {
	if c, ok = r.ws(); ok && c == close {
		r.pos++
		return c, true, true
	}
	return c, false, ok
}

// next reads what follows an item of a container (in names it, in messages): a ',' and up
// to the next item's first byte, or the closing bracket (empty: the container is over).
func (r *RowDecoder) next(close byte, in string) (c byte, empty, ok bool) {
	if c = r.at(); c <= ' ' {
		if c, ok = r.ws(); !ok {
			return c, false, false
		}
	}
	switch c {
	case ',':
		r.pos++
		if c = r.at(); c <= ' ' {
			c, ok = r.ws()
			return c, false, ok
		}
		return c, false, true
	case close:
		r.pos++
		return c, true, true
	}
	r.failf(ReasonInvalidJSON, "want ',' or '%c' in %s, got %q", close, in, c)
	return c, false, false
}

// member reads the value of the member whose key is r.key: a mapped key is decoded, any other
// value skipped.
func (r *RowDecoder) member(ctx context, row *Row) bool {
	if r.keyLong {
		return r.skipValue()
	}
	k := r.key
	switch ctx {
	case ctxMain:
		switch string(k) {
		case "reward":
			return r.number("reward", &row.Reward, &row.HasReward)
		case "mask_sample":
			return r.boolean("mask_sample", &row.Masked)
		case "ng_perf":
			return r.nested("ng_perf", ctxPerf, row)
		case "response":
			row.clear(ctxResponse)
			if r.buf[r.pos] != '{' {
				return r.skipValue() // not an object: no response
			}
			r.pos++
			row.HasResponse = true
			return r.object(ctxResponse, row)
		case "ng_trajectory":
			return r.evidenceObject("ng_trajectory", fromTrajectory, row)
		case "ng_agent_observations":
			return r.evidenceObject("ng_agent_observations", fromObservations, row)
		case "_ng_rollout_id":
			if r.ev.spans {
				e := &r.ev
				e.init()
				return r.spanString(func(v []byte) { e.row.ngRolloutID = e.keep(v) })
			}
		}
		return r.identity(k, row)
	case ctxFailures:
		switch string(k) {
		case "_ng_failure_class":
			return r.str("_ng_failure_class", slotFailureClass, &row.FailureClass)
		case "_ng_failure_type":
			return r.str("_ng_failure_type", slotFailureType, &row.FailureType)
		case "failure_kind":
			return r.str("failure_kind", slotKind0, &row.kinds[0])
		case "_ng_failure_kind":
			return r.str("_ng_failure_kind", slotKind1, &row.kinds[1])
		case "_ng_failure_record":
			return r.nested("_ng_failure_record", ctxFailureRecord, row)
		}
		return r.identity(k, row)
	case ctxVerdicts:
		switch string(k) {
		case "verdict":
			return r.verdict(row)
		case "findings":
			return r.findings(row)
		case "_ng_run_id":
			return r.str("_ng_run_id", slotRunID, &row.RunID)
		}
	case ctxAgentRef:
		if string(k) == "name" {
			return r.str("agent_ref.name", slotAgentName, &row.AgentName)
		}
	case ctxPerf:
		switch string(k) {
		case "num_turns":
			return r.count("ng_perf.num_turns", &row.Turns, &row.HasTurns)
		case "num_tool_calls":
			return r.count("ng_perf.num_tool_calls", &row.ToolCalls, &row.HasToolCalls)
		case "total_latency_ms":
			return r.latency(row)
		}
	case ctxFailureRecord:
		if string(k) == "failure" {
			return r.nested("_ng_failure_record.failure", ctxFailure, row)
		}
	case ctxFailure:
		if string(k) == "failure_kind" {
			return r.str("_ng_failure_record.failure.failure_kind", slotKind2, &row.kinds[2])
		}
	case ctxFinding:
		switch string(k) {
		case "check":
			return r.str("findings[].check", slotCheck, &r.check)
		case "check_id":
			return r.str("findings[].check_id", slotCheckID, &r.checkID)
		}
	// The response's contexts (response.go): read leniently.
	case ctxResponse:
		switch string(k) {
		case "model":
			if !r.lenientString("response.model", slotModel, &row.Model) {
				return false
			}
			if len(row.Model) == 0 {
				row.Model = nil // an empty model names none
			}
			return true
		case "status":
			return r.lenientString("response.status", slotStatus, &row.Status)
		case "incomplete_details":
			return r.lenientObject(ctxIncomplete, row)
		case "usage":
			return r.lenientObject(ctxUsage, row)
		case "output":
			return r.outputItems(row)
		}
	case ctxIncomplete:
		if string(k) == "reason" {
			return r.lenientString("response.incomplete_details.reason", slotIncomplete, &row.Incomplete)
		}
	case ctxUsage:
		switch string(k) {
		case "input_tokens":
			return r.tokens("response.usage.input_tokens", row, spellingResponses, TokenInput)
		case "output_tokens":
			return r.tokens("response.usage.output_tokens", row, spellingResponses, TokenOutput)
		case "prompt_tokens":
			return r.tokens("response.usage.prompt_tokens", row, spellingChat, TokenInput)
		case "completion_tokens":
			return r.tokens("response.usage.completion_tokens", row, spellingChat, TokenOutput)
		case "input_tokens_details":
			return r.lenientObject(ctxInputDetails, row)
		case "output_tokens_details":
			return r.lenientObject(ctxOutputDetails, row)
		case "prompt_tokens_details":
			return r.lenientObject(ctxPromptDetails, row)
		case "completion_tokens_details":
			return r.lenientObject(ctxCompletionDetails, row)
		}
	case ctxInputDetails, ctxOutputDetails, ctxPromptDetails, ctxCompletionDetails:
		if d := &details[ctx-ctxInputDetails]; string(k) == d.key {
			return r.tokens(d.name, row, d.spelling, d.token)
		}
	case ctxEvTrajectory, ctxEvObservations, ctxEvItem, ctxEvMeta, ctxEvTokens, ctxEvRef, ctxEvTurn:
		return r.evMember(ctx, row)
	case ctxOutputItem:
		if string(k) == "type" {
			return r.lenientString("response.output[].type", slotItemType, &r.itemType)
		}
	}
	return r.skipValue()
}

// details are the one count each usage.*_details object gives, by context from
// ctxInputDetails on (index 0: ctxInputDetails itself).
var details = [...]struct {
	key, name       string
	spelling, token int
}{
	0:                                      {"cached_tokens", "response.usage.*_details.cached_tokens", spellingResponses, TokenCachedInput},
	ctxOutputDetails - ctxInputDetails:     {"reasoning_tokens", "response.usage.*_details.reasoning_tokens", spellingResponses, TokenReasoning},
	ctxPromptDetails - ctxInputDetails:     {"cached_tokens", "response.usage.*_details.cached_tokens", spellingChat, TokenCachedInput},
	ctxCompletionDetails - ctxInputDetails: {"reasoning_tokens", "response.usage.*_details.reasoning_tokens", spellingChat, TokenReasoning},
}

// identity reads the keys main and failures rows share.
func (r *RowDecoder) identity(k []byte, row *Row) bool {
	switch string(k) {
	case "_ng_environment_server":
		return r.str("_ng_environment_server", slotEnvironmentServer, &row.EnvironmentServer)
	case "agent_ref":
		return r.nested("agent_ref", ctxAgentRef, row)
	case "_ng_run_id":
		return r.str("_ng_run_id", slotRunID, &row.RunID)
	case "_ng_task_index":
		return r.index(&row.TaskIndex, &row.HasTaskIndex)
	case "_ng_rollout_index":
		return r.index(&row.RolloutIndex, &row.HasRolloutIndex)
	}
	return r.skipValue()
}

// wrongType fails the row: the mapped key holds a value of another type.
func (r *RowDecoder) wrongType(name, want string, c byte) bool {
	r.failf(ReasonWrongType, "key %q: want %s, got %s", name, want, kindOf(c))
	return false
}
func kindOf(c byte) string {
	switch k := gymjson.KindOf(c); k {
	case gymjson.None:
		return fmt.Sprintf("%q", c)
	case gymjson.True, gymjson.False:
		return "a bool"
	default:
		return k.String()
	}
}

// nested reads an object (or null) whose members are of ctx. What an earlier value of the same
// key set is cleared first: a duplicate key's last value wins, objects included.
func (r *RowDecoder) nested(name string, ctx context, row *Row) bool {
	row.clear(ctx)
	switch c := r.buf[r.pos]; c {
	case '{':
		r.pos++
		return r.object(ctx, row)
	case 'n':
		return r.null(name, "an object")
	default:
		return r.wrongType(name, "an object", c)
	}
}

// elements reads the elements of an array after its '[' (name says which, in messages): elem
// reads each one, given its first byte.
func (r *RowDecoder) elements(name string, elem func(c byte) bool) bool {
	c, empty, ok := r.open(']')
	for ok && !empty {
		if !elem(c) {
			return false
		}
		c, empty, ok = r.next(']', name)
	}
	return ok
}
