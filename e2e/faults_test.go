//go:build linux

package e2e

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
)

// The gym receiver's database in file_storage, as the extension names it.
const gymDatabase = "receiver_gym_"

// TestDamagedCheckpoint: the gym receiver's checkpoint database damaged between two lives of
// the real binary (a page of garbage where the checkpoint lies, truncation, an empty file, a
// file of another format, a checkpoint record of a newer version). The second life starts
// every time (no crash loop), says what it discarded in a log line and a self-metric, and
// goes on collecting: the file's total is right at the end. A checkpoint that is lost makes
// the series start afresh (a new start time) and the file is read again from start_at; one
// that survives is restored (the same start time).
func TestDamagedCheckpoint(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		damage func(t *testing.T, path string)
		// what the second life says: the extension's repair reason, or "" for the receiver's
		// own discard of a record it cannot read.
		reason string
	}{
		{"garbage over the checkpoint's page", garbageOverCheckpoint, "damaged"},
		{"truncated after the meta pages", func(t *testing.T, path string) {
			require.NoError(t, os.Truncate(path, 2*4096+100))
		}, "damaged"},
		{"empty", func(t *testing.T, path string) { require.NoError(t, os.Truncate(path, 0)) }, "empty"},
		{"another format", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("not a database\n", 4096)), 0o600))
		}, "unreadable"},
		{"a record of a newer version", newerRecord, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			logs, storage, path := logsAndStorage(t)
			res := attrIs("log.file.path", path)
			harness.AppendFile(t, path, lines("", 0, 2000, false))

			sink1 := harness.NewOTLPSink(t)
			col, _ := startTransports(t, sink1, durableOpts(logs, storage))
			waitCompleted(t, sink1, "the first life", res, 2000)
			require.NoError(t, col.Stop(30*time.Second))
			start1 := startOf(sink1.Exports()[len(sink1.Exports())-1], res)

			db := filepath.Join(storage, gymDatabase)
			require.FileExists(t, db)
			c.damage(t, db)

			sink2 := harness.NewOTLPSink(t)
			col, ports := startTransports(t, sink2, durableOpts(logs, storage)) // fails the test unless it becomes healthy
			harness.AppendFile(t, path, lines("", 2000, 500, false))
			waitCompleted(t, sink2, "after the damage", res, 2500)
			out := col.LogTail(1 << 20)
			restored := strings.Contains(out, "restored the checkpoint")
			if c.reason != "" {
				assert.Contains(t, out, "a damaged database was rebuilt", "the repair is logged")
				assert.Contains(t, out, db, "the log line names the file")
				assert.Equal(t, 1.0, harness.TelemetryValue(t, ports, "otelcol_file_storage_repairs", "reason", c.reason))
				assert.NoFileExists(t, db+".original")
				assert.NoFileExists(t, db+".repair")
				aside, _ := filepath.Glob(db + ".damaged-*")
				if c.reason != "empty" {
					assert.Len(t, aside, 1, "the damaged original is kept aside")
				}
			} else {
				assert.Contains(t, out, "the stored checkpoint cannot be read and is discarded")
				assert.Equal(t, 1.0, harness.TelemetryValue(t, ports, "otelcol_receiver_gym_checkpoint_discards"))
			}
			assert.False(t, restored, "the checkpoint was lost in every case here: %s", c.name)
			assert.Greater(t, startOf(sink2.Exports()[len(sink2.Exports())-1], res), start1,
				"a lost checkpoint: the series start afresh")
			assert.Equal(t, 2500.0, latestCompleted(sink2.Exports(), res), "the file's total, read again from start_at")
			require.NoError(t, col.Stop(30*time.Second))

			// And the third life restores what the second saved: the damage is behind.
			sink3 := harness.NewOTLPSink(t)
			col, _ = startTransports(t, sink3, durableOpts(logs, storage))
			waitCompleted(t, sink3, "the third life", res, 2500)
			assert.Contains(t, col.LogTail(1<<20), "restored the checkpoint")
			assert.Equal(t, startOf(sink2.Exports()[len(sink2.Exports())-1], res), startOf(sink3.Exports()[0], res))
			require.NoError(t, col.Stop(30*time.Second))
		})
	}
}

// garbageOverCheckpoint writes 4 KiB of random bytes over the page that holds the receiver's
// bucket (its keys: the checkpoint among them).
func garbageOverCheckpoint(t *testing.T, path string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	require.NoError(t, err)
	var page int64
	var size int
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		size = db.Info().PageSize
		b := tx.Bucket([]byte("default"))
		require.NotNil(t, b)
		require.NotNil(t, b.Get([]byte(checkpoint.Key)), "a checkpoint was saved")
		page = int64(b.Root())
		if page == 0 { // an inline bucket: in its parent's page
			page = int64(tx.Cursor().Bucket().Root())
		}
		return nil
	}))
	require.NoError(t, db.Close())
	garbage := make([]byte, size)
	_, _ = rand.Read(garbage)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(garbage, page*int64(size))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// newerRecord rewrites the checkpoint record as one of a version after this one.
func newerRecord(t *testing.T, path string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("default"))
		v := append([]byte(nil), b.Get([]byte(checkpoint.Key))...)
		require.True(t, strings.HasPrefix(string(v), "gymckpt\x01"), "a version 1 record")
		v[len("gymckpt")] = 2
		return b.Put([]byte(checkpoint.Key), v)
	}))
	require.NoError(t, db.Close())
}
