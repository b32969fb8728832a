package rollouts

import (
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// What only the spans of a row's evidence need (evidence_spans.go), read when KeepSpans is on
// and skipped like a payload otherwise, so that a source without traces reads its rows as
// before: the ids as strings (the spans' stable ids and gen_ai.tool.call.id), the links
// between items (parent_invocation_id, spawned_by_tool_call_id, sandbox_id, the model-call
// references of invocations and turns), error_type and exit_code, and the rollout's and
// task's ids. These values are read leniently and count no problem: a value of another type
// is left out. The payloads are never read.

// spanFields are an item's values kept for the spans only.
type spanFields struct {
	mcID, inv, tool, parent, spawn, sandbox, errType span
	spawnH, sandboxH, resp                           uint64 // hashes (idSpawn, idSandbox, idResp)
	exitCode                                         int64  // hasExitCode
}

var noSpanFields = spanFields{mcID: noSpan, inv: noSpan, tool: noSpan, parent: noSpan, spawn: noSpan, sandbox: noSpan, errType: noSpan}

// evRef is a model-call reference of an invocation (its own model_calls, or a turn's): owner
// is the invocation's id hash; id the model_call_id's hash, or the response_id's (byResp).
type evRef struct {
	owner, id uint64
	byResp    bool
	set       bool // one of the two was read
}

// rowIDs are the row's ids from ng_trajectory.
type rowIDs struct {
	rolloutID, taskID, ngRolloutID span    // ngRolloutID: the row's _ng_rollout_id
	turnTS                         float64 // the earliest turn timestamp (hasTurnTS)
	hasTurnTS                      bool
}

// KeepSpans makes the decoder keep what the evidence's spans need (off by default).
func (r *RowDecoder) KeepSpans(on bool) { r.ev.spans = on }

// ownRefs gives the references read with the item just committed to it when it is an
// invocation kept (new at index n, or one already kept), and forgets them otherwise.
func (e *Evidence) ownRefs(n int) {
	c := &e.cur
	if c.kind != events.EvidenceInvocation || c.ids&idInvocation == 0 || len(e.items) == n && !e.known(c) {
		e.refs = e.refs[:c.refs0]
		return
	}
	for i := int(c.refs0); i < len(e.refs); i++ {
		e.refs[i].owner = c.inv
	}
}

// known: the invocation c is in the row (kept earlier: a duplicate of one in both objects).
func (e *Evidence) known(c *evItem) bool {
	_, ok := e.byKey[e.itemKey(events.EvidenceInvocation, c.inv, 0)]
	return ok
}

// evTrajectorySpans reads ng_trajectory's members that only the spans need.
func (r *RowDecoder) evTrajectorySpans(k []byte, row *Row) bool {
	e := &r.ev
	switch string(k) {
	case "rollout_id":
		return r.spanString(func(v []byte) { e.row.rolloutID = e.keep(v) })
	case "task_id":
		return r.spanString(func(v []byte) { e.row.taskID = e.keep(v) })
	case "turns":
		if r.buf[r.pos] != '[' {
			return r.skipValue()
		}
		r.pos++
		return r.elements("ng_trajectory.turns", func(c byte) bool {
			if c != '{' {
				return r.skipValue()
			}
			r.pos++
			e.begin(events.EvidenceGap, false, 0) // a turn is no item: e.cur holds what it says
			if !r.object(ctxEvTurn, row) {
				return false
			}
			t := &e.cur
			if t.has&hasStarted != 0 && (!e.row.hasTurnTS || t.started < e.row.turnTS) {
				e.row.turnTS, e.row.hasTurnTS = t.started, true
			}
			if t.ids&idInvocation == 0 {
				e.refs = e.refs[:t.refs0]
				return true
			}
			for i := int(t.refs0); i < len(e.refs); i++ {
				e.refs[i].owner = t.inv
			}
			return true
		})
	}
	return r.skipValue()
}

// evItemSpans reads an item's members that only the spans need.
func (r *RowDecoder) evItemSpans(k []byte, row *Row) bool {
	e := &r.ev
	c := &e.cur
	switch string(k) {
	case "spawned_by_tool_call_id":
		return r.spanString(func(v []byte) { c.sp.spawnH, c.sp.spawn, c.ids = e.hash(v), e.keep(v), c.ids|idSpawn })
	case "sandbox_id":
		return r.spanString(func(v []byte) { c.sp.sandboxH, c.sp.sandbox, c.ids = e.hash(v), e.keep(v), c.ids|idSandbox })
	case "error_type":
		return r.spanString(func(v []byte) { c.sp.errType = e.keep(v) })
	case "exit_code":
		if end, mant, num := r.plainNumber(); end >= 0 {
			if v, isInt := gymjson.PlainInt(mant, num); isInt {
				r.pos = end
				c.sp.exitCode, c.has = v, c.has|hasExitCode
				return true
			}
		}
	case "model_calls":
		return r.evRefs(row)
	}
	return r.skipValue()
}

// evSpansMember reads the members of a model-call reference and of a turn.
func (r *RowDecoder) evSpansMember(ctx context, k []byte, row *Row) bool {
	e := &r.ev
	c := &e.cur
	switch ctx {
	case ctxEvRef:
		ref := &e.refs[len(e.refs)-1]
		switch string(k) {
		case "model_call_id":
			return r.spanString(func(v []byte) { ref.id, ref.byResp, ref.set = e.hash(v), false, true })
		case "response_id":
			return r.spanString(func(v []byte) {
				if !ref.set || ref.byResp { // a model_call_id wins
					ref.id, ref.byResp, ref.set = e.hash(v), true, true
				}
			})
		}
	case ctxEvTurn:
		switch string(k) {
		case "invocation_id":
			return r.spanString(func(v []byte) { c.inv, c.ids = e.hash(v), c.ids|idInvocation })
		case "timestamp":
			if end, mant, num := r.plainNumber(); end >= 0 {
				if f, exact := gymjson.PlainFloat(mant, num); exact {
					r.pos = end
					c.started, c.has = f, c.has|hasStarted
					return true
				}
			}
		case "model_calls":
			return r.evRefs(row)
		}
	}
	return r.skipValue()
}

// evRefs reads an array of model-call references into e.refs (at most MaxEvidenceItems in a
// row; a reference that names no call is dropped).
func (r *RowDecoder) evRefs(row *Row) bool {
	e := &r.ev
	if r.buf[r.pos] != '[' {
		return r.skipValue()
	}
	r.pos++
	return r.elements("model_calls", func(c byte) bool {
		if c != '{' || len(e.refs) >= MaxEvidenceItems {
			return r.skipValue()
		}
		r.pos++
		e.refs = append(e.refs, evRef{})
		if !r.object(ctxEvRef, row) {
			return false
		}
		if !e.refs[len(e.refs)-1].set {
			e.refs = e.refs[:len(e.refs)-1]
		}
		return true
	})
}

// spanString reads a string for the spans: any other value is skipped, and counts nothing.
func (r *RowDecoder) spanString(keep func(v []byte)) bool {
	if r.buf[r.pos] != '"' {
		return r.skipValue()
	}
	return r.evString("", keep)
}
