package prices

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// SourceName is the gym.source of the price series' resource: no Gym process's, so that the
// prices never share a series with Gym's.
const SourceName = "prices"

const instanceKey = "service.instance.id"

// Series are a table's price series (gym.token.price_per_million, one point per model and token
// type) on their own resource: gym.source prices, log.file.path the table's file and
// service.instance.id the collector's (two collectors' prices stay apart through a gateway;
// the rules take the highest of equal prices). Built once; each collection copies them.
type Series struct {
	rm     pmetric.ResourceMetrics
	points pmetric.NumberDataPointSlice
}

// NewSeries builds the price series of t, read from path, for the collector whose own
// resource (its telemetry's) is collector, in the scope of the component that exports them.
func NewSeries(t *Table, path string, collector pcommon.Resource, scopeName, scopeVersion string) *Series {
	rm := pmetric.NewResourceMetrics()
	attrs := rm.Resource().Attributes()
	attrs.PutStr(schema.ResourceSourceKey, SourceName)
	attrs.PutStr(schema.ResourceFilePathKey, string(normalize.Cap([]byte(strings.ToValidUTF8(path, "\uFFFD")), schema.DefaultStringMaxBytes)))
	if v, ok := collector.Attributes().Get(instanceKey); ok {
		attrs.PutStr(instanceKey, v.AsString())
	}
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scopeName)
	sm.Scope().SetVersion(scopeVersion)
	def := schema.Get(schema.GymTokenPricePerMillion)
	m := sm.Metrics().AppendEmpty()
	m.SetName(def.Name)
	m.SetDescription(def.Description)
	m.SetUnit(def.Unit)
	points := m.SetEmptyGauge().DataPoints()
	modelKey := schema.Attr(schema.AttrGenAiResponseModel).Key
	typeKey := schema.Attr(schema.AttrGenAiTokenType).Key
	for _, model := range t.Models() {
		p, _ := t.Price(model)
		for typ, v := range p {
			dp := points.AppendEmpty()
			dp.Attributes().PutStr(modelKey, model)
			dp.Attributes().PutStr(typeKey, Types[typ])
			dp.SetDoubleValue(v)
		}
	}
	return &Series{rm: rm, points: points}
}

// AppendTo adds the price series, stamped now, to md (one caller at a time: it stamps the
// points it copies).
func (s *Series) AppendTo(md pmetric.Metrics, now pcommon.Timestamp) {
	for i := 0; i < s.points.Len(); i++ {
		s.points.At(i).SetTimestamp(now)
	}
	s.rm.CopyTo(md.ResourceMetrics().AppendEmpty())
}

// Points is the number of points AppendTo adds.
func (s *Series) Points() int { return s.points.Len() }
