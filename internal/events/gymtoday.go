package events

import (
	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// The events of Gym's newer releases: concurrency.limits, model_call and memory.sample carry
// objects and arrays of objects; their members are read by name with the same accessors, and
// the same rules, as the top-level fields (place names them in messages).
//
// Decisions where the event format is silent:
//   - An entry of `limits` or `servers` that is not an object is wrong_type; its unknown
//     members are ignored; a duplicate member is last-wins, as at the top level.
//   - Names (component, limit_name, server_name and server_type of a server entry) must be
//     non-empty strings, bounded by the aggregator (a server type outside the set is
//     `other`); server_name of a limit may be absent, null or empty (the limit belongs to no
//     server).
//   - model_call's dialect and outcome are required non-empty strings, bounded by the
//     aggregator (unknown, other); its server_name may be absent, null or empty (then
//     `unknown`, Gym's rule).
//   - A key of model_call's `tokens` other than input, output and reasoning is
//     invalid_value (nemo.gym.model_call.token.type is an enumeration); a null value is a
//     type not reported.
//   - A failed model call (outcome other than ok) records no tokens and no finish reason
//     even when the line gives them (Gym's rule); they are still checked.
//   - `available` is limit - active as given, negative when a limit shrank below what is
//     held; every count is an integer >= 0, a pid an integer within 0..2147483647.

// maxMembers is the most members an entry reader asks for.
const maxMembers = 8

// readMembers reads the members named in names of the object s (last occurrence wins; others
// ignored) into vals, in the order of names. Absent ones are left with kind None.
func (d *Decoder) readMembers(s *slot, names []string, vals *[maxMembers]slot) {
	*vals = [maxMembers]slot{}
	it := d.iter(s)
	var k slot
	for {
		v, ok := d.nextMember(&it, &k)
		if !ok || d.err != nil {
			return
		}
		key := d.line[k.start:k.end]
		if k.esc {
			key = d.str(&k)
		}
		for i, n := range names {
			if string(key) == n {
				vals[i] = v
				break
			}
		}
	}
}

// ---- concurrency.limits ----

var limitMembers = []string{"component", "limit_name", "server_name", "limit", "active", "queue_depth", "admission_timeouts", "admission_cancelled"}

func (d *Decoder) decodeLimits(ev *Event) {
	var m [maxMembers]slot
	d.eachObject(fkLimits, true, "an array of limits", limitMembers, &m, func(at func(member string) place) {
		var l ConcurrencyLimit
		l.Component = d.nameAt(at("component"), &m[0], true)
		l.LimitName = d.nameAt(at("limit_name"), &m[1], true)
		l.ServerName = d.optStringAt(at("server_name"), &m[2], true)
		l.Limit = d.integerAt(at("limit"), &m[3], true, true)
		l.Active = d.integerAt(at("active"), &m[4], true, true)
		l.QueueDepth = d.integerAt(at("queue_depth"), &m[5], true, true)
		l.AdmissionTimeouts, l.HasTimeouts = d.optIntegerAt(at("admission_timeouts"), &m[6], true, true)
		l.AdmissionCancelled = d.integerAt(at("admission_cancelled"), &m[7], true, true)
		if d.err == nil {
			ev.Limits = append(ev.Limits, l)
		}
	})
}

// ---- model_call ----

func (d *Decoder) decodeModelCall(ev *Event) {
	ev.ServerName = d.optString(fkServerName)
	ev.Dialect = d.name(fkDialect)
	ev.CallOutcome = d.name(fkOutcome)
	ev.DurationMS, ev.HasDuration = d.optDuration(fkDurationMS)
	ev.TTFTMS, ev.HasTTFT = d.optDuration(fkTTFTMS)
	ev.FinishReason = d.optString(fkFinishReason)
	if s, ok := d.container(fkTokens, gymjson.Object, false, "an object of token type to count"); ok {
		it := d.iter(s)
		var k slot
		for {
			v, ok := d.nextMember(&it, &k)
			if !ok || d.err != nil {
				break
			}
			key := d.str(&k)
			t := tokenType(key)
			if t < 0 {
				d.fail(ReasonInvalidValue, `field "tokens": key %s is not a token type (want input, output or reasoning)`, quote(key))
				return
			}
			// Last wins: a later null makes the type not reported again.
			ev.Tokens[t], ev.HasTokens[t] = d.optIntegerAt(place{field: "tokens", idx: -1, member: TokenTypeNames[t]}, &v, true, true)
		}
	}
}

func tokenType(key []byte) int {
	for i, n := range TokenTypeNames {
		if string(key) == n {
			return i
		}
	}
	return -1
}

// ---- memory.sample ----

var (
	serverMemoryMembers = []string{"server_name", "server_type", "pid", "rss", "pss", "rss_peak", "pss_peak", "processes"}
	hostMemoryMembers   = []string{"usage", "available", "total", "peak"}
)

// maxPID is the schema's bound of process.pid.
const maxPID = 1<<31 - 1

func (d *Decoder) decodeMemorySample(ev *Event) {
	var m [maxMembers]slot
	d.eachObject(fkServers, false, "an array of servers", serverMemoryMembers, &m, func(at func(member string) place) {
		var sm ServerMemory
		sm.ServerName = d.nameAt(at("server_name"), &m[0], true)
		sm.ServerType = d.nameAt(at("server_type"), &m[1], true)
		sm.PID = d.integerAt(at("pid"), &m[2], true, true)
		if d.err == nil && sm.PID > maxPID {
			d.fail(ReasonOutOfRange, "field %q: want a process id within 0..%d, got %s", at("pid").String(), maxPID, d.raw(&m[2]))
		}
		sm.RSS = d.integerAt(at("rss"), &m[3], true, true)
		sm.PSS, sm.HasPSS = d.optIntegerAt(at("pss"), &m[4], true, true)
		sm.RSSPeak = d.integerAt(at("rss_peak"), &m[5], true, true)
		sm.PSSPeak, sm.HasPSSPeak = d.optIntegerAt(at("pss_peak"), &m[6], true, true)
		sm.Processes = d.integerAt(at("processes"), &m[7], true, true)
		if d.err == nil {
			ev.Servers = append(ev.Servers, sm)
		}
	})
	if d.err != nil {
		return
	}
	if s, ok := d.container(fkHost, gymjson.Object, false, "an object {usage, available, total, peak}"); ok {
		d.readMembers(s, hostMemoryMembers, &m)
		at := func(member string) place { return place{field: "host", idx: -1, member: member} }
		h := &ev.Host
		h.Usage = d.integerAt(at("usage"), &m[0], true, true)
		h.Available = d.integerAt(at("available"), &m[1], true, true)
		h.Total = d.integerAt(at("total"), &m[2], true, true)
		h.Peak = d.integerAt(at("peak"), &m[3], true, true)
		ev.HasHost = d.err == nil
	}
}
