package rollouts

import (
	"math"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// Reading a main-output row's ng_trajectory and ng_agent_observations (evidence.go says what
// is kept). Their values are read leniently: a value of another type than Gym writes, a
// number out of its range, an item that is not an object, is a problem of the row's evidence,
// counted and named in a warning, and the item or field is left out; the row and everything
// else it says count. Only what is not JSON rejects the row, as anywhere in it.

// evidenceArrays: the arrays of the two objects that hold items, by context and key.
var evidenceArrays = map[string]struct {
	kind      events.EvidenceKind
	record    bool
	traj, obs string // its name in messages, in ng_trajectory and in ng_agent_observations
}{
	"model_calls": {kind: events.EvidenceModelCall, traj: "ng_trajectory.model_calls"},
	"tool_calls":  {kind: events.EvidenceToolCall, traj: "ng_trajectory.tool_calls"},
	"invocations": {kind: events.EvidenceInvocation, traj: "ng_trajectory.invocations"},
	"gaps":        {kind: events.EvidenceGap, traj: "ng_trajectory.gaps", obs: "ng_agent_observations.gaps"},
	"records":     {record: true, obs: "ng_agent_observations.records"},
}

// evidenceObject reads ng_trajectory (from fromTrajectory) or ng_agent_observations.
func (r *RowDecoder) evidenceObject(name string, from uint8, row *Row) bool {
	e := &r.ev
	e.init()
	switch c := r.buf[r.pos]; c {
	case '{':
		r.pos++
		if from == fromTrajectory {
			e.Trajectory = true
			return r.object(ctxEvTrajectory, row)
		}
		return r.object(ctxEvObservations, row)
	case 'n':
		return r.null(name, "an object")
	default:
		e.problem(problemNotObject, "%s is %s, not an object", name, kindOf(c))
		return r.skipValue()
	}
}

// evMember reads a member of the evidence's contexts.
func (r *RowDecoder) evMember(ctx context, row *Row) bool {
	e := &r.ev
	c := &e.cur
	k := r.key
	switch ctx {
	case ctxEvTrajectory, ctxEvObservations:
		a, ok := evidenceArrays[string(k)]
		from, name := fromTrajectory, a.traj
		if ctx == ctxEvObservations {
			from, name = fromObservations, a.obs
		}
		if !ok || name == "" {
			if e.spans && ctx == ctxEvTrajectory {
				return r.evTrajectorySpans(k, row)
			}
			return r.skipValue() // turns: nothing counted from them
		}
		return r.evItems(name, a.kind, a.record, from, row)
	case ctxEvItem:
		switch string(k) {
		case "kind":
			return r.evString("kind", func(v []byte) { c.recKind = e.keep(v) })
		case "model_call_id":
			return r.evIDs("model_call_id", idModelCall, &c.mcID, &c.sp.mcID)
		case "invocation_id":
			return r.evIDs("invocation_id", idInvocation, &c.inv, &c.sp.inv)
		case "tool_call_id":
			return r.evIDs("tool_call_id", idToolCall, &c.tool, &c.sp.tool)
		case "parent_invocation_id":
			return r.evIDs("parent_invocation_id", idParent, &c.parent, &c.sp.parent)
		case "detail":
			return r.evID("detail", idDetail, &c.detail)
		case "code":
			return r.evString("code", func(v []byte) { c.code = e.keep(v) })
		case "tool_name":
			return r.evString("tool_name", func(v []byte) { c.toolName = e.keep(v) })
		case "timing_source":
			return r.evString("timing_source", func(v []byte) { c.timing = e.keep(v) })
		case "status":
			return r.evString("status", func(v []byte) { c.status = e.keep(v) })
		case "role":
			return r.evString("role", func(v []byte) { c.role = e.keep(v) })
		case "provider":
			return r.evString("provider", func(v []byte) { c.provider = e.keep(v) })
		case "outcome":
			return r.evString("outcome", func(v []byte) { c.outcome = e.keep(v) })
		case "started_at":
			return r.evFloat("started_at", false, hasStarted, &c.started)
		case "completed_at":
			return r.evFloat("completed_at", false, hasCompleted, &c.completed)
		case "duration_ms":
			return r.evFloat("duration_ms", true, hasDuration, &c.dur)
		case "wall_time_s":
			return r.evFloat("wall_time_s", true, hasWall, &c.wall)
		case "cpu_time_s":
			return r.evFloat("cpu_time_s", true, hasCPU, &c.cpu)
		case "peak_memory_mib":
			return r.evFloat("peak_memory_mib", true, hasPeak, &c.peak)
		case "tokens_before":
			return r.evCount("tokens_before", func(v int64) { c.tokensBefore, c.has = v, c.has|hasTokensBefore })
		case "tokens_after":
			return r.evCount("tokens_after", func(v int64) { c.tokensAfter, c.has = v, c.has|hasTokensAfter })
		case "response_metadata":
			return r.evNested("response_metadata", ctxEvMeta, row)
		case "token_stats":
			return r.evNested("token_stats", ctxEvTokens, row)
		}
		if e.spans {
			return r.evItemSpans(k, row)
		}
	case ctxEvMeta:
		switch string(k) {
		case "model":
			return r.evString("response_metadata.model", func(v []byte) { c.model = e.keep(v) })
		case "dialect":
			return r.evString("response_metadata.dialect", func(v []byte) { c.dialect = e.keep(v) })
		case "finish_reason":
			return r.evString("response_metadata.finish_reason", func(v []byte) { c.finish = e.keep(v) })
		case "error_category":
			return r.evString("response_metadata.error_category", func(v []byte) { c.errCat = e.keep(v) })
		case "status_code":
			return r.evInt("response_metadata.status_code", false, func(v int64) { c.statusCode, c.has = v, c.has|hasStatusCode })
		case "latency_ttft_ms":
			return r.evFloat("response_metadata.latency_ttft_ms", true, hasTTFT, &c.ttft)
		case "response_id":
			if e.spans {
				return r.spanString(func(v []byte) { c.sp.resp, c.ids = e.hash(v), c.ids|idResp })
			}
		}
	case ctxEvTokens:
		if ts, ok := tokenStats[string(k)]; ok {
			return r.evCount(ts.name, func(v int64) { c.tokens[ts.t], c.hasTokens[ts.t] = v, true })
		}
	case ctxEvRef, ctxEvTurn:
		return r.evSpansMember(ctx, k, row)
	}
	return r.skipValue()
}

// tokenStats: a model call's token_stats by gen_ai.token.type (total_tokens is not recorded).
var tokenStats = map[string]struct {
	t    int
	name string
}{
	"prompt_tokens":     {TokenInput, "token_stats.prompt_tokens"},
	"completion_tokens": {TokenOutput, "token_stats.completion_tokens"},
	"reasoning_tokens":  {TokenReasoning, "token_stats.reasoning_tokens"},
	"cached_tokens":     {TokenCachedInput, "token_stats.cached_tokens"},
}

// evItems reads an array of items of kind (records: of their own kind).
func (r *RowDecoder) evItems(name string, kind events.EvidenceKind, record bool, from uint8, row *Row) bool {
	e := &r.ev
	switch c := r.buf[r.pos]; c {
	case '[':
	case 'n':
		return r.null(name, "an array")
	default:
		e.problem(problemWrongType, "%s is %s, not an array", name, kindOf(c))
		return r.skipValue()
	}
	r.pos++
	return r.elements(name, func(c byte) bool {
		if c != '{' {
			e.problem(problemNotObject, "%s: an item is %s, not an object", name, kindOf(c))
			return r.skipValue()
		}
		r.pos++
		e.begin(kind, record, from)
		if !r.object(ctxEvItem, row) {
			return false
		}
		e.commit(name)
		return true
	})
}

// evNested reads an item's object of ctx (or null).
func (r *RowDecoder) evNested(name string, ctx context, row *Row) bool {
	switch c := r.buf[r.pos]; c {
	case '{':
		r.pos++
		return r.object(ctx, row)
	case 'n':
		return r.null(name, "an object")
	default:
		r.ev.problem(problemWrongType, "%s is %s, not an object", name, kindOf(c))
		return r.skipValue()
	}
}

// evString reads a string (or null: absent) and hands it to keep while it lies in the buffer.
func (r *RowDecoder) evString(name string, keep func(v []byte)) bool {
	switch c := r.buf[r.pos]; c {
	case '"':
		r.pos++
		if n := gymjson.PlainString(r.buf[r.pos:r.end], maxEvidenceString); n >= 0 {
			keep(r.buf[r.pos : r.pos+n])
			r.pos += n + 1
			return true
		}
		start := len(r.scratch)
		v, ok := r.readString(name, maxEvidenceString)
		if ok {
			keep(v)
		}
		r.scratch = r.scratch[:start]
		return ok
	case 'n':
		return r.null(name, "a string")
	default:
		r.ev.problem(problemWrongType, "%s is %s, not a string", name, kindOf(c))
		return r.skipValue()
	}
}

// evID reads an id (a string) into its hash.
func (r *RowDecoder) evID(name string, bit uint8, dst *uint64) bool {
	c := &r.ev.cur
	return r.evString(name, func(v []byte) { *dst, c.ids = r.ev.hash(v), c.ids|bit })
}

// evIDs reads an id into its hash, and keeps it as a string too for the spans.
func (r *RowDecoder) evIDs(name string, bit uint8, dst *uint64, s *span) bool {
	e := &r.ev
	c := &e.cur
	if !e.spans {
		return r.evID(name, bit, dst)
	}
	return r.evString(name, func(v []byte) { *dst, c.ids, *s = e.hash(v), c.ids|bit, e.keep(v) })
}

// evNumber reads a number token into r.num as numberToken does, except that a value of another
// type is a problem of the evidence, skipped (present false), not of the row.
func (r *RowDecoder) evNumber(name string) (present, ok bool) {
	if c := r.buf[r.pos]; c != 'n' && !gymjson.StartsNumber(c) {
		r.ev.problem(problemWrongType, "%s is %s, not a number", name, kindOf(c))
		return false, r.skipValue()
	}
	return r.numberToken(name)
}

// plainNumber converts a plain number (gymjson.Plain: most of what Gym writes) that lies whole
// in the buffer where it is, without copying it into r.num: a trajectory has a dozen numbers a
// call. end is where it ends (not consumed), -1 for any other token, which evNumber reads.
func (r *RowDecoder) plainNumber() (end int, mant uint64, num gymjson.Plain) {
	if c := r.buf[r.pos]; c != '-' && c-'0' > 9 {
		return -1, 0, 0
	}
	end, mant, num = gymjson.ScanPlainNumber(r.buf[:r.end], r.pos)
	if end < 0 || end >= r.end || isTokenByte(r.buf[end]) {
		return -1, 0, 0 // not plain, or it may go on past the buffer
	}
	return end, mant, num
}

// evFloat reads a finite number (>= 0 when nonNeg) into *dst and sets its has bit.
func (r *RowDecoder) evFloat(name string, nonNeg bool, bit uint16, dst *float64) bool {
	if end, mant, num := r.plainNumber(); end >= 0 {
		if f, exact := gymjson.PlainFloat(mant, num); exact && (!nonNeg || f >= 0) {
			r.pos = end
			*dst = f + 0 // -0 is 0
			r.ev.cur.has |= bit
			return true
		}
	}
	present, ok := r.evNumber(name)
	if !present {
		return ok
	}
	f := gymjson.ParseFloat(r.num)
	if math.IsNaN(f) || math.IsInf(f, 0) || nonNeg && f < 0 {
		r.ev.problem(problemOutOfRange, "%s is %s, not a finite number (>= 0 for a duration, time or size)", name, r.num)
		return true
	}
	*dst = f + 0 // -0 is 0
	r.ev.cur.has |= bit
	return true
}

// evCount reads an integer >= 0.
func (r *RowDecoder) evCount(name string, set func(int64)) bool { return r.evInt(name, true, set) }

// evInt reads an integer within int64 (>= 0 when nonNeg) by count's rule.
func (r *RowDecoder) evInt(name string, nonNeg bool, set func(int64)) bool {
	if end, mant, num := r.plainNumber(); end >= 0 {
		if v, isInt := gymjson.PlainInt(mant, num); isInt && (!nonNeg || v >= 0) {
			r.pos = end
			set(v)
			return true
		}
	}
	present, ok := r.evNumber(name)
	if !present {
		return ok
	}
	v, st := gymjson.ParseInt(r.num)
	switch {
	case st == gymjson.IntNotIntegral:
		r.ev.problem(problemWrongType, "%s is %s, not an integer", name, r.num)
	case st != gymjson.IntOK || nonNeg && v < 0:
		r.ev.problem(problemOutOfRange, "%s is %s, not an integer >= 0 within int64", name, r.num)
	default:
		set(v)
	}
	return true
}
