package rollouts

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// A main-output row's rollout evidence: what Gym observed of the rollout (ng_trajectory) and
// what its agent server reported (ng_agent_observations). Its items are read as they arrive
// (evidence_decode.go) into fixed buffers, and only when the row is whole are they checked
// (duplicates, parent cycles) and handed on: an item in both objects is one, and a row that
// is rejected later counts none of them. The payloads (request, response, output,
// conversation, question, answer, reasoning_content, summary) are skipped like any unmapped
// value.

// Bounds of one row's evidence: far above a long agentic rollout's, and what keeps a row's
// memory fixed whatever the file says. An item past them is left out and counted
// (too_many_items).
const (
	// MaxEvidenceItems is the most items (calls, invocations, sandboxes, compactions, gaps)
	// kept of one row.
	MaxEvidenceItems = 8192
	// maxEvidenceStrings bounds the bytes of the kept attribute strings of one row.
	maxEvidenceStrings = 1 << 20
	// maxEvidenceString is how much of an evidence string is read: attribute values are cut
	// to 256 bytes or less by their rules; ids and gap details are told apart by this much.
	maxEvidenceString = 1024
)

// Problems of a row's evidence: the values of nemo.gym.evidence.problem, in its order.
const (
	problemNotObject = iota
	problemWrongType
	problemOutOfRange
	problemMissingID
	problemDuplicateID
	problemParentCycle
	problemTimestampSkew
	problemTimestampMissing
	problemTooManyItems
	numProblems
)

var problemNames = func() (out [numProblems][]byte) {
	vals := schema.Attr(schema.AttrNemoGymEvidenceProblem).Values
	for i := range out {
		out[i] = []byte(vals[i])
	}
	return out
}()

// Where an item was read: a bit each, so that the same item in both objects is one.
const (
	fromTrajectory uint8 = 1 << iota
	fromObservations
)

// span is a string of the row's evidence in Evidence.strs (n < 0: absent).
type span struct{ off, n int32 }

var noSpan = span{n: -1}

// evItem is one item as read: the union of every kind's fields (a record's kind may come
// after its other fields).
type evItem struct {
	kind    events.EvidenceKind
	record  bool  // from ng_agent_observations.records: its kind is its `kind`
	from    uint8 // fromTrajectory, fromObservations
	recKind span  // a record's `kind`

	// ids, hashed (has* bits): model_call_id, invocation_id, tool_call_id,
	// parent_invocation_id, a gap's detail
	mcID, inv, tool, parent, detail uint64
	ids                             uint8

	model, dialect, finish, errCat, toolName, timing, status, role, provider, outcome, code span

	statusCode                    int64
	started, completed, dur, ttft float64
	wall, cpu, peak               float64
	tokens                        [events.NumResponseTokenTypes]int64
	hasTokens                     [events.NumResponseTokenTypes]bool
	tokensBefore, tokensAfter     int64
	has                           uint16 // has* bits of the numbers
	key                           uint64 // its identity in the row (hasKey)
	hasKey, dropped               bool

	// Kept for the spans only (Evidence.spans, evidence_ids.go): the ids as strings, the
	// links to other items, and the first of its model-call references in Evidence.refs.
	sp    spanFields
	refs0 int32
}

// has* bits of evItem.ids and evItem.has.
const (
	idModelCall uint8 = 1 << iota
	idInvocation
	idToolCall
	idParent
	idDetail
	idSpawn   // spawned_by_tool_call_id (spans only)
	idSandbox // sandbox_id (spans only)
	idResp    // response_metadata.response_id (spans only)
)
const (
	hasStatusCode uint16 = 1 << iota
	hasStarted
	hasCompleted
	hasDuration
	hasTTFT
	hasWall
	hasCPU
	hasPeak
	hasTokensBefore
	hasTokensAfter
	hasExitCode // spans only
)

// Evidence is a row's rollout evidence. Its buffers are the RowDecoder's, made at the first
// row that has evidence and reused: valid until the next call of Next.
type Evidence struct {
	// Trajectory: ng_trajectory is an object.
	Trajectory bool
	// Problems counts the row's problems by kind; Detail names the first.
	problems [numProblems]int64
	first    int // the kind of the first problem, which detail names
	detail   []byte

	items []evItem
	strs  []byte
	byKey map[uint64]int32
	cur   evItem
	marks []uint8 // finish's
	seed  maphash.Seed
	kb    [32]byte

	out events.EvidenceItem
	ev  events.Event

	// spans: what only the spans need is kept too (KeepSpans): evidence_ids.go.
	spans bool
	refs  []evRef
	row   rowIDs
}

func (e *Evidence) reset() {
	e.Trajectory = false
	e.problems = [numProblems]int64{}
	e.detail = e.detail[:0]
	e.items = e.items[:0]
	e.strs = e.strs[:0]
	e.refs = e.refs[:0]
	e.row = rowIDs{rolloutID: noSpan, taskID: noSpan, ngRolloutID: noSpan}
	if len(e.byKey) > 0 {
		clear(e.byKey)
	}
}

func (e *Evidence) init() {
	if e.byKey == nil {
		e.items = make([]evItem, 0, 64)
		e.strs = make([]byte, 0, 4<<10)
		e.byKey = map[uint64]int32{}
		e.seed = maphash.MakeSeed()
		e.detail = make([]byte, 0, 256)
	}
}

// problem counts one problem of the row; the first is named in the row's warning.
func (e *Evidence) problem(p int, format string, args ...any) {
	if e.Problems() == 0 {
		e.first = p
		e.detail = fmt.Appendf(e.detail[:0], format, args...)
	}
	e.problems[p]++
}

// Problems is the count of the row's problems.
func (e *Evidence) Problems() int64 {
	var n int64
	for _, c := range e.problems {
		n += c
	}
	return n
}

// FirstProblem names the row's first problem (its kind and what was wrong).
func (e *Evidence) FirstProblem() (kind, detail string) {
	return string(problemNames[e.first]), string(e.detail)
}

// keep copies an attribute string into the row's strings: noSpan once they are full (the
// value is then absent, and the item counted as too many).
func (e *Evidence) keep(v []byte) span {
	if len(v) > MaxValueBytes {
		v = v[:MaxValueBytes] // cut again by the attribute's rule, at a rune boundary
	}
	if len(e.strs)+len(v) > maxEvidenceStrings {
		e.cur.dropped = true
		return noSpan
	}
	s := span{off: int32(len(e.strs)), n: int32(len(v))}
	e.strs = append(e.strs, v...)
	return s
}

func (e *Evidence) str(s span) []byte {
	if s.n < 0 {
		return nil
	}
	return e.strs[s.off : s.off+s.n : s.off+s.n]
}

func (e *Evidence) hash(v []byte) uint64 { return maphash.Bytes(e.seed, v) }

// begin starts an item of kind (a record's kind is decided at commit).
func (e *Evidence) begin(kind events.EvidenceKind, record bool, from uint8) {
	c := &e.cur
	*c = evItem{kind: kind, record: record, from: from}
	c.recKind, c.model, c.dialect, c.finish, c.errCat, c.toolName = noSpan, noSpan, noSpan, noSpan, noSpan, noSpan
	c.timing, c.status, c.role, c.provider, c.outcome, c.code = noSpan, noSpan, noSpan, noSpan, noSpan, noSpan
	c.sp = noSpanFields
	c.refs0 = int32(len(e.refs))
}

var recordKinds = map[string]events.EvidenceKind{
	"agent_invocation":   events.EvidenceInvocation,
	"tool_call":          events.EvidenceToolCall,
	"sandbox":            events.EvidenceSandbox,
	"context_compaction": events.EvidenceCompaction,
}

// commit ends the item being read: its identity checked, kept once. The model-call
// references read with it stay only with an invocation kept (for the spans).
func (e *Evidence) commit(where string) {
	n := len(e.items)
	e.commitItem(where)
	if len(e.refs) > int(e.cur.refs0) {
		e.ownRefs(n)
	}
}

func (e *Evidence) commitItem(where string) {
	c := &e.cur
	if c.record {
		if c.recKind.n < 0 {
			e.problem(problemMissingID, "%s: a record without a kind", where)
			return
		}
		k, ok := recordKinds[string(e.str(c.recKind))]
		if !ok {
			return // a kind of a later Gym: not ours to count
		}
		c.kind = k
	}
	var a, b uint64
	switch c.kind {
	case events.EvidenceModelCall:
		if c.ids&idModelCall != 0 { // optional: a call without one is kept as it is
			c.hasKey, a = true, c.mcID
		}
	case events.EvidenceToolCall:
		if c.ids&(idInvocation|idToolCall) != idInvocation|idToolCall {
			e.problem(problemMissingID, "%s: a tool call without invocation_id or tool_call_id", where)
			return
		}
		c.hasKey, a, b = true, c.inv, c.tool
	case events.EvidenceInvocation:
		if c.ids&idInvocation == 0 {
			e.problem(problemMissingID, "%s: an agent invocation without invocation_id", where)
			return
		}
		c.hasKey, a = true, c.inv
	case events.EvidenceCompaction:
		if c.ids&idInvocation == 0 {
			e.problem(problemMissingID, "%s: a context compaction without invocation_id", where)
			return
		}
	case events.EvidenceGap:
		if c.code.n < 0 {
			e.problem(problemMissingID, "%s: a gap without code", where)
			return
		}
		c.hasKey, a = true, e.hash(e.str(c.code))
		if c.ids&idInvocation != 0 {
			b = c.inv
		}
		if c.ids&idDetail != 0 {
			a ^= c.detail * 0x9e3779b97f4a7c15
		}
	}
	if c.hasKey {
		c.key = e.itemKey(c.kind, a, b)
		if i, ok := e.byKey[c.key]; ok {
			prev := &e.items[i]
			if prev.from&c.from != 0 && c.kind != events.EvidenceGap {
				e.problem(problemDuplicateID, "%s: a duplicate id (counted once)", where)
			}
			prev.from |= c.from
			return
		}
	}
	if c.dropped || len(e.items) >= MaxEvidenceItems {
		e.problem(problemTooManyItems, "%s: over %d items or their strings over %d bytes (left out)", where, MaxEvidenceItems, maxEvidenceStrings)
		return
	}
	e.checkTimes(c, where)
	if c.hasKey {
		e.byKey[c.key] = int32(len(e.items))
	}
	e.items = append(e.items, *c)
}

func (e *Evidence) itemKey(kind events.EvidenceKind, a, b uint64) uint64 {
	e.kb[0] = byte(kind)
	binary.LittleEndian.PutUint64(e.kb[8:], a)
	binary.LittleEndian.PutUint64(e.kb[16:], b)
	return e.hash(e.kb[:24])
}

// checkTimes derives a call's duration from its timestamps when it states none, and counts
// timestamps out of order (skew between hosts) or missing altogether.
func (e *Evidence) checkTimes(c *evItem, where string) {
	if c.kind != events.EvidenceModelCall && c.kind != events.EvidenceToolCall {
		return
	}
	both := c.has&(hasStarted|hasCompleted) == hasStarted|hasCompleted
	switch {
	case both && c.completed < c.started:
		e.problem(problemTimestampSkew, "%s: completed_at %v before started_at %v", where, c.completed, c.started)
	case both && c.has&hasDuration == 0:
		c.dur, c.has = (c.completed-c.started)*1000, c.has|hasDuration
	case !both && c.has&hasDuration == 0:
		e.problem(problemTimestampMissing, "%s: no duration_ms and not both started_at and completed_at", where)
	}
}

// finish checks the row's invocations once all are read: a parent chain that comes back to
// an invocation is a cycle, counted once (the invocations still count). Each invocation is
// walked once: marks says which are on the chain being walked (1) or done (2).
func (e *Evidence) finish() {
	e.marks = append(e.marks[:0], make([]uint8, len(e.items))...)
	for i := range e.items {
		j := i
		for j >= 0 && e.marks[j] == 0 && e.items[j].kind == events.EvidenceInvocation {
			e.marks[j] = 1
			j = e.parentOf(j)
		}
		if j >= 0 && e.marks[j] == 1 {
			e.problem(problemParentCycle, "agent invocations: parent_invocation_id forms a cycle")
		}
		for k := i; k >= 0 && e.marks[k] == 1; k = e.parentOf(k) {
			e.marks[k] = 2
		}
	}
}

// parentOf is the index of the parent invocation of item i, -1 when it has none in the row.
func (e *Evidence) parentOf(i int) int {
	it := &e.items[i]
	if it.ids&idParent == 0 {
		return -1
	}
	j, ok := e.byKey[e.itemKey(events.EvidenceInvocation, it.parent, 0)]
	if !ok {
		return -1
	}
	return int(j)
}

// Len is the count of events the row's evidence maps to: the row itself, its items, and one
// per kind of problem it had.
func (e *Evidence) Len() int {
	n := 1 + len(e.items)
	for _, c := range e.problems {
		if c > 0 {
			n++
		}
	}
	return n
}

// Event returns the i-th event of the row's evidence (0 <= i < Len), in one reused Event.
func (e *Evidence) Event(i int) *events.Event {
	o := &e.out
	*o = events.EvidenceItem{}
	e.ev = events.Event{Type: events.EventEvidence, Evidence: o}
	switch {
	case i == 0:
		o.Kind, o.Trajectory = events.EvidenceRow, e.Trajectory
	case i <= len(e.items):
		e.item(&e.items[i-1], o)
	default:
		i -= 1 + len(e.items)
		for p, c := range e.problems {
			if c == 0 {
				continue
			}
			if i == 0 {
				o.Kind, o.Code, o.Count = events.EvidenceProblem, problemNames[p], c
				break
			}
			i--
		}
	}
	return &e.ev
}

// item fills o from a kept item.
func (e *Evidence) item(it *evItem, o *events.EvidenceItem) {
	o.Kind = it.kind
	switch it.kind {
	case events.EvidenceModelCall:
		o.Model, o.Dialect, o.FinishReason = e.str(it.model), e.str(it.dialect), e.str(it.finish)
		o.StatusClass = statusClass(it.statusCode, it.has&hasStatusCode != 0)
		o.Outcome = modelCallOK
		if v := e.str(it.errCat); len(v) > 0 {
			o.Outcome = v
		}
		o.DurationMS, o.HasDuration = it.dur, it.has&hasDuration != 0
		o.TTFTMS, o.HasTTFT = it.ttft, it.has&hasTTFT != 0
		o.Tokens, o.HasTokens = it.tokens, it.hasTokens
	case events.EvidenceToolCall:
		o.ToolName, o.Status, o.TimingSource = e.str(it.toolName), e.str(it.status), e.str(it.timing)
		o.DurationMS, o.HasDuration = it.dur, it.has&hasDuration != 0
	case events.EvidenceInvocation:
		o.Status, o.Subagent = e.str(it.status), it.ids&idParent != 0
	case events.EvidenceSandbox:
		o.Role, o.Provider, o.Status = e.str(it.role), e.str(it.provider), e.str(it.outcome)
		o.WallS, o.HasWall = it.wall, it.has&hasWall != 0
		o.CPUS, o.HasCPU = it.cpu, it.has&hasCPU != 0
		o.PeakMiB, o.HasPeak = it.peak, it.has&hasPeak != 0
	case events.EvidenceCompaction:
		o.Status = e.str(it.outcome)
		o.TokensBefore, o.HasTokensBefore = it.tokensBefore, it.has&hasTokensBefore != 0
		o.TokensAfter, o.HasTokensAfter = it.tokensAfter, it.has&hasTokensAfter != 0
	case events.EvidenceGap:
		o.Code = e.str(it.code)
	}
}

var (
	modelCallOK   = []byte("ok")
	statusClasses = func() (out [7][]byte) {
		for i, v := range schema.Attr(schema.AttrNemoGymModelCallStatusClass).Values { // 1xx..5xx, none
			out[i] = []byte(v)
		}
		out[6] = []byte(schema.Attr(schema.AttrNemoGymModelCallStatusClass).Fallback)
		return out
	}()
)

// statusClass is the class of an HTTP status code: 1xx to 5xx, none when the call states
// none, other outside 100-599.
func statusClass(code int64, has bool) []byte {
	switch {
	case !has:
		return statusClasses[5]
	case code < 100 || code > 599:
		return statusClasses[6]
	}
	return statusClasses[code/100-1]
}
