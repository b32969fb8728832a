package gymreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadatatest"
)

// rolloutsConfig reads Gym run files only (no other transport), collecting at shutdown.
func rolloutsConfig(include ...string) *Config {
	cfg := createDefaultConfig().(*Config)
	rc := cfg.Rollouts.GetOrInsertDefault()
	rc.Include = include
	cfg.CollectionInterval = time.Hour
	cfg.ExpireAfter = 2 * time.Hour
	cfg.Process.Enabled = false
	cfg.HealthChecks = []string{"lab_check"}
	cfg.IgnoredHealthChecks = []string{"agent_turn_hollow"}
	return cfg
}

// TestRolloutsGolden reads the sample runs of the top-level testdata/rollouts (written by make_samples.py in
// the shape Gym writes them) and compares the export with testdata/rollouts/<run>.expected.yaml.
// run1: a current Gym (manifest, _ng_* keys, ng_perf, sidecar with the failure kind in each of
// its three places, health report with string and object findings, masked and NaN rewards);
// run2: an older Gym (no _ng_* keys) with two main outputs, so its health report is a run of
// its own.
func TestRolloutsGolden(t *testing.T) {
	for _, name := range []string{"run1", "run2"} {
		t.Run(name, func(t *testing.T) {
			sink, stop := runReceiver(t, rolloutsConfig(filepath.Join("..", "..", "testdata", "rollouts", name, "*.jsonl")), componenttest.NewNopHost())
			stop()
			matchesGolden(t, filepath.Join("..", "..", "testdata", "rollouts", name+".expected.yaml"), lastMetrics(t, sink), pmetrictest.IgnoreMetricsOrder())
		})
	}
}

// rowTelemetry reads the receiver's row counters: accepted, and rejected by reason.
func rowTelemetry(t *testing.T, tt *componenttest.Telemetry) (accepted int64, rejected map[string]int64) {
	t.Helper()
	rejected = map[string]int64{}
	if m, err := tt.GetMetric("otelcol_receiver_gym_rollout_rows_accepted"); err == nil {
		for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
			accepted += dp.Value
		}
	}
	if m, err := tt.GetMetric("otelcol_receiver_gym_rollout_rows_rejected"); err == nil {
		for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
			r, _ := dp.Attributes.Value("reason")
			rejected[r.AsString()] += dp.Value
		}
	}
	return accepted, rejected
}

func scoredTotal(md pmetric.Metrics) int64 {
	var n int64
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if ms.At(j).Name() != "gym.rollout.completed_total" {
				continue
			}
			for k := range ms.At(j).Sum().DataPoints().Len() {
				dp := ms.At(j).Sum().DataPoints().At(k)
				if o, _ := dp.Attributes().Get("nemo.gym.rollout.outcome"); o.Str() == "scored" {
					n += dp.IntValue()
				}
			}
		}
	}
	return n
}

// Bad rows are rejected alone, each counted with its reason; the rows around them count.
func TestRolloutsBadRows(t *testing.T) {
	dir := t.TempDir()
	good := `{"response":{"output":[{"type":"message","content":[{"type":"output_text","text":"` + strings.Repeat("fine ", 300) + `"}]}]},"reward":1.0,"_ng_environment_server":"math"}`
	rows := []string{
		good,
		`["not", "an", "object"]`,
		good,
		`{"reward":"1.0"}`,
		"{\"_ng_environment_server\":\"ma\xfeth\",\"reward\":1}",
		`{"ng_perf":{"num_turns":2.5},"reward":1}`,
		`{"reward":1,"response":"` + strings.Repeat("x", 3000) + `"}`,
		`{"reward":1,"response":{"output":[}`,
		good,
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "eval.jsonl"), []byte(strings.Join(rows, "\n")+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rollout_verdicts.jsonl"), []byte(`{"verdict":"fine"}`+"\n"+`{"findings":[]}`+"\n"+`{"verdict":"healthy"}`+"\n"), 0o600))
	cfg := rolloutsConfig(filepath.Join(dir, "*.jsonl"))
	cfg.Rollouts.Get().MaxLineBytes = 2048

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	sink := new(consumertest.MetricsSink)
	r, err := NewFactory().CreateMetrics(context.Background(), metadatatest.NewSettings(tt), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, r.Shutdown(context.Background()))

	accepted, rejected := rowTelemetry(t, tt)
	assert.Equal(t, int64(4), accepted, "three main rows and one verdict")
	assert.Equal(t, map[string]int64{
		"not_object": 1, "wrong_type": 2, "invalid_utf8": 1, "too_long": 1, "invalid_json": 1,
		"invalid_value": 1, "missing_field": 1,
		"out_of_range": 0, "partial_line": 0, // every reason's series exists from the start
	}, rejected)
	assert.Equal(t, int64(3), scoredTotal(lastMetrics(t, sink)))
}

// With a storage extension, a restarted receiver counts each row once: nothing twice, nothing
// lost, whatever was written while it was down. The checkpoint keeps the totals too, so they go
// on across the restarts (4, then 4+2, then still 6).
func TestRolloutsStorageAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "eval.jsonl")
	row := `{"reward":0.5,"_ng_environment_server":"math","_ng_run_id":"r1","response":"` + strings.Repeat("a", 3000) + `"}` + "\n"
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat(row, 4)+row[:1000]), 0o600))
	st := storagetest.NewMem(nil)
	id := component.MustNewID("file_storage")
	host := storagetest.Host{id: st}
	newCfg := func() *Config {
		cfg := rolloutsConfig(filepath.Join(dir, "*.jsonl"))
		cfg.Rollouts.Get().Storage = &id
		return cfg
	}
	sink, stop := runReceiver(t, newCfg(), host)
	stop()
	assert.Equal(t, int64(4), scoredTotal(lastMetrics(t, sink)))

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, _ = f.WriteString(row[1000:] + row)
	require.NoError(t, f.Close())
	sink, stop = runReceiver(t, newCfg(), host)
	stop()
	assert.Equal(t, int64(6), scoredTotal(lastMetrics(t, sink)), "the row finished while down and the one after it, once, on top of the restored 4")

	sink, stop = runReceiver(t, newCfg(), host)
	stop()
	assert.Equal(t, int64(6), scoredTotal(lastMetrics(t, sink)), "nothing new: nothing counted again")
}
