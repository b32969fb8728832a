package gymfilestorage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/extension/gymfilestorage/internal/metadatatest"
)

var gym = component.MustNewID("gym")

// writeDB writes n keys into the database file_storage gives the gym receiver, in its bucket.
func writeDB(t *testing.T, path string, n int) map[string][]byte {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	want := map[string][]byte{}
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("default"))
		if err != nil {
			return err
		}
		for i := range n {
			k, v := fmt.Sprintf("k%03d", i), bytes.Repeat([]byte{byte(i)}, 300)
			want[k] = v
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, db.Close())
	return want
}

func start(t *testing.T, dir string) (*checkedStorage, *componenttest.Telemetry, *observer.ObservedLogs) {
	t.Helper()
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	core, logs := observer.New(zap.InfoLevel)
	set := metadatatest.NewSettings(tt)
	set.Logger = zap.New(core)
	cfg := NewFactory().CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	ext, err := NewFactory().Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return ext.(*checkedStorage), tt, logs
}

// A database with a page of garbage and another of an unknown format: the extension starts,
// names each in an error log line, counts them, and the gym receiver's client reads the keys
// that were kept and writes new ones.
func TestStartRepairs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "receiver_gym_")
	want := writeDB(t, path, 200)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	mid := len(data) / 4096 / 2 * 4096 // a leaf page in the middle of the keys
	for i := mid; i < mid+4096; i++ {
		data[i] = 0xa5
	}
	require.NoError(t, os.WriteFile(path, data, 0o600))
	other := filepath.Join(dir, "receiver_gym_console")
	require.NoError(t, os.WriteFile(other, []byte("not a database at all"), 0o600))

	s, tt, logs := start(t, dir)

	lines := logs.FilterMessageSnippet("a damaged database was rebuilt").All()
	require.Len(t, lines, 2)
	files := map[string]string{}
	kept := 0
	for _, l := range lines {
		f := l.ContextMap()
		files[f["file"].(string)] = f["reason"].(string)
		kept += int(f["keys_kept"].(int64))
		assert.FileExists(t, f["original_kept_at"].(string))
	}
	assert.Equal(t, map[string]string{path: "damaged", other: "unreadable"}, files)
	metadatatest.AssertEqualFileStorageRepairs(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "damaged"))},
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "unreadable"))},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualFileStorageKeysKept(t, tt, []metricdata.DataPoint[int64]{{Value: int64(kept)}}, metricdatatest.IgnoreTimestamp())
	assert.Greater(t, kept, 0)
	assert.Less(t, kept, len(want))

	client, err := s.GetClient(context.Background(), component.KindReceiver, gym, "")
	require.NoError(t, err)
	read := 0
	for k, v := range want {
		got, err := client.Get(context.Background(), k)
		require.NoError(t, err)
		if got != nil {
			assert.Equal(t, v, got, k)
			read++
		}
	}
	assert.Equal(t, kept, read, "what the log line says was kept is what reads")
	require.NoError(t, client.Set(context.Background(), "new", []byte("value")))
	require.NoError(t, client.Close(context.Background()))
}

// An intact database is rebuilt silently, whole.
func TestStartIntact(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "receiver_gym_")
	want := writeDB(t, path, 50)
	s, tt, logs := start(t, dir)
	assert.Zero(t, logs.Len(), logs.All())
	_, err := tt.GetMetric("otelcol_file_storage_repairs")
	assert.Error(t, err, "nothing counted")
	client, err := s.GetClient(context.Background(), component.KindReceiver, gym, "")
	require.NoError(t, err)
	for k, v := range want {
		got, err := client.Get(context.Background(), k)
		require.NoError(t, err)
		assert.Equal(t, v, got)
	}
	require.NoError(t, client.Close(context.Background()))
}

type panicking struct{ storage.Client }

func (panicking) Get(context.Context, string) ([]byte, error) { panic("page 7: unreachable unfreed") }

// A panic of the database under an operation is that operation's error, counted and logged.
func TestClientPanicIsAnError(t *testing.T) {
	s, tt, logs := start(t, t.TempDir())
	c := &safeClient{inner: panicking{}, owner: gym, s: s}
	_, err := c.Get(context.Background(), "k")
	require.ErrorContains(t, err, "page 7: unreachable unfreed")
	assert.Equal(t, 1, logs.FilterMessageSnippet("the database panicked").Len())
	metadatatest.AssertEqualFileStoragePanics(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
}
