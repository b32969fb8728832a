package aggregate

import (
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// rewarded counts the reward of a scored rollout.completed or of a rollout.reward: +1 in its
// range, nothing for NaN (unscored).
func (r *Resource) rewarded(a *Aggregator, sk *Sink, ev *events.Event) {
	if rng, scored := normalize.RewardRange(ev.Reward); scored {
		k := &sk.kb
		k.begin(schema.GymRolloutRewardedTotal).str(rng).str(ev.DispatchName).bool(ev.Masked)
		r.series(a, sk, k).val++
	}
}

// apply records one decoded event. The caller holds r.mu.
func (r *Resource) apply(a *Aggregator, sk *Sink, ev *events.Event) {
	k := &sk.kb
	r.touched = true
	switch ev.Type {
	case events.EventRolloutCompleted:
		k.begin(schema.GymRolloutCompletedTotal).str(ev.Outcome).str(ev.DispatchName)
		if string(ev.Outcome) == schema.ScoredOutcome {
			k.absent().absent().absent()
		} else {
			k.str(ev.FailureClass).str(ev.FailureKind).str(ev.FailureType)
		}
		r.series(a, sk, k).val++
		if string(ev.Outcome) == schema.ScoredOutcome && ev.HasReward {
			r.rewarded(a, sk, ev)
		}
	case events.EventRolloutReward:
		r.rewarded(a, sk, ev)
	case events.EventRolloutHealth:
		k.begin(schema.GymRolloutHealthVerdictTotal).str(ev.Verdict).str(ev.Outcome)
		r.series(a, sk, k).val++
		r.flagged(a, sk, ev)
	case events.EventRolloutSize:
		r.sizeSample(a, sk, ev.SizeFields&events.HasInputItems != 0, schema.GymDriverRolloutInputItems, ev.InputItems)
		r.sizeSample(a, sk, ev.SizeFields&events.HasOutputItems != 0, schema.GymDriverRolloutOutputItems, ev.OutputItems)
		r.sizeSample(a, sk, ev.SizeFields&events.HasTurns != 0, schema.GymDriverRolloutTurns, ev.Turns)
		r.sizeSample(a, sk, ev.SizeFields&events.HasToolCalls != 0, schema.GymDriverRolloutToolCalls, ev.ToolCalls)
	case events.EventSandboxActive:
		k.begin(schema.GymSandboxActive).str(ev.Provider)
		r.series(a, sk, k).val += ev.Delta
	case events.EventSandboxStartup:
		r.histogram(a, sk, k.begin(schema.GymSandboxStartupDurationMs).str(ev.Provider), ev.DurationMS)
	case events.EventSandboxExec:
		r.histogram(a, sk, k.begin(schema.GymSandboxExecDurationMs).str(ev.Provider), ev.DurationMS)
	case events.EventSandboxCreateRetry:
		k.begin(schema.GymSandboxCreateRetryTotal).str(ev.Provider)
		r.series(a, sk, k).val++
	case events.EventServerStartupStage:
		k.begin(schema.GymServerStartupStageDurationMs).str(ev.Stage).str(ev.ServerName).str(ev.ServerType).bool(ev.Worker)
		r.histogram(a, sk, k, ev.DurationMS)
	case events.EventHTTPPoolQueue:
		k.begin(schema.GymHttpConnectionPoolQueueDurationMs).str(ev.QueueConstraint).str(ev.QueueOutcome).str(ev.ServerName)
		r.histogram(a, sk, k, ev.DurationMS)
	case events.EventHTTPPoolConnect:
		k.begin(schema.GymHttpConnectionPoolConnectDurationMs).str(ev.ConnectOutcome).str(ev.ServerName)
		r.histogram(a, sk, k, ev.DurationMS)
	case events.EventHTTPPoolConnects:
		r.seq++
		for i := range ev.Counts {
			r.snapshot(a, sk, k.begin(schema.GymHttpConnectionPoolConnectTotal).str(ev.Counts[i].Name), ev.Counts[i].Count)
		}
		r.commitSnapshots(a, sk)
	case events.EventEventLoopLag:
		r.histogram(a, sk, k.begin(schema.GymEventLoopLagMs).str(ev.Loop), ev.DurationMS)
	case events.EventEventLoopTasks:
		r.gauge(a, sk, k.begin(schema.GymEventLoopTasks).str(ev.Loop), ev.Tasks)
	case events.EventGCPause:
		r.histogram(a, sk, k.begin(schema.GymGcPauseDurationMs).int(ev.Generation), ev.DurationMS)
	case events.EventGCStats:
		r.seq++
		for g := range int64(3) {
			r.snapshot(a, sk, k.begin(schema.GymGcCollectionsTotal).int(g), ev.GCCollections[g])
			r.snapshot(a, sk, k.begin(schema.GymGcCollectedTotal).int(g), ev.GCCollected[g])
			r.snapshot(a, sk, k.begin(schema.GymGcUncollectableTotal).int(g), ev.GCUncollectable[g])
			r.gauge(a, sk, k.begin(schema.GymGcCount).int(g), ev.GCCount[g])
		}
		r.commitSnapshots(a, sk)
	case events.EventServerRequests:
		r.seq++
		r.snapshot(a, sk, k.begin(schema.GymServerRequestsInFlight), ev.InFlight)
		r.snapshot(a, sk, k.begin(schema.GymServerRequestsUnhandledExceptionsTotal), ev.UnhandledExceptions)
		for i := range ev.Responses {
			r.snapshot(a, sk, k.begin(schema.GymServerResponsesTotal).int(ev.Responses[i].Code), ev.Responses[i].Count)
		}
		for i := range ev.Cancelled {
			c := &ev.Cancelled[i]
			k.begin(schema.GymServerRequestsCancelledTotal).str(c.Route).str(normalize.Phase(c.ResponseStarted))
			r.snapshot(a, sk, k, c.Count)
		}
		if ev.HasOutboundInFlight {
			r.snapshot(a, sk, k.begin(schema.GymHttpClientRequestsInFlight), ev.OutboundInFlight)
		}
		r.commitSnapshots(a, sk)
	case events.EventDriverCounts:
		if ev.Offered == 0 {
			return
		}
		r.seq++
		r.snapshot(a, sk, k.begin(schema.GymDriverRolloutsOfferedTotal), ev.Offered)
		r.snapshot(a, sk, k.begin(schema.GymDriverRolloutsResident), ev.Resident)
		r.snapshot(a, sk, k.begin(schema.GymDriverRolloutsActive), ev.Active)
		r.commitSnapshots(a, sk)
	case events.EventDriverAdmission:
		r.histogram(a, sk, k.begin(schema.GymDriverAdmissionDurationMs), ev.DurationMS)
	case events.EventDriverOutputWrite:
		r.histogram(a, sk, k.begin(schema.GymDriverOutputWriteDurationMs), ev.DurationMS)
		r.histogram(a, sk, k.begin(schema.GymDriverOutputWriteBytes), float64(ev.Bytes))
	case events.EventDriverMaterialize:
		r.histogram(a, sk, k.begin(schema.GymDriverMaterializeDurationMs), ev.DurationMS)
	case events.EventConcurrencyLimits:
		r.seq++
		for i := range ev.Limits {
			r.limit(a, sk, &ev.Limits[i])
		}
		r.commitSnapshots(a, sk)
	case events.EventModelCall:
		r.modelCall(a, sk, ev)
	case events.EventMemorySample:
		for i := range ev.Servers {
			r.serverMemory(a, sk, &ev.Servers[i])
		}
		if ev.HasHost {
			r.gauge(a, sk, k.begin(schema.GymHostMemoryUsage), ev.Host.Usage)
			r.gauge(a, sk, k.begin(schema.GymHostMemoryAvailable), ev.Host.Available)
			r.gauge(a, sk, k.begin(schema.GymHostMemoryTotal), ev.Host.Total)
			r.gauge(a, sk, k.begin(schema.GymHostMemorySampledPeak), ev.Host.Peak)
		}
	case events.EventRolloutDuration:
		r.histogram(a, sk, k.begin(schema.GymRolloutDurationMs), ev.DurationMS)
	case events.EventVerify:
		if ev.HasDuration {
			r.histogram(a, sk, k.begin(schema.GymVerifyDurationMs), ev.DurationMS)
		}
		r.verified(r.series(a, sk, k.begin(schema.GymVerifySuccessRate)), ev.Completed)
	case events.EventServersActive:
		r.gauge(a, sk, k.begin(schema.GymServersActive), ev.ServersActive)
	case events.EventRolloutResponse:
		r.rolloutResponse(a, sk, ev)
	case events.EventEvidence:
		r.evidence(a, sk, ev.Evidence)
	}
}

// responseTokenTypes are the gen_ai.token.type values, indexed as events.ResponseTokens.
var responseTokenTypes = func() (out [events.NumResponseTokenTypes][]byte) {
	vals := schema.Attr(schema.AttrGenAiTokenType).Values // input, output, reasoning, cached_input
	for i := range out {
		out[i] = []byte(vals[i])
	}
	return out
}()

// rolloutResponse records what a run file's row says of its response: its finish, one
// sample per token type given, and its function calls when the output is a list.
func (r *Resource) rolloutResponse(a *Aggregator, sk *Sink, ev *events.Event) {
	k := &sk.kb
	r.series(a, sk, k.begin(schema.GymRolloutFinishTotal).str(ev.FinishReason).str(ev.Model).str(ev.DispatchName)).val++
	for t := range events.NumResponseTokenTypes {
		if ev.HasResponseTokens[t] {
			r.histogram(a, sk, k.begin(schema.GymRolloutTokens).str(responseTokenTypes[t]).str(ev.Model).str(ev.DispatchName), float64(ev.ResponseTokens[t]))
		}
	}
	if ev.HasOutput {
		r.histogram(a, sk, k.begin(schema.GymRolloutToolCalls).str(ev.DispatchName), float64(ev.ToolCalls))
	}
}

// limit records one entry of a concurrency.limits snapshot: entries whose attributes
// normalise alike are summed (snapshot), available is limit - active.
func (r *Resource) limit(a *Aggregator, sk *Sink, l *events.ConcurrencyLimit) {
	k := &sk.kb
	attrs := func(id schema.InstrumentID) *keyBuilder {
		return k.begin(id).str(l.Component).str(l.LimitName).str(l.ServerName)
	}
	r.snapshot(a, sk, attrs(schema.GymConcurrencyLimit), l.Limit)
	r.snapshot(a, sk, attrs(schema.GymConcurrencyActive), l.Active)
	r.snapshot(a, sk, attrs(schema.GymConcurrencyAvailable), l.Limit-l.Active)
	r.snapshot(a, sk, attrs(schema.GymConcurrencyQueueDepth), l.QueueDepth)
	if l.HasTimeouts {
		r.snapshot(a, sk, attrs(schema.GymConcurrencyAdmissionTimeoutsTotal), l.AdmissionTimeouts)
	}
	r.snapshot(a, sk, attrs(schema.GymConcurrencyAdmissionCancelledTotal), l.AdmissionCancelled)
}

// Values of the model-call and memory attributes the aggregator writes itself.
var (
	modelCallOK       = []byte("ok")
	unknownServerName = []byte("unknown")
	memoryRSS         = []byte(schema.Attr(schema.AttrMemoryType).Values[0])
	memoryPSS         = []byte(schema.Attr(schema.AttrMemoryType).Values[1])
	tokenTypes        = func() (out [events.NumTokenTypes][]byte) {
		for i, n := range events.TokenTypeNames {
			out[i] = []byte(n)
		}
		return out
	}()
)

// modelCall records one model_call by Gym's rules: the duration when known, TTFT when
// streamed, and for a call that succeeded one token sample per type reported and its finish
// reason (a failed call records neither).
func (r *Resource) modelCall(a *Aggregator, sk *Sink, ev *events.Event) {
	k := &sk.kb
	server := ev.ServerName
	if len(server) == 0 {
		server = unknownServerName
	}
	if ev.HasDuration {
		r.histogram(a, sk, k.begin(schema.GymModelCallDurationMs).str(server).str(ev.Dialect).str(ev.CallOutcome), ev.DurationMS)
	}
	if ev.HasTTFT {
		r.histogram(a, sk, k.begin(schema.GymModelCallTtftMs).str(server).str(ev.Dialect), ev.TTFTMS)
	}
	if string(ev.CallOutcome) != string(modelCallOK) {
		return
	}
	for t := range events.NumTokenTypes {
		if ev.HasTokens[t] {
			r.histogram(a, sk, k.begin(schema.GymModelCallTokens).str(server).str(ev.Dialect).str(tokenTypes[t]), float64(ev.Tokens[t]))
		}
	}
	if len(ev.FinishReason) > 0 {
		r.series(a, sk, k.begin(schema.GymModelCallFinishTotal).str(server).str(ev.Dialect).str(ev.FinishReason)).val++
	}
}

// serverMemory records the latest sample of one server's process tree.
func (r *Resource) serverMemory(a *Aggregator, sk *Sink, m *events.ServerMemory) {
	k := &sk.kb
	mem := func(id schema.InstrumentID, typ []byte, v int64) {
		r.gauge(a, sk, k.begin(id).str(m.ServerName).str(m.ServerType).int(m.PID).str(typ), v)
	}
	mem(schema.GymServerMemoryUsage, memoryRSS, m.RSS)
	mem(schema.GymServerMemorySampledPeak, memoryRSS, m.RSSPeak)
	if m.HasPSS {
		mem(schema.GymServerMemoryUsage, memoryPSS, m.PSS)
	}
	if m.HasPSSPeak {
		mem(schema.GymServerMemorySampledPeak, memoryPSS, m.PSSPeak)
	}
	r.gauge(a, sk, k.begin(schema.GymServerProcesses).str(m.ServerName).str(m.ServerType).int(m.PID), m.Processes)
}

// verified counts one verification in the success-rate series, which keeps the two counts
// it is the ratio of (count: verifications, val: those completed) since the process's first.
func (r *Resource) verified(s *series, completed bool) {
	s.count++
	if completed {
		s.val++
	}
	s.dval, s.hasVal = float64(s.val)/float64(s.count), true
}

func (r *Resource) histogram(a *Aggregator, sk *Sink, k *keyBuilder, v float64) {
	r.series(a, sk, k).record(k.id, v)
}

func (r *Resource) gauge(a *Aggregator, sk *Sink, k *keyBuilder, v int64) {
	s := r.series(a, sk, k)
	s.val, s.hasVal = v, true
}

func (r *Resource) sizeSample(a *Aggregator, sk *Sink, present bool, id schema.InstrumentID, v int64) {
	if present {
		r.histogram(a, sk, sk.kb.begin(id), float64(v))
	}
}

// flagged counts each distinct check a rollout.health line flags, after normalisation;
// ignored checks are matched on the raw id.
func (r *Resource) flagged(a *Aggregator, sk *Sink, ev *events.Event) {
	distinct := sk.checks[:0]
outer:
	for _, raw := range ev.Flagged {
		if a.cfg.Registry.IgnoredHealthCheck(raw) {
			continue
		}
		c := a.cfg.Registry.HealthCheck(raw)
		for _, d := range distinct {
			if string(d) == string(c) {
				continue outer
			}
		}
		distinct = append(distinct, c)
	}
	for _, c := range distinct {
		sk.kb.begin(schema.GymRolloutHealthFlaggedTotal).str(c).str(ev.Outcome)
		r.series(a, sk, &sk.kb).val++
	}
	clear(distinct)
	sk.checks = distinct[:0]
}
