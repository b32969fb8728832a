package gymconsolereceiver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/receiver/gymconsolereceiver/internal/metadatatest"
)

// A console record's resource is bounded by the gymattrs rules the receiver runs: a 100 KiB
// service.name and nemo.run.id leave it cut at 256 bytes, each cut counted.
func TestLongResourceValuesCut(t *testing.T) {
	long := func(tag string) string { return tag + strings.Repeat("x", 100<<10) }
	line := `{"resource_metrics": [{"resource": {"attributes": {"service.name": "` + long("svc-") + `", "nemo.run.id": "` + long("run-") + `"}, "schema_url": ""}, "scope_metrics": [{"scope": {"name": "nemo.lens", "version": "0.3.0", "schema_url": "", "attributes": null}, "metrics": [{"name": "gym.rollout.completed_total", "description": "", "unit": "1", "data": {"data_points": [` +
		`{"attributes": {"nemo.gym.rollout.outcome": "scored", "nemo.gym.rollout.dispatch.name": "d0"}, "start_time_unix_nano": 1764615600000000000, "time_unix_nano": 1764615610000000000, "value": 3, "exemplars": []}` +
		`], "aggregation_temporality": 2, "is_monotonic": true}}], "schema_url": ""}], "schema_url": ""}]}` + "\n"
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gym.log"), []byte(line), 0o600))
	tt := newTelemetry(t)
	s, stop := start(t, filesConfig(filepath.Join(dir, "*.log")), metadatatest.NewSettings(tt))
	require.Eventually(t, func() bool { return len(s.metrics.AllMetrics()) == 1 }, 10*time.Second, 10*time.Millisecond)
	stop()
	ra := s.metrics.AllMetrics()[0].ResourceMetrics().At(0).Resource().Attributes().AsRaw()
	assert.Equal(t, long("svc-")[:256], ra["service.name"])
	assert.Equal(t, long("run-")[:256], ra["nemo.run.id"])
	assert.EqualValues(t, 3, point(t, s.metrics.AllMetrics()[0], "gym.rollout.completed_total", "nemo.gym.rollout.dispatch.name", "d0").IntValue())
	assert.EqualValues(t, 2, counter(tt, "otelcol_processor_gymattrs_resource_values_cut"))
}
