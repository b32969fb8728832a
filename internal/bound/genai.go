package bound

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The GenAI conventions (genai_conventions): Gym's model calls also exported as the
// OpenTelemetry GenAI client metrics of semantic conventions v1.41.0 (docs/gym.md, "GenAI
// conventions"). After the Bounder's passes, each bounded point of gym.model_call.duration_ms,
// .ttft_ms and .tokens gets one derived point, appended to the same scope: the derived series
// are the Gym series renamed, so they are exactly as bounded (the same cardinality limit, the
// same overflow series) and count exactly what the Gym series count. The gym.* metrics stay as
// they are.

// genAIRule derives one GenAI instrument from one Gym instrument.
type genAIRule struct {
	from, to schema.InstrumentID
	// scale divides the boundaries, sum, min, max and exemplars: 1000 from ms to s (a
	// correctly rounded division, so 250 ms gives the double nearest 0.25 s), 1 for tokens.
	scale float64
}

var genAIRules = [...]genAIRule{
	{from: schema.GymModelCallDurationMs, to: schema.GenAiClientOperationDuration, scale: 1000},
	{from: schema.GymModelCallTtftMs, to: schema.GenAiClientOperationTimeToFirstChunk, scale: 1000},
	{from: schema.GymModelCallTokens, to: schema.GenAiClientTokenUsage, scale: 1},
}

// The values the derived points carry.
const (
	// genAIOperation: every Gym model call (chat completions, responses, messages) is a chat
	// completion in the conventions' terms; none of their other operations applies.
	genAIOperation = "chat"
	// genAIOther: the conventions' fallback value, for a dialect Gym could not tell.
	genAIOther = "_OTHER"
	// okOutcome is nemo.gym.model_call.outcome of a call that did not fail.
	okOutcome = "ok"
)

var (
	keyOperation = schema.Attr(schema.AttrGenAiOperationName).Key
	keyProvider  = schema.Attr(schema.AttrGenAiProviderName).Key
	keyErrorType = schema.Attr(schema.AttrErrorType).Key
	keyTokenType = schema.Attr(schema.AttrGenAiTokenType).Key
	keyGymTokens = schema.Attr(schema.AttrNemoGymModelCallTokenType).Key
	keyOutcome   = schema.Attr(schema.AttrNemoGymModelCallOutcome).Key
	keyDialect   = schema.Attr(schema.AttrNemoGymModelCallDialect).Key
	keyServer    = schema.Attr(schema.AttrNemoGymServerName).Key
)

// genAIProvider is gen_ai.provider.name of a dialect: the API flavour the call spoke, as the
// conventions advise for OpenAI- and Anthropic-compatible APIs (whoever serves the model).
func genAIProvider(dialect string) string {
	switch dialect {
	case "chat", "responses":
		return "openai"
	case "messages":
		return "anthropic"
	}
	return genAIOther
}

func init() {
	// The schema is generated: should metadata.yaml change what this file relies on, fail at
	// start rather than derive something else.
	for _, r := range genAIRules {
		from, to := schema.Get(r.from), schema.Get(r.to)
		if from.Kind != schema.KindHistogram || to.Kind != schema.KindHistogram || to.Source != "derived" {
			panic("bound: metadata.yaml: " + to.Name + " must be a derived histogram of the histogram " + from.Name)
		}
		for _, a := range []schema.AttrID{schema.AttrGenAiOperationName, schema.AttrGenAiProviderName, schema.AttrNemoGymServerName, schema.AttrNemoGymModelCallDialect} {
			if !declares(to, a) {
				panic("bound: metadata.yaml: " + to.Name + " does not declare " + schema.Attr(a).Key)
			}
		}
	}
	if !declares(schema.Get(schema.GenAiClientOperationDuration), schema.AttrErrorType) ||
		!declares(schema.Get(schema.GenAiClientTokenUsage), schema.AttrGenAiTokenType) {
		panic("bound: metadata.yaml: the GenAI instruments lack error.type or gen_ai.token.type")
	}
	dur := schema.Get(schema.GymModelCallDurationMs)
	for _, d := range []string{"chat", "responses", "messages"} {
		if !dur.Allows(attrAt(dur, schema.AttrNemoGymModelCallDialect), []byte(d)) {
			panic("bound: metadata.yaml: dialect " + d + " is gone: genAIProvider must follow")
		}
	}
}

func declares(in *schema.Instrument, a schema.AttrID) bool { return attrAt(in, a) >= 0 }

// attrAt is the position of attribute a in the instrument's attributes, -1 when it has none.
func attrAt(in *schema.Instrument, a schema.AttrID) int {
	for i := range in.Attrs {
		if in.Attrs[i].ID == a {
			return i
		}
	}
	return -1
}

func genAIRuleOf(id schema.InstrumentID) *genAIRule {
	for i := range genAIRules {
		if genAIRules[i].from == id {
			return &genAIRules[i]
		}
	}
	return nil
}

// deriveGenAI appends the GenAI metrics of every bounded model-call metric of md to its scope.
// It runs after pass 3: only the points that stay are derived, with their final values.
func deriveGenAI(md pmetric.Metrics) {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			n := ms.Len() // the derived metrics appended below are not sources
			for k := 0; k < n; k++ {
				m := ms.At(k)
				// A metric that is not processed (kind, unit or temporality unlike the schema's)
				// was passed on unbounded: nothing is derived from it.
				id, ok := processed(m)
				if !ok {
					continue
				}
				if r := genAIRuleOf(id); r != nil {
					r.derive(m, ms)
				}
			}
		}
	}
}

// derive appends to ms the metric derived from src, when one of its points is derived.
func (r *genAIRule) derive(src pmetric.Metric, ms pmetric.MetricSlice) {
	sdps := src.Histogram().DataPoints()
	var dps pmetric.HistogramDataPointSlice
	made := false
	for i := 0; i < sdps.Len(); i++ {
		sp := sdps.At(i)
		if !r.derives(sp.Attributes()) {
			continue
		}
		if !made {
			in := schema.Get(r.to)
			m := ms.AppendEmpty()
			m.SetName(in.Name)
			m.SetUnit(in.Unit)
			m.SetDescription(in.Description)
			h := m.SetEmptyHistogram()
			h.SetAggregationTemporality(src.Histogram().AggregationTemporality())
			dps = h.DataPoints()
			dps.EnsureCapacity(sdps.Len())
			made = true
		}
		dp := dps.AppendEmpty()
		r.attrs(sp.Attributes(), dp.Attributes())
		r.point(sp, dp)
	}
}

// derives reports whether a bounded point of r.from has a derived point:
//   - the tokens of types input and output: reasoning tokens are part of the output tokens in
//     the conventions (gen_ai.usage.reasoning.output_tokens is included in the output tokens,
//     as providers report them), so deriving them would count them twice; the tokens'
//     overflow series mixes the types, reasoning included, so it is not derived either;
//   - a duration whose outcome is known: without it a call that failed and one that did not
//     would be one derived series (a point from Gym always has one);
//   - every other point, the overflow series included.
func (r *genAIRule) derives(a pcommon.Map) bool {
	if isOverflow(a) {
		return r.from != schema.GymModelCallTokens
	}
	switch r.from {
	case schema.GymModelCallTokens:
		v, ok := a.Get(keyGymTokens)
		return ok && (v.Str() == "input" || v.Str() == "output")
	case schema.GymModelCallDurationMs:
		_, ok := a.Get(keyOutcome)
		return ok
	}
	return true
}

func isOverflow(a pcommon.Map) bool {
	v, ok := a.Get(schema.OverflowAttribute)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// attrs writes the derived point's attributes from the bounded point's (derives holds). The
// mapping is one to one: the Gym attributes stay (nemo.gym.server.name, and the dialect,
// which tells chat from responses, one provider), so one Gym series gives one derived series.
func (r *genAIRule) attrs(src, dst pcommon.Map) {
	if isOverflow(src) {
		setOverflow(dst)
		return
	}
	dst.EnsureCapacity(6)
	dialect, hasDialect := src.Get(keyDialect)
	dst.PutStr(keyOperation, genAIOperation)
	provider := genAIOther
	if hasDialect {
		provider = genAIProvider(dialect.Str())
	}
	dst.PutStr(keyProvider, provider)
	switch r.from {
	case schema.GymModelCallDurationMs:
		if o, _ := src.Get(keyOutcome); o.Str() != okOutcome {
			dst.PutStr(keyErrorType, o.Str())
		}
	case schema.GymModelCallTokens:
		t, _ := src.Get(keyGymTokens)
		dst.PutStr(keyTokenType, t.Str())
	}
	if s, ok := src.Get(keyServer); ok {
		dst.PutStr(keyServer, s.Str())
	}
	if hasDialect {
		dst.PutStr(keyDialect, dialect.Str())
	}
}

// point writes the derived point's values: times, flags and counts as they are; boundaries,
// sum, min, max and exemplar values divided by r.scale.
func (r *genAIRule) point(sp, dp pmetric.HistogramDataPoint) {
	dp.SetStartTimestamp(sp.StartTimestamp())
	dp.SetTimestamp(sp.Timestamp())
	dp.SetFlags(sp.Flags())
	dp.SetCount(sp.Count())
	sp.BucketCounts().CopyTo(dp.BucketCounts())
	sb, db := sp.ExplicitBounds(), dp.ExplicitBounds()
	db.EnsureCapacity(sb.Len())
	for i := 0; i < sb.Len(); i++ {
		db.Append(sb.At(i) / r.scale)
	}
	if sp.HasSum() {
		dp.SetSum(sp.Sum() / r.scale)
	}
	if sp.HasMin() {
		dp.SetMin(sp.Min() / r.scale)
	}
	if sp.HasMax() {
		dp.SetMax(sp.Max() / r.scale)
	}
	sp.Exemplars().CopyTo(dp.Exemplars())
	if r.scale == 1 {
		return
	}
	ex := dp.Exemplars()
	for i := 0; i < ex.Len(); i++ {
		e := ex.At(i)
		switch e.ValueType() {
		case pmetric.ExemplarValueTypeDouble:
			e.SetDoubleValue(e.DoubleValue() / r.scale)
		case pmetric.ExemplarValueTypeInt:
			e.SetDoubleValue(float64(e.IntValue()) / r.scale)
		}
	}
}
