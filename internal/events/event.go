// Package protocol decodes the Gym event stream (docs/receiver.md) and aggregates it into
// cumulative OpenTelemetry metrics. It knows nothing of sockets or files: transports hand it
// lines.
package events

// EventType is the `event` field of a line.
type EventType uint8

// The event types of docs/receiver.md, and resource.
const (
	EventUnknown EventType = iota
	EventResource
	EventRolloutCompleted
	EventRolloutHealth
	EventRolloutSize
	EventSandboxActive
	EventSandboxStartup
	EventSandboxExec
	EventSandboxCreateRetry
	EventServerStartupStage
	EventHTTPPoolQueue
	EventHTTPPoolConnect
	EventHTTPPoolConnects
	EventEventLoopLag
	EventEventLoopTasks
	EventGCPause
	EventGCStats
	EventServerRequests
	EventDriverCounts
	EventDriverAdmission
	EventDriverOutputWrite
	EventDriverMaterialize
	EventRolloutReward
	EventConcurrencyLimits
	EventModelCall
	EventMemorySample
	EventRolloutDuration
	EventVerify
	EventServersActive
	numEventTypes
)

// EventNames are the wire names of the event types, indexed by EventType.
var EventNames = [numEventTypes]string{
	EventUnknown:            "",
	EventResource:           "resource",
	EventRolloutCompleted:   "rollout.completed",
	EventRolloutHealth:      "rollout.health",
	EventRolloutSize:        "rollout.size",
	EventSandboxActive:      "sandbox.active",
	EventSandboxStartup:     "sandbox.startup",
	EventSandboxExec:        "sandbox.exec",
	EventSandboxCreateRetry: "sandbox.create_retry",
	EventServerStartupStage: "server.startup_stage",
	EventHTTPPoolQueue:      "http.pool.queue",
	EventHTTPPoolConnect:    "http.pool.connect",
	EventHTTPPoolConnects:   "http.pool.connects",
	EventEventLoopLag:       "event_loop.lag",
	EventEventLoopTasks:     "event_loop.tasks",
	EventGCPause:            "gc.pause",
	EventGCStats:            "gc.stats",
	EventServerRequests:     "server.requests",
	EventDriverCounts:       "driver.counts",
	EventDriverAdmission:    "driver.admission",
	EventDriverOutputWrite:  "driver.output_write",
	EventDriverMaterialize:  "driver.materialize",
	EventRolloutReward:      "rollout.reward",
	EventConcurrencyLimits:  "concurrency.limits",
	EventModelCall:          "model_call",
	EventMemorySample:       "memory.sample",
	EventRolloutDuration:    "rollout.duration",
	EventVerify:             "verify",
	EventServersActive:      "servers.active",
}

// EventRolloutResponse is what a run file's main-output row says of the model's response
// (its tokens, finish and function calls): made by the rollouts source, never decoded from a
// line (the event stream has no such event; its name is not in EventNames).
const EventRolloutResponse = numEventTypes

func (t EventType) String() string {
	if int(t) < len(EventNames) {
		return EventNames[t]
	}
	if t == EventRolloutResponse {
		return "(rollout response)"
	}
	if t == EventEvidence {
		return "(rollout evidence)"
	}
	return "invalid"
}

// Presence bits of rollout.size's optional fields.
const (
	HasInputItems uint8 = 1 << iota
	HasOutputItems
	HasTurns
	HasToolCalls
)

// ValueKind is the type of a resource attribute value.
type ValueKind uint8

const (
	ValueString ValueKind = iota + 1
	ValueInt
	ValueBool
)

// ResourceAttr is one attribute of a resource line.
type ResourceAttr struct {
	Key  []byte
	Kind ValueKind
	Str  []byte // ValueString, already cut at 256 bytes on a rune boundary
	Int  int64  // ValueInt
	Bool bool   // ValueBool
}

// NamedCount is one entry of http.pool.connects' `counts`.
type NamedCount struct {
	Name  []byte
	Count int64
}

// StatusCount is one entry of server.requests' `responses`.
type StatusCount struct {
	Code  int64 // validated: 100..599
	Count int64
}

// CancelledCount is one entry of server.requests' `cancelled`.
type CancelledCount struct {
	Route           []byte // raw, normalised by the aggregator
	ResponseStarted bool
	Count           int64
}

// ConcurrencyLimit is one entry of concurrency.limits' `limits`: the totals of one limit.
type ConcurrencyLimit struct {
	Component, LimitName []byte
	ServerName           []byte // nil when absent, null or empty
	Limit, Active        int64
	QueueDepth           int64
	AdmissionTimeouts    int64
	HasTimeouts          bool // admission_timeouts was given (a limit with an admission timeout)
	AdmissionCancelled   int64
}

// ServerMemory is one entry of memory.sample's `servers`: a server's process tree.
type ServerMemory struct {
	ServerName, ServerType []byte
	PID                    int64
	RSS, RSSPeak           int64
	PSS, PSSPeak           int64
	HasPSS, HasPSSPeak     bool
	Processes              int64
}

// HostMemory is memory.sample's `host`, in bytes.
type HostMemory struct {
	Usage, Available, Total, Peak int64
}

// Token types of model_call's `tokens`, indexing Event.Tokens.
const (
	TokenInput = iota
	TokenOutput
	TokenReasoning
	NumTokenTypes
)

// TokenTypeNames are the keys of model_call's `tokens` (the values of
// nemo.gym.model_call.token.type), indexed by the Token constants.
var TokenTypeNames = [NumTokenTypes]string{TokenInput: "input", TokenOutput: "output", TokenReasoning: "reasoning"}

// Token types of a rollout's response (gen_ai.token.type), indexing Event.ResponseTokens.
const (
	ResponseTokenInput = iota
	ResponseTokenOutput
	ResponseTokenReasoning
	ResponseTokenCachedInput
	NumResponseTokenTypes
)

// Event is one decoded line. The decoder reuses one Event per stream: every []byte points
// into the line or into the decoder's scratch space and is valid only until the next Decode.
// Only the fields of Type are meaningful. Every value has been validated against
// docs/receiver.md (types, ranges, enumerations); attribute normalisation (failure kinds, routes,
// string caps of names, ...) is the aggregator's job.
type Event struct {
	Type EventType

	// rollout.completed, rollout.health; rollout.reward (DispatchName, Reward, Masked; HasReward
	// always true)
	Outcome      []byte // one of the schema's outcome values (health: scored/failed)
	DispatchName []byte
	FailureClass []byte // nil when absent or null
	FailureKind  []byte
	FailureType  []byte
	Reward       float64 // NaN and +/-Inf possible
	HasReward    bool
	Masked       bool
	Verdict      []byte   // rollout.health
	Flagged      [][]byte // rollout.health flagged_checks, raw ids
	// rollout.completed of a run file's row: the rollout's identity in its run
	// (_ng_task_index, _ng_rollout_index), which pairs it with the same rollout of another run.
	// The aggregator maps neither.
	TaskIndex, RolloutIndex       int64
	HasTaskIndex, HasRolloutIndex bool

	// rollout.size
	SizeFields                                uint8 // Has* bits
	InputItems, OutputItems, Turns, ToolCalls int64

	// sandbox.*
	Provider []byte
	Delta    int64

	// every *_ms duration (finite, >= 0); event_loop.lag's lag_ms too
	DurationMS float64

	// server.startup_stage
	Stage      []byte
	ServerName []byte // also http.pool.queue / http.pool.connect
	ServerType []byte // nil when absent
	Worker     bool

	// http.pool.queue, http.pool.connect
	QueueConstraint []byte
	QueueOutcome    []byte
	ConnectOutcome  []byte

	// http.pool.connects
	Counts []NamedCount

	// event_loop.*
	Loop  []byte
	Tasks int64

	// gc.pause, gc.stats
	Generation                                           int64
	GCCollections, GCCollected, GCUncollectable, GCCount [3]int64

	// server.requests
	InFlight            int64
	UnhandledExceptions int64
	Responses           []StatusCount
	Cancelled           []CancelledCount
	OutboundInFlight    int64
	HasOutboundInFlight bool

	// driver.counts
	Offered, Resident, Active int64

	// driver.output_write
	Bytes int64

	// concurrency.limits
	Limits []ConcurrencyLimit

	// model_call (ServerName: nil when absent; DurationMS with HasDuration, also verify's)
	Dialect      []byte
	CallOutcome  []byte
	FinishReason []byte // nil when absent
	HasDuration  bool
	TTFTMS       float64
	HasTTFT      bool
	Tokens       [NumTokenTypes]int64
	HasTokens    [NumTokenTypes]bool

	// memory.sample
	Servers []ServerMemory
	Host    HostMemory
	HasHost bool

	// verify
	Completed bool

	// servers.active
	ServersActive int64

	// the rollout response of a run file's row (DispatchName, FinishReason, ToolCalls too)
	Model             []byte // nil when the response names none
	ResponseTokens    [NumResponseTokenTypes]int64
	HasResponseTokens [NumResponseTokenTypes]bool
	HasOutput         bool // ToolCalls counts the function calls of the response's output

	// EventEvidence: one item of a run file's rollout evidence
	Evidence *EvidenceItem

	// resource
	Attrs []ResourceAttr
}
