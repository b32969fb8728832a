package gymreceiver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadatatest"
)

var storageID = component.MustNewID("file_storage")

func storageHost(st *storagetest.Mem) storagetest.Host {
	return storagetest.Host{storageID: st}
}

// appendWhileRead appends unit to path in 40 writes a millisecond apart (the i-th repeats it
// base+i times), in the background, as a Gym process writes while the receiver reads; written
// waits for the last write, closes the file and returns how many units were written.
func appendWhileRead(t *testing.T, path, unit string, base int) (written func() int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	done := make(chan int)
	go func() {
		n := 0
		for i := range 40 {
			_, _ = f.WriteString(strings.Repeat(unit, base+i))
			n += base + i
			time.Sleep(time.Millisecond)
		}
		done <- n
	}()
	return func() int {
		n := <-done
		require.NoError(t, f.Close())
		return n
	}
}

// sumPoint finds the data point of a sum metric (any resource, any attributes).
func sumPoint(md pmetric.Metrics, name string) (pmetric.NumberDataPoint, bool) {
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if m := ms.At(j); m.Name() == name && m.Sum().DataPoints().Len() > 0 {
				return m.Sum().DataPoints().At(0), true
			}
		}
	}
	return pmetric.NumberDataPoint{}, false
}

// A graceful restart with storage resets nothing: every series keeps its start time and value,
// and an up-down sum built from +1/-1 deltas (gym.sandbox.active) goes on from where it was.
// Through the receiver's storage key and through the older files.storage spelling.
func TestRestartKeepsEverySeries(t *testing.T) {
	for _, alias := range []bool{false, true} {
		t.Run(map[bool]string{false: "storage", true: "files.storage"}[alias], func(t *testing.T) {
			st := storagetest.NewMem(nil)
			dir := t.TempDir()
			newCfg := func() *Config {
				cfg := createDefaultConfig().(*Config)
				cfg.HTTP.GetOrInsertDefault().NetAddr.Endpoint = freeAddr(t)
				if alias {
					fc := cfg.Files.GetOrInsertDefault()
					fc.Include = []string{filepath.Join(dir, "*.jsonl")}
					fc.Storage = &storageID
				} else {
					cfg.Storage = &storageID
				}
				return cfg
			}
			resource := `{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"r0","process.pid":42}}` + "\n"
			cfg := newCfg()
			sink, stop := runReceiver(t, cfg, storageHost(st))
			status, _, _ := post(t, "http://"+cfg.HTTP.Get().NetAddr.Endpoint+"/v1/events", []byte(resource+
				`{"event":"sandbox.active","provider":"docker","delta":1}`+"\n"+
				`{"event":"sandbox.active","provider":"docker","delta":1}`+"\n"+
				`{"event":"sandbox.create_retry","provider":"docker"}`+"\n"), nil)
			require.Equal(t, 200, status)
			stop()
			first := lastMetrics(t, sink)
			active1, ok := sumPoint(first, "gym.sandbox.active")
			require.True(t, ok)
			retry1, _ := sumPoint(first, "gym.sandbox.create_retry_total")
			require.Equal(t, int64(2), active1.IntValue())

			time.Sleep(10 * time.Millisecond) // a restart later
			cfg = newCfg()
			sink, stop = runReceiver(t, cfg, storageHost(st))
			status, _, _ = post(t, "http://"+cfg.HTTP.Get().NetAddr.Endpoint+"/v1/events", []byte(resource+
				`{"event":"sandbox.active","provider":"docker","delta":-1}`+"\n"), nil)
			require.Equal(t, 200, status)
			stop()
			second := lastMetrics(t, sink)
			active2, ok := sumPoint(second, "gym.sandbox.active")
			require.True(t, ok)
			assert.Equal(t, int64(1), active2.IntValue(), "2 sandboxes, then one ended after the restart")
			assert.Equal(t, active1.StartTimestamp(), active2.StartTimestamp(), "no reset")
			retry2, ok := sumPoint(second, "gym.sandbox.create_retry_total")
			require.True(t, ok, "a series without news since the restart is still there")
			assert.Equal(t, retry1.IntValue(), retry2.IntValue())
			assert.Equal(t, retry1.StartTimestamp(), retry2.StartTimestamp())
			assert.Greater(t, active2.Timestamp(), active1.Timestamp())
		})
	}
}

// A kill -9 at any instant on the file path neither loses nor repeats a line: the storage as
// a crash leaves it (the last checkpoint: state and offsets of the same lines) is restored,
// and the files are read again from the checkpoint's offsets. Crashes are taken while a
// writer appends and the receiver reads and collects.
func TestCrashOnFilesLosesNothingAndRepeatsNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.events.jsonl")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	line := `{"event":"sandbox.create_retry","provider":"p"}` + "\n"
	newCfg := func() *Config {
		cfg := createDefaultConfig().(*Config)
		cfg.Storage = &storageID
		cfg.CollectionInterval = 20 * time.Millisecond
		fc := cfg.Files.GetOrInsertDefault()
		fc.Include = []string{filepath.Join(dir, "*.events.jsonl")}
		fc.StartAt = "beginning"
		fc.PollInterval = 5 * time.Millisecond
		return cfg
	}
	st := storagetest.NewMem(nil)
	total := 0
	var exportedAtCrash int64
	for life := range 4 {
		sink, stop := runReceiver(t, newCfg(), storageHost(st))
		require.Eventually(t, func() bool { return len(sink.AllMetrics()) > 0 || life == 0 }, 5*time.Second, time.Millisecond)
		if life > 0 {
			// What the last life exported never exceeds what this one restored and exports
			// first (a counter that went back would read as a reset, counted twice).
			assert.GreaterOrEqual(t, retryTotal(sink.AllMetrics()[0]), exportedAtCrash, "life %d", life)
		}
		written := appendWhileRead(t, path, line, 50)
		time.Sleep(time.Duration(15+life*9) * time.Millisecond)
		exportedAtCrash = 0
		if all := sink.AllMetrics(); len(all) > 0 {
			exportedAtCrash = retryTotal(all[len(all)-1])
		}
		crashed := st.CrashCopy() // kill -9 here, while lines are written, read and collected
		total += written()
		stop()
		st = crashed
		t.Logf("life %d: %d written in all, %d exported at the crash", life, total, exportedAtCrash)
	}
	sink, stop := runReceiver(t, newCfg(), storageHost(st))
	stop()
	assert.Equal(t, int64(total), retryTotal(lastMetrics(t, sink)), "every line once over every life")
}

// Without checkpoint_before_answer, a crash loses what HTTP accepted since the last
// checkpoint (at most a collection_interval); with it, an answered body survives any crash.
func TestCheckpointBeforeAnswer(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprint(durable), func(t *testing.T) {
			st := storagetest.NewMem(nil)
			cfg := createDefaultConfig().(*Config)
			cfg.HTTP.GetOrInsertDefault().NetAddr.Endpoint = freeAddr(t)
			cfg.Storage = &storageID
			cfg.CollectionInterval, cfg.ExpireAfter = time.Hour, time.Hour
			cfg.CheckpointBeforeAnswer = durable
			_, stop := runReceiver(t, cfg, storageHost(st))
			url := "http://" + cfg.HTTP.Get().NetAddr.Endpoint + "/v1/events"
			for range 3 {
				status, _, _ := post(t, url, []byte(strings.Repeat(`{"event":"sandbox.create_retry","provider":"p"}`+"\n", 7)), nil)
				require.Equal(t, 200, status)
			}
			crashed := st.CrashCopy() // kill -9 right after the answers
			stop()

			sink, stop := runReceiver(t, createDefaultConfigWith(func(c *Config) {
				c.HTTP.GetOrInsertDefault().NetAddr.Endpoint = freeAddr(t)
				c.Storage = &storageID
			}), storageHost(crashed))
			stop()
			if durable {
				assert.Equal(t, int64(21), retryTotal(lastMetrics(t, sink)), "every answered body survives")
			} else {
				assert.Zero(t, retryTotal(lastMetricsOrEmpty(sink)), "lost: accepted after the last checkpoint")
			}
		})
	}
}

func createDefaultConfigWith(f func(*Config)) *Config {
	cfg := createDefaultConfig().(*Config)
	f(cfg)
	return cfg
}

// Offsets saved by an older version (no checkpoint yet, the files' offsets alone) are resumed
// from: an upgrade neither re-reads nor skips lines.
func TestLegacyFileOffsetsAreResumed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.events.jsonl")
	line := `{"event":"sandbox.create_retry","provider":"p"}` + "\n"
	head := strings.Repeat(line, 20) // counted by the older version
	require.NoError(t, os.WriteFile(path, []byte(head+strings.Repeat(line, 3)), 0o600))
	fp := []byte(head + strings.Repeat(line, 3))[:1024]
	legacy := fmt.Sprintf(`{%q:{"offset":%d}}`, fmt.Sprintf("%x", fp), len(head))
	st := storagetest.NewMem(map[string][]byte{"file_offsets": []byte(legacy)})
	cfg := createDefaultConfig().(*Config)
	cfg.Storage = &storageID
	fc := cfg.Files.GetOrInsertDefault()
	fc.Include = []string{filepath.Join(dir, "*.events.jsonl")}
	fc.StartAt = "beginning"
	sink, stop := runReceiver(t, cfg, storageHost(st))
	stop()
	assert.Equal(t, int64(3), retryTotal(lastMetrics(t, sink)), "only the lines after the stored offset")
	assert.NotEmpty(t, st.Value("checkpoint"))
}

// failingStorage refuses every write.
type failingStorage struct{ *storagetest.Mem }

func (f *failingStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return f, nil
}

func (f *failingStorage) Set(context.Context, string, []byte) error {
	return errors.New("disk full")
}

// A checkpoint that cannot be saved is counted and the export goes on; a saved one has its
// size recorded.
func TestCheckpointTelemetry(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprint("failing=", failing), func(t *testing.T) {
			var ext component.Component = storagetest.NewMem(nil)
			if failing {
				ext = &failingStorage{storagetest.NewMem(nil)}
			}
			cfg := createDefaultConfig().(*Config)
			cfg.HTTP.GetOrInsertDefault().NetAddr.Endpoint = freeAddr(t)
			cfg.Storage = &storageID
			tt := componenttest.NewTelemetry()
			defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
			sink := new(consumertest.MetricsSink)
			r, err := NewFactory().CreateMetrics(context.Background(), metadatatest.NewSettings(tt), cfg, sink)
			require.NoError(t, err)
			require.NoError(t, r.Start(context.Background(), storagetest.Host{storageID: ext}))
			status, _, _ := post(t, "http://"+cfg.HTTP.Get().NetAddr.Endpoint+"/v1/events", []byte(`{"event":"sandbox.create_retry","provider":"p"}`+"\n"), nil)
			require.Equal(t, 200, status)
			require.NoError(t, r.Shutdown(context.Background()))
			assert.Equal(t, int64(1), retryTotal(lastMetrics(t, sink)), "exported either way")
			if failing {
				m, err := tt.GetMetric("otelcol_receiver_gym_checkpoint_failures")
				require.NoError(t, err)
				dp := m.Data.(metricdata.Sum[int64]).DataPoints[0]
				assert.Equal(t, int64(1), dp.Value)
				assertReceiverAttr(t, dp.Attributes)
				return
			}
			m, err := tt.GetMetric("otelcol_receiver_gym_checkpoint_size")
			require.NoError(t, err)
			dp := m.Data.(metricdata.Gauge[int64]).DataPoints[0]
			assert.Positive(t, dp.Value)
			assertReceiverAttr(t, dp.Attributes)
		})
	}
}

// The rollouts source joins the checkpoint: a crash at any instant while a Gym run writes its
// main output neither loses nor repeats a row (its offsets are saved with the state they were
// counted into).
func TestCrashOnRolloutsLosesNothingAndRepeatsNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "eval.jsonl")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	row := `{"responses_create_params":{"input":[{"role":"user","content":"` + strings.Repeat("x", 300) + `"}]},"reward":1.0,"_ng_environment_server":"math"}` + "\n"
	newCfg := func() *Config {
		cfg := rolloutsConfig(filepath.Join(dir, "*.jsonl"))
		cfg.Storage = &storageID
		cfg.CollectionInterval = 20 * time.Millisecond
		rc := cfg.Rollouts.Get()
		rc.StartAt = "beginning"
		rc.PollInterval = 5 * time.Millisecond
		return cfg
	}
	st := storagetest.NewMem(nil)
	total := 0
	for life := range 4 {
		sink, stop := runReceiver(t, newCfg(), storageHost(st))
		written := appendWhileRead(t, path, row, 20)
		time.Sleep(time.Duration(15+life*9) * time.Millisecond)
		crashed := st.CrashCopy() // kill -9 here, while rows are written, read and collected
		total += written()
		stop()
		st = crashed
		t.Logf("life %d: %d rows written in all, %d exported", life, total, len(sink.AllMetrics()))
	}
	sink, stop := runReceiver(t, newCfg(), storageHost(st))
	stop()
	assert.Equal(t, int64(total), scoredTotal(lastMetrics(t, sink)), "every row once over every life")
}

// assertReceiverAttr: the receiver's own measurements name it (receiver=gym), as the
// collector's standard receiver metrics do.
func assertReceiverAttr(t *testing.T, attrs attribute.Set) {
	t.Helper()
	v, ok := attrs.Value("receiver")
	assert.True(t, ok, "no receiver attribute: %v", attrs.ToSlice())
	assert.Equal(t, "gym", v.AsString())
}
