package rollouts

import (
	"math"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The times of a row's spans (docs/receiver.md, "Traces from the run files"):
//
//   - A call's own times: [started_at, completed_at]; with only one of them, or completed_at
//     before started_at (clocks of two hosts), it starts at started_at (else ends at
//     completed_at) and lasts duration_ms (0 when none). A sandbox has no timestamp: it
//     starts with the first tool call that ran in it (sandbox_id), else with the rollout, and
//     lasts wall_time_s. A time outside the years 2000-2199 is taken as missing, a duration over
//     a year as none.
//   - An invocation, and the root, cover their children: from the earliest start to the latest
//     end of the spans under them (and their own times, when the row gives them).
//   - A span with no time of its own starts where its parent starts (the root: at its earliest
//     known time, else the row's earliest turn timestamp, else when the row was read) and lasts
//     its duration; it is marked nemo.gym.evidence.times_derived.
//
// So no span ends before it starts, and the root spans every span of the rollout.

func validEpoch(t float64) bool { return t >= minEpoch && t < maxEpoch }

func (b *SpanBuilder) times(e *Evidence, now time.Time) {
	n := len(e.items)
	dur := b.depthScratch(n) // a span's duration while its start is unknown
	sandboxes := map[uint64]float64(nil)
	for i := range e.items {
		if b.parent[i] == -2 {
			continue
		}
		it := &e.items[i]
		d := 0.0
		switch {
		case it.kind == events.EvidenceSandbox && it.has&hasWall != 0:
			d = it.wall
		case it.kind != events.EvidenceSandbox && it.has&hasDuration != 0:
			d = it.dur / 1000
		}
		if !(d >= 0 && d <= maxDurS) {
			d = 0
		}
		dur[i] = d
		s, hasS := it.started, it.has&hasStarted != 0 && validEpoch(it.started)
		c, hasC := it.completed, it.has&hasCompleted != 0 && validEpoch(it.completed)
		switch {
		case hasS && hasC && c >= s:
			b.start[i], b.end[i] = s, c
		case hasS:
			b.start[i], b.end[i] = s, s+d
		case hasC:
			b.start[i], b.end[i] = c-d, c
		default:
			continue
		}
		b.state[i] = timeKnown
		if it.kind == events.EvidenceToolCall && it.ids&idSandbox != 0 {
			if sandboxes == nil {
				sandboxes = map[uint64]float64{}
			}
			if v, ok := sandboxes[it.sp.sandboxH]; !ok || b.start[i] < v {
				sandboxes[it.sp.sandboxH] = b.start[i]
			}
		}
	}
	b.cover(e) // the invocations and the root from what is known
	anchor := float64(now.UnixNano()) / 1e9
	switch {
	case b.state[n]&timeKnown != 0:
		anchor = b.start[n]
	case e.row.hasTurnTS && validEpoch(e.row.turnTS):
		anchor = e.row.turnTS
	}
	for _, i := range b.order { // parents first
		if b.state[i]&timeKnown != 0 {
			continue
		}
		s := anchor
		if p := b.parent[i]; p >= 0 && b.state[p]&timeKnown != 0 {
			s = b.start[p]
		}
		if it := &e.items[i]; it.kind == events.EvidenceSandbox && it.ids&idSandbox != 0 {
			if v, ok := sandboxes[it.sp.sandboxH]; ok {
				s = v
			}
		}
		b.start[i], b.end[i], b.state[i] = s, s+dur[i], timeKnown|timeDerived
	}
	if b.state[n]&timeKnown == 0 {
		b.start[n], b.end[n], b.state[n] = anchor, anchor, timeKnown
	}
	b.cover(e)
}

// depthScratch reuses the depth buffer's twin for the durations.
func (b *SpanBuilder) depthScratch(n int) []float64 {
	b.dur = append(b.dur[:0], make([]float64, n)...)
	return b.dur
}

// cover stretches each invocation and the root over its children whose times are known
// (deepest first).
func (b *SpanBuilder) cover(e *Evidence) {
	n := int32(len(e.items))
	for k := len(b.order) - 1; k >= 0; k-- {
		i := b.order[k]
		if b.state[i]&timeKnown == 0 {
			continue
		}
		p := b.parent[i]
		if p < 0 {
			p = n
		} else if e.items[p].kind != events.EvidenceInvocation {
			continue
		}
		if b.state[p]&timeKnown == 0 {
			b.start[p], b.end[p], b.state[p] = b.start[i], b.end[i], timeKnown
			continue
		}
		b.start[p], b.end[p] = min(b.start[p], b.start[i]), max(b.end[p], b.end[i])
	}
}

func ts(sec float64) pcommon.Timestamp { return pcommon.Timestamp(uint64(math.Round(sec * 1e9))) }

// spanAttrCapacity is room for a span's attributes: the most any kind has (a model call's).
const spanAttrCapacity = 14

// common sets what every span has: its ids, times, the run and the rollout.
func (b *SpanBuilder) common(s ptrace.Span, i int, runID, rollout string) pcommon.Map {
	s.SetTraceID(b.tid)
	s.SetSpanID(b.sid[i])
	s.SetStartTimestamp(ts(b.start[i]))
	s.SetEndTimestamp(ts(max(b.end[i], b.start[i])))
	a := s.Attributes()
	a.EnsureCapacity(spanAttrCapacity) // no growth step per attribute
	if runID != "" {
		a.PutStr(schema.SpanRunID, runID)
	}
	a.PutStr(schema.SpanRolloutID, rollout)
	if b.state[i]&timeDerived != 0 {
		a.PutBool(schema.SpanTimesDerived, true)
	}
	return a
}

func (b *SpanBuilder) rootSpan(s ptrace.Span, e *Evidence, row *Row, runID, rollout string) {
	n := len(e.items)
	a := b.common(s, n, runID, rollout)
	s.SetName(spanRollout)
	s.SetKind(ptrace.SpanKindInternal)
	putBytes(a, schema.SpanTaskID, e.str(e.row.taskID))
	if row.HasTaskIndex {
		a.PutInt(schema.SpanTaskIndex, row.TaskIndex)
	}
	if row.HasRolloutIndex {
		a.PutInt(schema.SpanRolloutIndex, row.RolloutIndex)
	}
	if row.HasReward && !math.IsNaN(row.Reward) && !math.IsInf(row.Reward, 0) {
		a.PutDouble(schema.SpanReward, row.Reward)
	}
	a.PutStr(schema.Attr(schema.AttrNemoGymRolloutOutcome).Key, schema.ScoredOutcome)
	a.PutBool(schema.Attr(schema.AttrNemoGymRolloutMasked).Key, row.Masked)
	a.PutStr(schema.Attr(schema.AttrNemoGymRolloutDispatchName).Key, string(row.DispatchName()))
	a.PutBool(schema.Attr(schema.AttrNemoGymEvidenceTrajectory).Key, e.Trajectory)
}

func putBytes(a pcommon.Map, k string, v []byte) {
	if len(v) > 0 {
		a.PutStr(k, string(v))
	}
}

// failing: a status that is neither completed nor unknown (nor absent) is an error.
func failing(status []byte) bool {
	return len(status) > 0 && string(status) != "completed" && string(status) != "unknown"
}

func setError(s ptrace.Span, a pcommon.Map, errType []byte) {
	s.Status().SetCode(ptrace.StatusCodeError)
	a.PutStr("error.type", string(errType))
}

func (b *SpanBuilder) itemSpan(s ptrace.Span, e *Evidence, i int, rootID pcommon.SpanID, row *Row, runID, rollout string) {
	it := &e.items[i]
	a := b.common(s, i, runID, rollout)
	if p := b.parent[i]; p >= 0 {
		s.SetParentSpanID(b.sid[p])
	} else {
		s.SetParentSpanID(rootID)
	}
	s.SetKind(ptrace.SpanKindInternal)
	switch it.kind {
	case events.EvidenceModelCall:
		model := e.str(it.model)
		s.SetName(opChat)
		if len(model) > 0 {
			s.SetName(opChat + " " + string(model))
		}
		s.SetKind(ptrace.SpanKindClient)
		a.PutStr("gen_ai.operation.name", opChat)
		putBytes(a, "gen_ai.request.model", model)
		putBytes(a, "gen_ai.response.model", model)
		if it.hasTokens[TokenInput] {
			a.PutInt("gen_ai.usage.input_tokens", it.tokens[TokenInput])
		}
		if it.hasTokens[TokenOutput] {
			a.PutInt("gen_ai.usage.output_tokens", it.tokens[TokenOutput])
		}
		if it.hasTokens[TokenCachedInput] {
			a.PutInt("gen_ai.usage.cache_read.input_tokens", it.tokens[TokenCachedInput])
		}
		if f := e.str(it.finish); len(f) > 0 {
			a.PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr(string(f))
		}
		putBytes(a, schema.SpanModelCallID, e.str(it.sp.mcID))
		putBytes(a, schema.Attr(schema.AttrNemoGymModelCallDialect).Key, e.str(it.dialect))
		if it.has&hasStatusCode != 0 {
			a.PutInt("http.response.status_code", it.statusCode)
		}
		switch cat := e.str(it.errCat); {
		case len(cat) > 0:
			setError(s, a, cat)
		case it.has&hasStatusCode != 0 && it.statusCode >= 400:
			setError(s, a, strconv.AppendInt(nil, it.statusCode, 10))
		}
	case events.EvidenceToolCall:
		tool := e.str(it.toolName)
		s.SetName(opExecuteTool)
		if len(tool) > 0 {
			s.SetName(opExecuteTool + " " + string(tool))
		}
		a.PutStr("gen_ai.operation.name", opExecuteTool)
		putBytes(a, "gen_ai.tool.name", tool)
		putBytes(a, "gen_ai.tool.call.id", e.str(it.sp.tool))
		putBytes(a, schema.Attr(schema.AttrNemoGymToolStatus).Key, e.str(it.status))
		putBytes(a, schema.Attr(schema.AttrNemoGymToolTimingSource).Key, e.str(it.timing))
		putBytes(a, schema.SpanSandboxID, e.str(it.sp.sandbox))
		b.fail(s, a, e, it, e.str(it.status))
	case events.EvidenceInvocation:
		s.SetName(opInvokeAgent)
		a.PutStr("gen_ai.operation.name", opInvokeAgent)
		a.PutStr("gen_ai.agent.id", string(e.str(it.sp.inv)))
		sub := it.ids&(idParent|idSpawn) != 0
		if !sub && len(row.AgentName) > 0 {
			s.SetName(opInvokeAgent + " " + string(row.AgentName))
			a.PutStr("gen_ai.agent.name", string(row.AgentName))
		}
		if it.ids&idSpawn != 0 { // the tool call that spawned it, when it is not its parent
			if k, ok := b.byTool[it.sp.spawnH]; ok && k != b.parent[i] {
				l := s.Links().AppendEmpty()
				l.SetTraceID(b.tid)
				l.SetSpanID(b.sid[k])
			}
		}
		putBytes(a, schema.Attr(schema.AttrNemoGymAgentInvocationStatus).Key, e.str(it.status))
		a.PutBool(schema.Attr(schema.AttrNemoGymAgentSubagent).Key, sub)
		b.fail(s, a, e, it, e.str(it.status))
	case events.EvidenceSandbox:
		s.SetName(spanSandbox)
		putBytes(a, schema.SpanSandboxID, e.str(it.sp.sandbox))
		putBytes(a, schema.Attr(schema.AttrNemoGymSandboxRole).Key, e.str(it.role))
		putBytes(a, schema.Attr(schema.AttrNemoGymSandboxProvider).Key, e.str(it.provider))
		putBytes(a, schema.Attr(schema.AttrNemoGymSandboxOutcome).Key, e.str(it.outcome))
		if it.has&hasExitCode != 0 {
			a.PutInt(schema.SpanSandboxExit, it.sp.exitCode)
		}
		if it.has&hasWall != 0 {
			a.PutDouble(schema.SpanSandboxWallS, it.wall)
		}
		if it.has&hasCPU != 0 {
			a.PutDouble(schema.SpanSandboxCPUS, it.cpu)
		}
		if it.has&hasPeak != 0 {
			a.PutDouble(schema.SpanSandboxPeakMiB, it.peak)
		}
		b.fail(s, a, e, it, e.str(it.outcome))
	}
}

// fail marks a span whose status says it failed: error.type is its error_type, else the
// status itself.
func (b *SpanBuilder) fail(s ptrace.Span, a pcommon.Map, e *Evidence, it *evItem, status []byte) {
	if !failing(status) {
		return
	}
	if et := e.str(it.sp.errType); len(et) > 0 {
		status = et
	}
	setError(s, a, status)
}
