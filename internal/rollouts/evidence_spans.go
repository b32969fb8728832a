package rollouts

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
)

// A row's rollout evidence as one trace (the decoder keeps what it needs when KeepSpans is
// on: evidence_ids.go). The trace is the rollout's, in its run: its id is a hash of the run id
// and the rollout id, and each span's id a hash of the trace id and the item's identity in the
// row (its ids, else its position among the row's items of its kind), so the same row read
// again (a restart, a re-read) gives the same trace, byte for byte. Spans follow the GenAI
// semantic conventions (v1.41.0): a root span gym.rollout; invoke_agent per invocation (under
// its parent invocation, else under the tool call that spawned it, else the root); chat
// {model} per model call (under the invocation that references it, else the root);
// execute_tool {tool} per tool call (under its invocation, else the root); gym.sandbox per
// sandbox (under the root). docs/receiver.md, "Traces from the run files", states the time
// rule. No payload is read, so none can reach a span.

// Span names and values of the GenAI conventions.
const (
	spanRollout   = "gym.rollout"
	spanSandbox   = "gym.sandbox"
	opInvokeAgent = "invoke_agent"
	opChat        = "chat"
	opExecuteTool = "execute_tool"
	traceDomain   = "otelcol-gym/rollout-evidence/v1\x00"
)

// Times outside [2000, 2200) are taken as missing, and a duration over a year as none.
const (
	minEpoch = 946684800.0
	maxEpoch = 7258118400.0
	maxDurS  = 366 * 24 * 3600.0
)

// RowSpans is the rest of what a row's trace says beside its evidence.
type RowSpans struct {
	RunID string
	// RowStart is the row's offset in its file: the rollout's identity when the row names none.
	RowStart int64
	// Now places a row with no timestamp at all (the time it was read).
	Now time.Time
}

// SpanBuilder makes the spans of rows; its buffers are reused from row to row.
type SpanBuilder struct {
	parent         []int32   // per item: the index of its parent span's item, -1: the root, -2: no span
	start, end     []float64 // [len(items)]: the root
	dur            []float64
	state          []uint8 // timeKnown, timeDerived
	depth          []int32
	order          []int32
	sid            [][8]byte
	owner          []int32 // per model call: its invocation (-1: none)
	byResp, byTool map[uint64]int32
	used           map[[8]byte]struct{}
	h              []byte
	tid            [16]byte
}

const (
	timeKnown uint8 = 1 << iota
	timeDerived
)

// HasSpans tells whether the row has evidence to trace: ng_trajectory, or any item.
func (e *Evidence) HasSpans() bool { return e.spans && (e.Trajectory || len(e.items) > 0) }

// rolloutID is the row's rollout id: ng_trajectory's rollout_id, else _ng_rollout_id, else
// "<task index>-<rollout index>", else "row@<offset>".
func (e *Evidence) rolloutID(row *Row, rowStart int64) string {
	for _, s := range [...]span{e.row.rolloutID, e.row.ngRolloutID} {
		if v := e.str(s); len(v) > 0 {
			return string(v)
		}
	}
	if row.HasTaskIndex && row.HasRolloutIndex {
		return strconv.FormatInt(row.TaskIndex, 10) + "-" + strconv.FormatInt(row.RolloutIndex, 10)
	}
	return "row@" + strconv.FormatInt(rowStart, 10)
}

// Append appends the row's trace to ss and returns how many spans it has.
func (b *SpanBuilder) Append(ss ptrace.SpanSlice, row *Row, rs RowSpans) int {
	e := row.Evidence
	if e == nil || !e.HasSpans() {
		return 0
	}
	rollout := e.rolloutID(row, rs.RowStart)
	b.h = append(append(append(append(b.h[:0], traceDomain...), rs.RunID...), 0), rollout...)
	sum := sha256.Sum256(b.h)
	copy(b.tid[:], sum[:16])
	b.reset(len(e.items))
	b.ids(e)
	b.parents(e)
	b.times(e, rs.Now)
	ss.EnsureCapacity(ss.Len() + 1 + len(e.items))
	root := ss.AppendEmpty()
	b.rootSpan(root, e, row, rs.RunID, rollout)
	n := 1
	for i := range e.items {
		if b.parent[i] == -2 {
			continue
		}
		s := ss.AppendEmpty()
		b.itemSpan(s, e, i, root.SpanID(), row, rs.RunID, rollout)
		n++
	}
	return n
}

func (b *SpanBuilder) reset(n int) {
	grow := func(s []int32) []int32 { return append(s[:0], make([]int32, n)...) }
	b.parent, b.depth, b.owner = grow(b.parent), grow(b.depth), grow(b.owner)
	b.order = b.order[:0]
	b.start = append(b.start[:0], make([]float64, n+1)...) // [n]: the root
	b.end = append(b.end[:0], make([]float64, n+1)...)
	b.state = append(b.state[:0], make([]uint8, n+1)...)
	b.sid = append(b.sid[:0], make([][8]byte, n+1)...)
	if b.used == nil {
		b.used, b.byResp, b.byTool = map[[8]byte]struct{}{}, map[uint64]int32{}, map[uint64]int32{}
	}
	clear(b.used)
	clear(b.byResp)
	clear(b.byTool)
}

// spanned: the kinds that are spans.
func spanned(k events.EvidenceKind) bool {
	return k == events.EvidenceModelCall || k == events.EvidenceToolCall || k == events.EvidenceInvocation || k == events.EvidenceSandbox
}

// ids gives every span its id: a hash of the trace id, its kind and its identity (its ids,
// else its position among the row's items of its kind, also when its ids are another's).
func (b *SpanBuilder) ids(e *Evidence) {
	b.sid[len(e.items)] = b.spanID(0, nil, 0)
	var ordinal [events.EvidenceProblem + 1]int64
	for i := range e.items {
		it := &e.items[i]
		if !spanned(it.kind) {
			continue
		}
		pos := ordinal[it.kind]
		ordinal[it.kind]++
		var id []byte
		switch it.kind {
		case events.EvidenceModelCall:
			id = e.str(it.sp.mcID)
		case events.EvidenceToolCall:
			id = append(append(append([]byte(nil), e.str(it.sp.inv)...), 0), e.str(it.sp.tool)...)
		case events.EvidenceInvocation:
			id = e.str(it.sp.inv)
		case events.EvidenceSandbox:
			id = e.str(it.sp.sandbox)
		}
		sid := b.spanID(byte(it.kind)+1, id, pos)
		if _, dup := b.used[sid]; dup || len(id) == 0 {
			sid = b.spanID(byte(it.kind)+1, nil, pos)
		}
		b.used[sid] = struct{}{}
		b.sid[i] = sid
	}
}

// spanID hashes the trace id, the kind, and the identity (or, without one, the position).
func (b *SpanBuilder) spanID(kind byte, id []byte, pos int64) [8]byte {
	b.h = append(append(b.h[:0], b.tid[:]...), kind)
	if len(id) > 0 {
		b.h = append(append(b.h, 'i'), id...)
	} else {
		b.h = binary.BigEndian.AppendUint64(append(b.h, '#'), uint64(pos))
	}
	sum := sha256.Sum256(b.h)
	var out [8]byte
	copy(out[:], sum[:8])
	if out == ([8]byte{}) {
		out[7] = 1 // an all-zero span id is invalid
	}
	return out
}

// parents links every span to its parent, breaking any cycle at the root.
func (b *SpanBuilder) parents(e *Evidence) {
	for i := range e.items {
		it := &e.items[i]
		switch it.kind {
		case events.EvidenceModelCall:
			if it.ids&idResp != 0 {
				if _, ok := b.byResp[it.sp.resp]; !ok {
					b.byResp[it.sp.resp] = int32(i)
				}
			}
		case events.EvidenceToolCall:
			if _, ok := b.byTool[it.tool]; !ok {
				b.byTool[it.tool] = int32(i)
			}
		}
		b.owner[i] = -1
	}
	for _, ref := range e.refs {
		j := int32(-1)
		if ref.byResp {
			if k, ok := b.byResp[ref.id]; ok {
				j = k
			}
		} else if k, ok := e.byKey[e.itemKey(events.EvidenceModelCall, ref.id, 0)]; ok {
			j = k
		}
		if j >= 0 && b.owner[j] < 0 {
			if k, ok := e.byKey[e.itemKey(events.EvidenceInvocation, ref.owner, 0)]; ok {
				b.owner[j] = k
			}
		}
	}
	invocation := func(h uint64) int32 {
		if k, ok := e.byKey[e.itemKey(events.EvidenceInvocation, h, 0)]; ok {
			return k
		}
		return -1
	}
	for i := range e.items {
		it := &e.items[i]
		p := int32(-1)
		switch it.kind {
		case events.EvidenceModelCall:
			p = b.owner[i]
		case events.EvidenceToolCall:
			p = invocation(it.inv)
		case events.EvidenceInvocation:
			if it.ids&idParent != 0 {
				p = invocation(it.parent)
			}
			if p < 0 && it.ids&idSpawn != 0 {
				if k, ok := b.byTool[it.sp.spawnH]; ok {
					p = k
				}
			}
		case events.EvidenceSandbox:
		default:
			p = -2
		}
		if int(p) == i {
			p = -1
		}
		b.parent[i] = p
	}
	b.breakCycles()
}

// breakCycles walks each span's parents: a chain that comes back to a span on it is cut there
// (that span goes under the root). depth is set on the way (the root's children: 1).
func (b *SpanBuilder) breakCycles() {
	const onChain = -1
	for i := range b.parent {
		if b.parent[i] == -2 || b.depth[i] != 0 {
			continue
		}
		j := int32(i)
		for j >= 0 && b.depth[j] == 0 {
			b.depth[j] = onChain
			if p := b.parent[j]; p >= 0 && b.depth[p] == onChain {
				b.parent[j] = -1 // a cycle: cut here
			}
			j = b.parent[j]
		}
		base := int32(0)
		if j >= 0 {
			base = b.depth[j]
		}
		// Unwind: the chain from i to j, deepest first.
		var d int32
		for k := int32(i); k >= 0 && b.depth[k] == onChain; k = b.parent[k] {
			d++
		}
		for k := int32(i); k >= 0 && b.depth[k] == onChain; k = b.parent[k] {
			b.depth[k] = base + d
			d--
		}
	}
	for i := range b.parent {
		if b.parent[i] != -2 {
			b.order = append(b.order, int32(i))
		}
	}
	// Shallowest first.
	sortByDepth(b.order, b.depth)
}

func sortByDepth(order, depth []int32) {
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(depth[a], depth[b]) })
}
