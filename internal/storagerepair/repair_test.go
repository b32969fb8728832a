package storagerepair

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"
)

const name = "receiver_gym_" // as file_storage names the gym receiver's database

// newDB writes a database in the shape file_storage gives it (one bucket, "default") with n
// keys: small values and a few of several pages (overflow pages), and returns its contents.
func newDB(t *testing.T, path string, n int) map[string][]byte {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	want := map[string][]byte{}
	rng := rand.New(rand.NewPCG(1, 2))
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("default"))
		if err != nil {
			return err
		}
		for i := range n {
			size := 100 + rng.IntN(400)
			if i%10 == 0 {
				size = 20 << 10
			}
			v := make([]byte, size)
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			k := fmt.Sprintf("key-%04d", i)
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

// contents reads the database back with bbolt itself, opened for writing as file_storage
// opens it, and writes one key: a rebuilt database must take both without a panic.
func contents(t *testing.T, path string) map[string][]byte {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	defer db.Close()
	got := map[string][]byte{}
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				got[string(k)] = bytes.Clone(v)
				return nil
			})
		})
	}))
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("default"))
		if err != nil {
			return err
		}
		return b.Put([]byte("after"), []byte("repair"))
	}))
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}))
	return got
}

func TestIntactIsLeftAsItIs(t *testing.T) {
	path := filepath.Join(t.TempDir(), name)
	want := newDB(t, path, 300)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	rep, err := Check(path, time.Second)
	require.NoError(t, err)
	assert.False(t, rep.Damaged(), rep.Detail)
	assert.Equal(t, 300, rep.Kept)
	assert.Empty(t, rep.Aside)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "not rewritten")
	left, _ := filepath.Glob(path + "*")
	assert.Equal(t, []string{path}, left, "nothing left beside the database")
	got := contents(t, path)
	delete(got, "after")
	assert.Equal(t, want, got)
}

// A database truncated at many offsets, or with a page of garbage at many places: Check never
// panics, keeps only keys whose values are the original's, reports every loss (damage to pages
// no longer in use loses nothing and is not seen), and leaves a database bbolt opens for
// writing and checks clean; a damaged original is kept aside.
func TestDamageKeepsWhatReadsBack(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	want := newDB(t, src, 300)
	orig, err := os.ReadFile(src)
	require.NoError(t, err)
	const page = 4096
	type damage struct {
		name string
		data []byte
	}
	var cases []damage
	for _, off := range []int{page / 2, page, 2*page + 100, len(orig) / 3, len(orig) / 2, len(orig) - page, len(orig) - 10} {
		cases = append(cases, damage{fmt.Sprintf("truncated at %d", off), bytes.Clone(orig[:off])})
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, pg := range []int{0, 1, 2, 3, 4, len(orig) / page / 2, len(orig)/page - 1} {
		d := bytes.Clone(orig)
		for j := pg * page; j < (pg+1)*page && j < len(d); j++ {
			d[j] = byte(rng.Uint32())
		}
		cases = append(cases, damage{fmt.Sprintf("garbage over page %d", pg), d})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			require.NoError(t, os.WriteFile(path, c.data, 0o600))
			rep, err := Check(path, time.Second)
			require.NoError(t, err)
			got := contents(t, path)
			delete(got, "after")
			for k, v := range got {
				assert.Equal(t, want[k], v, "key %s kept with another value", k)
			}
			assert.Equal(t, rep.Kept, len(got))
			if c.name == "garbage over page 0" || c.name == "garbage over page 1" || c.name == "truncated at 4096" {
				assert.True(t, rep.Damaged(), "a meta page lost is reported")
			}
			if rep.Damaged() {
				assert.Contains(t, []string{ReasonDamaged, ReasonUnreadable}, rep.Reason)
				assert.NotEmpty(t, rep.Detail)
				aside, err := os.ReadFile(rep.Aside)
				require.NoError(t, err, "the original is kept aside")
				assert.Equal(t, c.data, aside)
			} else {
				assert.Equal(t, len(want), rep.Kept, "no loss without a report: every key")
			}
			t.Logf("%s: %s (%s), %d of %d keys kept", c.name, rep.Reason, rep.Detail, rep.Kept, len(want))
		})
	}
}

func TestEmptyAndUnknownFormat(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "receiver_gym_a")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	other := filepath.Join(dir, "receiver_gym_b")
	require.NoError(t, os.WriteFile(other, bytes.Repeat([]byte(`{"not":"bbolt"}`+"\n"), 1000), 0o600))
	notOurs := filepath.Join(dir, "notes.txt") // not a name file_storage gives: left alone
	require.NoError(t, os.WriteFile(notOurs, []byte("x"), 0o600))

	reps, err := Directory(dir, time.Second)
	require.NoError(t, err)
	require.Len(t, reps, 2)
	assert.Equal(t, ReasonEmpty, reps[0].Reason)
	assert.Equal(t, ReasonUnreadable, reps[1].Reason)
	assert.Contains(t, reps[1].Detail, "invalid")
	assert.Zero(t, reps[1].Kept)
	assert.Empty(t, contents(t, other)["key-0000"])
	data, err := os.ReadFile(notOurs)
	require.NoError(t, err)
	assert.Equal(t, "x", string(data))

	missing, err := Directory(filepath.Join(dir, "none"), time.Second)
	require.NoError(t, err)
	assert.Empty(t, missing)
}

// A database another process has open is left alone (bbolt's file lock): the wait is bounded.
func TestInUseIsLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), name)
	newDB(t, path, 3)
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	rep, err := Check(path, 50*time.Millisecond)
	require.NoError(t, err)
	assert.True(t, rep.InUse)
	assert.False(t, rep.Damaged())
}

// Damaged copies are kept aside, the KeepAside newest of each database.
func TestAsideIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), name)
	for range KeepAside + 3 {
		require.NoError(t, os.WriteFile(path, []byte("garbage that is not a database, long enough to be read"), 0o600))
		rep, err := Check(path, time.Second)
		require.NoError(t, err)
		require.Equal(t, ReasonUnreadable, rep.Reason)
		time.Sleep(2 * time.Millisecond) // distinct stamps
	}
	copies, _ := filepath.Glob(path + asideMark + "*")
	assert.Len(t, copies, KeepAside)
}

// The cost of a start: a database of a checkpoint of 4 MiB and 1,000 small keys checked
// (intact: read back and bbolt's check, nothing written) and rebuilt (its meta page 1 damaged:
// every key written into a fresh database, synced)
// (go test -run '^$' -bench Check ./internal/storagerepair).
func BenchmarkCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), name)
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(b, err)
	require.NoError(b, db.Update(func(tx *bbolt.Tx) error {
		bk, err := tx.CreateBucket([]byte("default"))
		if err != nil {
			return err
		}
		if err := bk.Put([]byte("checkpoint"), bytes.Repeat([]byte("x"), 4<<20)); err != nil {
			return err
		}
		for i := range 1000 {
			if err := bk.Put([]byte(fmt.Sprintf("k%d", i)), make([]byte, 200)); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(b, db.Close())
	intact, err := os.ReadFile(path)
	require.NoError(b, err)
	damaged := bytes.Clone(intact)
	for i := 4096; i < 2*4096; i++ {
		damaged[i] = 0xa5
	}
	for _, c := range []struct {
		name    string
		data    []byte
		damaged bool
	}{{"intact", intact, false}, {"damaged", damaged, true}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for range b.N {
				b.StopTimer()
				require.NoError(b, os.WriteFile(path, c.data, 0o600))
				b.StartTimer()
				rep, err := Check(path, time.Second)
				if err != nil || rep.Damaged() != c.damaged || rep.Kept != 1001 {
					b.Fatal(err, rep)
				}
			}
		})
	}
}

// garbage writes 4 KiB of random bytes over page pg of path.
func garbage(t *testing.T, path string, pg int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	_, err = f.WriteAt(b, pg*4096)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// A database that cannot be rebuilt (here: its rebuild file's name is taken by a directory,
// as a full or read-only disk would refuse the file) is left as it was and named in the
// error, and the others are still checked.
func TestRebuildFailureLeavesTheOriginal(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "receiver_gym_a"), filepath.Join(dir, "receiver_gym_b")
	newDB(t, a, 3)
	newDB(t, b, 3)
	garbage(t, a, 0) // damaged: to be rebuilt
	before, err := os.ReadFile(a)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(a+repairSuffix, "taken"), 0o700))
	reps, err := Directory(dir, time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), a)
	require.Len(t, reps, 1, "the other database is checked still")
	assert.Equal(t, b, reps[0].File)
	assert.False(t, reps[0].Damaged())
	assert.Equal(t, 3, reps[0].Kept)
	after, err := os.ReadFile(a)
	require.NoError(t, err)
	assert.Equal(t, before, after, "left as it was")
}

// Garbage over the free list's page: every key still reads back, but bbolt would hand out
// pages in use (or panic opening it for writing); its own check sees it, and the database is
// rebuilt with every key.
func TestFreeListDamageIsSeen(t *testing.T) {
	path := filepath.Join(t.TempDir(), name)
	want := newDB(t, path, 300)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	le := binary.LittleEndian
	m0, m1 := data[pageHeader:], data[4096+pageHeader:]
	meta := m0
	if le.Uint64(m1[48:]) > le.Uint64(m0[48:]) {
		meta = m1
	}
	freelist := int64(le.Uint64(meta[32:]))
	require.Greater(t, freelist, int64(1))
	garbage(t, path, freelist)
	rep, err := Check(path, time.Second)
	require.NoError(t, err)
	assert.Equal(t, ReasonDamaged, rep.Reason, rep.Detail)
	assert.Equal(t, len(want), rep.Kept)
	got := contents(t, path)
	delete(got, "after")
	assert.Equal(t, want, got)
}
