package events

import (
	"strconv"
	"strings"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The enumerations the decoder checks: the schema's sets of values.

// enum is an enumerated set of string values, from the schema.
type enum struct {
	vals [][]byte
	list string // "a, b, c" for messages
}

func makeEnum(what string, vals []string) enum {
	if len(vals) == 0 {
		panic("protocol: the schema gives no values for " + what)
	}
	e := enum{list: strings.Join(vals, ", ")}
	for _, v := range vals {
		e.vals = append(e.vals, []byte(v))
	}
	return e
}

// The enumerations the decoder checks, built once from the schema.
var (
	completedOutcomes = makeEnum("outcome", schema.Get(schema.GymRolloutCompletedTotal).AttrValues(schema.AttrNemoGymRolloutOutcome))
	healthOutcomes    = makeEnum("health outcome", schema.Get(schema.GymRolloutHealthVerdictTotal).AttrValues(schema.AttrNemoGymRolloutOutcome))
	verdicts          = makeEnum("verdict", schema.Attr(schema.AttrNemoGymHealthVerdict).Values)
	queueConstraints  = makeEnum("queue_constraint", schema.Attr(schema.AttrNemoGymHttpConnectionPoolQueueConstraint).Values)
	queueOutcomes     = makeEnum("queue_outcome", schema.Attr(schema.AttrNemoGymHttpConnectionPoolQueueOutcome).Values)
	connectOutcomes   = makeEnum("connect outcome", schema.Get(schema.GymHttpConnectionPoolConnectDurationMs).AttrValues(schema.AttrNemoGymHttpConnectionPoolConnectOutcome))

	generations    = schema.Attr(schema.AttrNemoGymGcGeneration).IntValues
	generationList = func() string {
		s := make([]string, len(generations))
		for i, g := range generations {
			s[i] = strconv.FormatInt(g, 10)
		}
		return strings.Join(s, ", ")
	}()
	statusMin = schema.Attr(schema.AttrHttpResponseStatusCode).Min
	statusMax = schema.Attr(schema.AttrHttpResponseStatusCode).Max
)

// enum returns required string field k, one of e's values. The result is the schema's own
// copy of the value.
func (d *Decoder) enum(k int, e *enum) []byte {
	if d.err != nil {
		return nil
	}
	s, ok := d.get(k)
	if !ok {
		d.missing(keyNames[k])
		return nil
	}
	if s.kind != gymjson.String {
		d.wrongType(k, "one of "+e.list, s)
		return nil
	}
	v := d.line[s.start:s.end]
	if s.esc {
		v = d.str(s)
	}
	for _, a := range e.vals {
		if string(v) == string(a) {
			return a[:len(a):len(a)]
		}
	}
	d.fail(ReasonInvalidValue, "field %q: %s is not one of %s", keyNames[k], quote(v), e.list)
	return nil
}

// generation returns required field k, one of the schema's GC generations.
func (d *Decoder) generation(k int) int64 {
	if d.err != nil {
		return 0
	}
	s, ok := d.get(k)
	if !ok {
		d.missing(keyNames[k])
		return 0
	}
	v, st := d.intOf(s, false)
	if st != gymjson.IntOK {
		d.intFail(fieldLabel(keyNames[k]), s, false, st)
		return 0
	}
	for _, g := range generations {
		if v == g {
			return v
		}
	}
	d.fail(ReasonInvalidValue, "field %q: %d is not one of %s", keyNames[k], v, generationList)
	return 0
}
