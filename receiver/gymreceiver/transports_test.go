package gymreceiver

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadata"
)

func retryTotal(md pmetric.Metrics) int64 {
	var n int64
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if ms.At(j).Name() == "gym.sandbox.create_retry_total" {
				for k := range ms.At(j).Sum().DataPoints().Len() {
					n += ms.At(j).Sum().DataPoints().At(k).IntValue()
				}
			}
		}
	}
	return n
}

func runReceiver(t *testing.T, cfg *Config, host component.Host) (*consumertest.MetricsSink, func()) {
	t.Helper()
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.MetricsSink)
	r, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), host))
	return sink, func() { require.NoError(t, r.Shutdown(context.Background())) }
}

// Lines sent over each transport right before shutdown are all in the last export.
func TestShutdownLosesNothing(t *testing.T) {
	const n = 3000
	body := strings.Repeat(`{"event":"sandbox.create_retry","provider":"p"}`+"\n", n)
	dir := t.TempDir()

	cfg := createDefaultConfig().(*Config)
	cfg.HTTP.GetOrInsertDefault().NetAddr.Endpoint = freeAddr(t)
	sock := filepath.Join(dir, "gym.sock")
	sc := cfg.Stream.GetOrInsertDefault()
	sc.Endpoint = sock
	fc := cfg.Files.GetOrInsertDefault()
	fc.Include = []string{filepath.Join(dir, "*.events.jsonl")}
	fc.StartAt = "beginning"
	sink, stop := runReceiver(t, cfg, storagetest.Host{})

	status, ans, _ := post(t, "http://"+cfg.HTTP.Get().NetAddr.Endpoint+"/v1/events", []byte(body), nil)
	require.Equal(t, 200, status)
	require.Equal(t, int64(n), ans.Accepted)
	c, err := net.Dial("unix", sock)
	require.NoError(t, err)
	_, err = c.Write([]byte(body))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.events.jsonl"), []byte(body), 0o600))
	stop() // the stream connection is still open, the file not yet polled
	_ = c.Close()

	assert.Equal(t, int64(3*n), retryTotal(lastMetrics(t, sink)))
}

// With a storage extension, a restarted receiver neither re-reads nor skips file lines.
func TestFilesStorageAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.events.jsonl")
	line := `{"event":"sandbox.create_retry","provider":"p"}` + "\n"
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat(line, 5)), 0o600))
	st := storagetest.NewMem(nil)
	id := component.MustNewID("file_storage")
	host := storagetest.Host{id: st}
	newCfg := func() *Config {
		cfg := createDefaultConfig().(*Config)
		fc := cfg.Files.GetOrInsertDefault()
		fc.Include = []string{filepath.Join(dir, "*.events.jsonl")}
		fc.Storage = &id
		return cfg
	}
	sink, stop := runReceiver(t, newCfg(), host)
	stop()
	assert.Zero(t, retryTotal(lastMetricsOrEmpty(sink)), "start_at end on the first start")

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, _ = f.WriteString(strings.Repeat(line, 3))
	require.NoError(t, f.Close())
	sink, stop = runReceiver(t, newCfg(), host)
	stop()
	assert.Equal(t, int64(3), retryTotal(lastMetrics(t, sink)), "written while down: read once")

	cfg := newCfg()
	missing := component.MustNewID("nope")
	cfg.Files.Get().Storage = &missing
	r, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, new(consumertest.MetricsSink))
	require.NoError(t, err)
	err = r.Start(context.Background(), host)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `files.storage: no extension "nope"`)
	require.NoError(t, r.Shutdown(context.Background()))

	// Named in the rollouts block alone, the error names that key.
	cfg = createDefaultConfig().(*Config)
	rc := cfg.Rollouts.GetOrInsertDefault()
	rc.Include = []string{filepath.Join(t.TempDir(), "*.jsonl")}
	rc.Storage = &missing
	cfg.Process.Enabled = false
	r, err = NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, new(consumertest.MetricsSink))
	require.NoError(t, err)
	err = r.Start(context.Background(), host)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `rollouts.storage: no extension "nope"`)
	require.NoError(t, r.Shutdown(context.Background()))
}

func lastMetricsOrEmpty(sink *consumertest.MetricsSink) pmetric.Metrics {
	all := sink.AllMetrics()
	if len(all) == 0 {
		return pmetric.NewMetrics()
	}
	return all[len(all)-1]
}
