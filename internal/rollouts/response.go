package rollouts

import (
	"math"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// A main-output row's response (response.*): the model's answer, most often with its token
// usage. Only the keys of the mapping are read; everything else, the output items' content
// included (megabytes for long agentic rollouts), is skipped as any unmapped value.
//
// The mapping records nothing for a value that is absent, null or not of the type it wants
// (a response that is not an object, a model that is not a string, a token count that is not
// a number): these keys are optional in every Gym version, and a rollout is counted whatever
// its response holds. A token count or latency that is a number but outside the instrument's
// domain (negative, fractional, beyond int64, an infinity) rejects the row, as a bad
// ng_perf count does: the file says something wrong, and the reason is counted. Which key of
// a response context is read how is in member, with the keys of every other context.

// lenientString reads a string into *dst; any other value is skipped and leaves *dst nil.
func (r *RowDecoder) lenientString(name string, slot int, dst *[]byte) bool {
	if r.buf[r.pos] != '"' {
		*dst = nil
		return r.skipValue()
	}
	return r.str(name, slot, dst)
}

// lenientObject reads an object of ctx; any other value is skipped and leaves ctx's values
// cleared (a duplicate key's last value wins, as everywhere).
func (r *RowDecoder) lenientObject(ctx context, row *Row) bool {
	row.clear(ctx)
	if r.buf[r.pos] != '{' {
		return r.skipValue()
	}
	r.pos++
	return r.object(ctx, row)
}

// lenientNumber reads a value that the mapping takes when it is a number: present is false
// for null, NaN and a value that is not a number (skipped); else r.num holds its token.
func (r *RowDecoder) lenientNumber() (present, ok bool) {
	if c := r.buf[r.pos]; c != 'n' && !gymjson.StartsNumber(c) {
		return false, r.skipValue()
	}
	if !r.token() {
		return false, false
	}
	return string(r.num) != "null" && string(r.num) != "NaN", true
}

// tokens reads a token count of spelling sp and type t: an integer >= 0 (by the events
// decoder's integer rule) is given; null, and a value that is not a number, give nothing.
func (r *RowDecoder) tokens(name string, row *Row, sp, t int) bool {
	row.usageHas[sp][t] = false
	present, ok := r.lenientNumber()
	if !present {
		return ok
	}
	return r.countToken(name, &row.usage[sp][t], &row.usageHas[sp][t])
}

// latency reads ng_perf.total_latency_ms: a finite number >= 0 is given; null, NaN and a
// value that is not a number give nothing.
func (r *RowDecoder) latency(row *Row) bool {
	row.HasLatency = false
	present, ok := r.lenientNumber()
	if !present {
		return ok
	}
	if !gymjson.IsNumber(r.num) {
		r.failf(ReasonInvalidJSON, "key %q: %q is not a number", "ng_perf.total_latency_ms", r.num)
		return false
	}
	f := gymjson.ParseFloat(r.num)
	if !(f >= 0 && f <= math.MaxFloat64) {
		r.failf(ReasonOutOfRange, "key %q: want a finite number >= 0, got %s", "ng_perf.total_latency_ms", r.num)
		return false
	}
	row.Latency, row.HasLatency = f+0, true // -0 is 0
	return true
}

// outputItems reads response.output: when it is an array, the items whose type is
// function_call are counted; any other value gives no output.
func (r *RowDecoder) outputItems(row *Row) bool {
	row.HasOutput, row.FunctionCalls = false, 0
	if r.buf[r.pos] != '[' {
		return r.skipValue()
	}
	r.pos++
	row.HasOutput = true
	return r.elements("response.output", func(c byte) bool {
		if c != '{' {
			return r.skipValue() // an item that is not an object is no call
		}
		r.pos++
		r.itemType = nil
		if !r.object(ctxOutputItem, row) {
			return false
		}
		if string(r.itemType) == functionCall {
			row.FunctionCalls++
		}
		return true
	})
}

const functionCall = "function_call"
