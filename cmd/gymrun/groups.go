package main

// Failure groups: the failed attempts compare watches for infrastructure causes, by the
// normalised failure kind, else class, of each failed row.

// The groups, in the order reports list them; a failure of none of them is groupOther.
const (
	groupTransport = "transport"
	groupTimeouts  = "timeouts"
	groupProvider  = "provider"
	groupJudge     = "judge"
	groupOther     = "other"
)

var failureGroups = []string{groupTransport, groupTimeouts, groupProvider, groupJudge}

// groupOfKind: Gym's registered failure kinds that name an infrastructure failure. A timeout
// is a timeout whatever timed out (transport_timeout too).
var groupOfKind = map[string]string{
	"transport_unreachable":    groupTransport,
	"transport_peer_drop":      groupTransport,
	"transport_local_resource": groupTransport,
	"transport_timeout":        groupTimeouts,
	"agent_timeout":            groupTimeouts,
	"provider_unavailable":     groupProvider,
	"provider_quota_exhausted": groupProvider,
	"provider_oom_killed":      groupProvider,
	"judge_failed":             groupJudge,
	"judge_unparseable":        groupJudge,
}

// groupOfClass: the failure classes that name one, for a row whose kind names none.
var groupOfClass = map[string]string{
	"timeout":           groupTimeouts,
	"judge_failed":      groupJudge,
	"judge_unparseable": groupJudge,
}

// failureGroup is the group of a failed attempt with the normalised class and kind: the kind's
// when the table has it, else the class's, else groupOther.
func failureGroup(class, kind string) string {
	if g, ok := groupOfKind[kind]; ok {
		return g
	}
	if g, ok := groupOfClass[class]; ok {
		return g
	}
	return groupOther
}
