package gymreceiver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadata"
)

const priceMetric = "gym.token.price_per_million"

// priceResources are the resources of md that carry price points: their attributes and their
// points (model/type -> USD per million tokens).
func priceResources(md []pmetric.Metrics) (res []map[string]any, points []map[string]float64) {
	for _, m := range md {
		for i := 0; i < m.ResourceMetrics().Len(); i++ {
			rm := m.ResourceMetrics().At(i)
			got := map[string]float64{}
			for j := 0; j < rm.ScopeMetrics().Len(); j++ {
				ms := rm.ScopeMetrics().At(j).Metrics()
				for k := 0; k < ms.Len(); k++ {
					if ms.At(k).Name() != priceMetric {
						continue
					}
					dps := ms.At(k).Gauge().DataPoints()
					for d := 0; d < dps.Len(); d++ {
						a := dps.At(d).Attributes().AsRaw()
						got[a["gen_ai.response.model"].(string)+"/"+a["gen_ai.token.type"].(string)] = dps.At(d).DoubleValue()
					}
				}
			}
			if len(got) > 0 {
				res = append(res, rm.Resource().Attributes().AsRaw())
				points = append(points, got)
			}
		}
	}
	return res, points
}

// The table of testdata/prices.yaml, as the series carry it: cached_input at input's price and
// reasoning at output's where the table gives none.
var wantPrices = map[string]float64{
	"model-a/input": 1.5, "model-a/output": 6, "model-a/cached_input": 0.5, "model-a/reasoning": 6,
	"model-b/input": 0.2, "model-b/output": 0.8, "model-b/cached_input": 0.2, "model-b/reasoning": 1,
}

// The price series go out at every collection on a resource of their own, beside Gym's series
// and never on one of Gym's resources; their identity is the collector's instance and the file.
func TestPricesExported(t *testing.T) {
	set := receivertest.NewNopSettings(metadata.Type)
	set.Resource.Attributes().PutStr("service.instance.id", "collector-1")
	set.Resource.Attributes().PutStr("service.name", "otelcol-gym")
	cfg := createDefaultConfig().(*Config)
	addr := freeAddr(t)
	cfg.HTTP.GetOrInsertDefault().NetAddr.Endpoint = addr
	cfg.Prices = "testdata/prices.yaml"
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.MetricsSink)
	stop := started(t, set, cfg, sink)
	status, ans, _ := post(t, "http://"+addr+"/v1/events", []byte(`{"event":"rollout.completed","outcome":"scored","dispatch_name":"d0","reward":1}`+"\n"), nil)
	require.Equal(t, http.StatusOK, status, "%+v", ans)
	stop()

	res, points := priceResources(sink.AllMetrics())
	require.Len(t, res, 1, "one collection (at shutdown), one price resource")
	assert.Equal(t, map[string]any{"gym.source": "prices", "log.file.path": "testdata/prices.yaml", "service.instance.id": "collector-1"}, res[0])
	assert.Equal(t, wantPrices, points[0])
	require.Equal(t, 1, len(sink.AllMetrics()))
	md := sink.AllMetrics()[0]
	assert.Equal(t, 2, md.ResourceMetrics().Len(), "Gym's default resource and the prices'")
	assert.Equal(t, 2+len(wantPrices), md.DataPointCount(), "the rollout (completed and rewarded) and the prices")
}

// No table, no price series.
func TestNoPricesNoSeries(t *testing.T) {
	url, sink, stop := startReceiver(t, nil)
	status, _, _ := post(t, url, []byte(`{"event":"rollout.completed","outcome":"scored","dispatch_name":"d0","reward":1}`+"\n"), nil)
	require.Equal(t, http.StatusOK, status)
	stop()
	require.NotEmpty(t, sink.AllMetrics())
	res, _ := priceResources(sink.AllMetrics())
	assert.Empty(t, res)
}

// A receiver with prices alone exports them, with no Gym input at all.
func TestPricesAlone(t *testing.T) {
	cfg, err := loadConfig(t, "prices")
	require.NoError(t, err, "prices alone is a configuration")
	assert.False(t, cfg.HTTP.HasValue())
	sink := new(consumertest.MetricsSink)
	stop := started(t, receivertest.NewNopSettings(metadata.Type), cfg, sink)
	stop()
	res, points := priceResources(sink.AllMetrics())
	require.Len(t, res, 1)
	assert.Equal(t, map[string]any{"gym.source": "prices", "log.file.path": "testdata/prices.yaml"}, res[0], "no instance id when the collector has none")
	assert.Equal(t, wantPrices, points[0])
}

// A table that cannot be read stops the receiver from being made, with the file and why.
func TestBadPricesRefused(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.HTTP.GetOrInsertDefault().NetAddr.Endpoint = freeAddr(t)
	cfg.Prices = "testdata/prices-bad.yaml"
	_, err := NewFactory().CreateMetrics(t.Context(), receivertest.NewNopSettings(metadata.Type), cfg, new(consumertest.MetricsSink))
	require.ErrorContains(t, err, `prices: testdata/prices-bad.yaml: models: "model-a": input: -1 is not a price`)
}
