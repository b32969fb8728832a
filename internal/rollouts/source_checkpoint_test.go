package rollouts

import (
	stdcontext "context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
	"github.com/gym-telemetry/otelcol-gym/internal/follow"
	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
)

func TestRolloutsRestartWithStore(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", `,"_ng_run_id":"r1"`)+mainRow("m", "1", ""))
	followtest.AppendFile(t, filepath.Join(dir, "r_failures.jsonl"), failureRow("timeout", "agent_timeout"))
	store := &followtest.MemStore{}

	agg := newTestAggregator(t)
	rt, _ := newTestSource(t, agg, filepath.Join(dir, "*.jsonl"), true, store, 0)
	half := mainRow("m", "0", "")
	followtest.AppendFile(t, out, half[:100]) // a row being written at shutdown
	require.NoError(t, rt.Shutdown(stdcontext.Background()))
	first := rolloutCounts(agg.Collect(aggregate.Scope{}))
	assert.Equal(t, int64(2), first["r.jsonl|r1|completed_total|dispatch.name=m,outcome=scored"])

	// While it is down: the row is finished, more are written, a manifest appears.
	followtest.AppendFile(t, out, half[100:]+mainRow("m", "1", ""))
	followtest.AppendFile(t, filepath.Join(dir, "r_failures.jsonl"), failureRow("timeout", "agent_timeout"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "r_manifest.json"), []byte(`{"run_id":"changed"}`), 0o600))

	agg2 := newTestAggregator(t)
	_, got := newTestSource(t, agg2, filepath.Join(dir, "*.jsonl"), false, store, 0)
	assert.Equal(t, map[string]int64{
		"r.jsonl|r1|completed_total|dispatch.name=m,outcome=scored":                                                                               2,
		"r.jsonl|r1|rewarded_total|dispatch.name=m,masked=false,reward.range=full":                                                                1,
		"r.jsonl|r1|rewarded_total|dispatch.name=m,masked=false,reward.range=zero":                                                                1,
		"r.jsonl|r1|completed_total|dispatch.name=math,failure_class=timeout,failure_kind=agent_timeout,failure_type=TimeoutError,outcome=failed": 1,
	}, rolloutCounts(agg2.Collect(aggregate.Scope{})), "only what was written since, under the same resource")
	assert.Equal(t, int64(3), got.Accepted)
}

// lockOffsets takes the tailer's Locker as the receiver's checkpoint does and returns the
// offsets it gives the checkpoint (those in store, when it has none of its own); release lets
// the tailer go on.
func lockOffsets(rt *Source, store *followtest.MemStore) (offsets []byte, release func()) {
	l := rt.Locker()
	l.Lock()
	offsets, ok := rt.Offsets()
	if !ok {
		store.Mu.Lock()
		offsets = store.Data
		store.Mu.Unlock()
	}
	return offsets, l.Unlock
}

func TestRolloutsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", ""))
	agg := newTestAggregator(t)
	store := &followtest.MemStore{}
	rt, got := newTestSource(t, agg, filepath.Join(dir, "*.jsonl"), true, store, 0)

	half := mainRow("m", "1", "")
	followtest.AppendFile(t, out, mainRow("m", "1", "")+half[:50])
	offsets, release := lockOffsets(rt, store)
	polled := make(chan struct{})
	go func() { rt.poll(stdcontext.Background()); close(polled) }()
	select {
	case <-polled:
		t.Fatal("a poll ran while the checkpoint was held")
	case <-time.After(100 * time.Millisecond):
	}
	var st rolloutState
	require.NoError(t, json.Unmarshal(offsets, &st))
	assert.Equal(t, int64(len(half)), st.Files[out].Offset, "the offsets of the rows applied, not of rows read ahead")
	assert.Equal(t, int64(1), got.Accepted)
	release()
	<-polled
	offsets, release = lockOffsets(rt, store)
	release()
	require.NoError(t, json.Unmarshal(offsets, &st))
	assert.Equal(t, int64(2*len(half)), st.Files[out].Offset, "before the partial row")
	assert.Equal(t, int64(2), st.Files[out].Lines)

	// Restored from those offsets, a new tailer reads only the rows after them.
	followtest.AppendFile(t, out, half[50:])
	agg2 := newTestAggregator(t)
	_, got2 := newTestSource(t, agg2, filepath.Join(dir, "*.jsonl"), true, &followtest.MemStore{Data: offsets}, 0)
	assert.Equal(t, int64(1), got2.Accepted)
}

// A checkpoint taken while a poll reads a long file comes between two rows, and its offsets are
// exactly the rows the aggregator holds at that moment.
func TestRolloutsCheckpointDuringLongPoll(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	row := mainRow("m", "1", "")
	const rows = 20000
	followtest.AppendFile(t, out, strings.Repeat(row, rows))
	agg := newTestAggregator(t)
	store := &followtest.MemStore{}
	rt, _ := newTestSource(t, agg, filepath.Join(dir, "none", "*.jsonl"), true, store, 0)
	rt.opts.Include = []string{filepath.Join(dir, "*.jsonl")}
	count := func() int64 {
		return rolloutCounts(agg.Collect(aggregate.Scope{}))["r.jsonl||completed_total|dispatch.name=m,outcome=scored"]
	}
	polled := make(chan struct{})
	go func() { rt.poll(stdcontext.Background()); close(polled) }()
	for count() == 0 { // the poll is reading the file
		time.Sleep(100 * time.Microsecond)
	}
	offsets, release := lockOffsets(rt, store)
	scored := count()
	release()
	<-polled
	var st rolloutState
	require.NoError(t, json.Unmarshal(offsets, &st))
	t.Logf("checkpoint at row %d of %d", scored, rows)
	assert.Less(t, scored, int64(rows), "the checkpoint waited for the poll to end")
	assert.Positive(t, scored)
	assert.Equal(t, scored*int64(len(row)), st.Files[out].Offset, "the offsets are the rows applied")
	assert.Equal(t, scored, st.Files[out].Lines)
	assert.Equal(t, int64(rows), rolloutCounts(agg.Collect(aggregate.Scope{}))["r.jsonl||completed_total|dispatch.name=m,outcome=scored"])
}

// ckptSource is a rollouts tailer joined to a checkpointer as the receiver joins them: the
// checkpoint restored, the tailer made with its section (which pulls its offsets under its
// Locker) before it starts.
func ckptSource(t *testing.T, store *storagetest.Mem, include string) (*Source, *checkpoint.Checkpointer, *aggregate.Aggregator, *followtest.Counts) {
	t.Helper()
	agg := newTestAggregator(t)
	c := checkpoint.New(store, agg)
	_, err := c.Restore(stdcontext.Background())
	require.NoError(t, err)
	section := c.Section("rollouts")
	got := followtest.NewCounts()
	rt := NewSource(agg.NewSink, SourceOptions{
		Include: []string{include}, StartAtBeginning: true, PollInterval: time.Hour, Store: section,
	}, got.Record, zap.NewNop()) // made with its section: joined
	return rt, c, agg, got
}

// savedOffsets reads the rollouts offsets of the stored checkpoint.
func savedOffsets(t *testing.T, store *storagetest.Mem) rolloutState {
	t.Helper()
	c := checkpoint.New(store, newTestAggregator(t))
	_, err := c.Restore(stdcontext.Background())
	require.NoError(t, err)
	data, err := c.Section("rollouts").Load(stdcontext.Background())
	require.NoError(t, err)
	var st rolloutState
	require.NoError(t, json.Unmarshal(data, &st))
	return st
}

// A checkpoint taken before the tailer has opened a file the store knows (before it starts,
// or while the file's run is not followed) keeps that file's stored offset: a crash then
// resumes at the offset, and the restored totals are not counted again.
func TestRolloutsCheckpointKeepsOffsetsNotYetUsed(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", `,"_ng_run_id":"r1"`)+mainRow("m", "1", ""))
	followtest.AppendFile(t, filepath.Join(dir, "r_failures.jsonl"), failureRow("timeout", "agent_timeout"))
	store := storagetest.NewMem(nil)
	ctx := stdcontext.Background()
	rt, c, _, got := ckptSource(t, store, filepath.Join(dir, "*.jsonl"))
	require.NoError(t, rt.Start(ctx))
	require.NoError(t, rt.Shutdown(ctx))
	_, err := c.Save(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), got.Accepted)
	want := savedOffsets(t, store)
	require.Len(t, want.Files, 2)
	require.Equal(t, map[string]storedRun{out: {RunID: "r1"}}, want.Runs)

	// Restarted with a glob that does not match the run (as a run waits past MaxRuns): a
	// checkpoint before Start, and one after its first poll, keep the stored offsets.
	rt, c, _, got = ckptSource(t, store, filepath.Join(dir, "none", "*.jsonl"))
	_, err = c.Save(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, savedOffsets(t, store), "a checkpoint before Start")
	require.NoError(t, rt.Start(ctx))
	_, err = c.Save(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, savedOffsets(t, store), "a checkpoint before the run is followed")
	require.NoError(t, rt.Shutdown(ctx))
	_, err = c.Save(ctx)
	require.NoError(t, err)
	assert.Zero(t, got.Accepted)

	// Restarted with the run matched again: only the row written since is read, on top of the
	// restored totals.
	followtest.AppendFile(t, out, mainRow("m", "0", ""))
	rt, c, agg, got := ckptSource(t, store, filepath.Join(dir, "*.jsonl"))
	require.NoError(t, rt.Start(ctx))
	t.Cleanup(func() { _ = rt.Shutdown(ctx) })
	assert.Equal(t, int64(1), got.Accepted)
	counts := rolloutCounts(agg.Collect(aggregate.Scope{}))
	assert.Equal(t, int64(3), counts["r.jsonl|r1|completed_total|dispatch.name=m,outcome=scored"], "%v", counts)
	assert.Equal(t, int64(1), counts["r.jsonl|r1|completed_total|dispatch.name=math,failure_class=timeout,failure_kind=agent_timeout,failure_type=TimeoutError,outcome=failed"], "%v", counts)
	_ = c
}

// The stored offsets of a file gone at the first poll after a start are dropped, not carried
// over from checkpoint to checkpoint.
func TestRolloutsStoredOffsetsOfGoneFilesDropped(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	failures := filepath.Join(dir, "r_failures.jsonl")
	followtest.AppendFile(t, out, mainRow("m", "1", `,"_ng_run_id":"r1"`))
	followtest.AppendFile(t, failures, failureRow("timeout", "agent_timeout"))
	other := filepath.Join(dir, "gone", "g.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(other), 0o700))
	followtest.AppendFile(t, other, mainRow("m", "1", `,"_ng_run_id":"g1"`))
	store := &followtest.MemStore{}
	rt, _ := newTestSource(t, newTestAggregator(t), filepath.Join(dir, "*", "*.jsonl"), true, store, 0)
	require.NoError(t, rt.Shutdown(stdcontext.Background()))
	// The store knows both runs.
	var a rolloutState
	require.NoError(t, json.Unmarshal(store.Data, &a))
	require.Contains(t, a.Files, other)
	require.Contains(t, a.Runs, other)
	a.Files[out] = storedRowFile{Head: "7b", Offset: 1, Lines: 1}
	a.Files[failures] = storedRowFile{Head: "7b", Offset: 1, Lines: 1}
	a.Runs[out] = storedRun{RunID: "r1"}
	store.Data, _ = json.Marshal(a)

	require.NoError(t, os.RemoveAll(filepath.Dir(other)))
	require.NoError(t, os.Remove(failures))
	rt, _ = newTestSource(t, newTestAggregator(t), filepath.Join(dir, "none", "*.jsonl"), true, store, 0)
	offsets, release := lockOffsets(rt, store)
	release()
	var st rolloutState
	require.NoError(t, json.Unmarshal(offsets, &st))
	assert.Equal(t, map[string]storedRowFile{out: {Head: "7b", Offset: 1, Lines: 1}}, st.Files)
	assert.Equal(t, map[string]storedRun{out: {RunID: "r1"}}, st.Runs)
}

// The offsets go to each checkpoint that takes the Locker (Offsets) and are saved once more at Shutdown, not at
// every poll: every checkpoint still has the offsets of exactly the rows applied, the final
// one (after Shutdown's last read) included.
func TestRolloutsOffsetsSavedForEveryCheckpoint(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	row := mainRow("m", "1", "")
	followtest.AppendFile(t, out, row+row)
	store := storagetest.NewMem(nil)
	ctx := stdcontext.Background()
	rt, c, _, _ := ckptSource(t, store, filepath.Join(dir, "*.jsonl"))
	require.NoError(t, rt.Start(ctx))
	t.Cleanup(func() { _ = rt.Shutdown(ctx) })
	offset := func() int64 {
		t.Helper()
		_, err := c.Save(ctx)
		require.NoError(t, err)
		return savedOffsets(t, store).Files[out].Offset
	}
	assert.Equal(t, int64(2*len(row)), offset())
	followtest.AppendFile(t, out, row)
	rt.poll(ctx)
	assert.Equal(t, int64(3*len(row)), offset())
	assert.Equal(t, int64(3*len(row)), offset(), "a checkpoint with no poll between")
	followtest.AppendFile(t, out, row+row[:10])
	require.NoError(t, rt.Shutdown(ctx)) // reads the fourth row
	assert.Equal(t, int64(4*len(row)), offset(), "the final checkpoint, after Shutdown")
	assert.Equal(t, int64(4*len(row)), offset())

	// A poll alone saves nothing into a store that pulls the offsets (a checkpoint section).
	pull := &followtest.PullStore{}
	rt2, _ := newTestSource(t, newTestAggregator(t), filepath.Join(dir, "*.jsonl"), true, pull, 0)
	require.NotNil(t, pull.Offsets, "made with its store: joined")
	followtest.AppendFile(t, out, row[10:])
	rt2.poll(ctx)
	assert.Zero(t, len(pull.Data), "a poll saved the offsets")
	offsets, release := lockOffsets(rt2, &pull.MemStore)
	release()
	var st rolloutState
	require.NoError(t, json.Unmarshal(offsets, &st))
	assert.Equal(t, int64(5*len(row)), st.Files[out].Offset)
}

// The section's format is unchanged by the move onto follow.Follower: offsets written in it
// (by an earlier version) restore, and the offsets given back are in it.
func TestRolloutsStoredFormat(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	row := mainRow("m", "1", `,"_ng_run_id":"from-row"`)
	followtest.AppendFile(t, out, row+row)
	head := []byte(row + row)[:follow.FingerprintBytes]
	stored := fmt.Sprintf(`{"files":{%q:{"head":%q,"offset":%d,"lines":1}},"runs":{%q:{"run_id":"r1"}}}`, out, fmt.Sprintf("%x", head), len(row), out)
	store := &followtest.MemStore{Data: []byte(stored)}
	agg := newTestAggregator(t)
	rt, got := newTestSource(t, agg, filepath.Join(dir, "*.jsonl"), false, store, 0)
	assert.Equal(t, int64(1), got.Accepted, "resumed after the stored row")
	assert.Equal(t, int64(1), rolloutCounts(agg.Collect(aggregate.Scope{}))["r.jsonl|r1|completed_total|dispatch.name=m,outcome=scored"], "under the stored run id")
	offsets, release := lockOffsets(rt, store)
	release()
	want := fmt.Sprintf(`{"files":{%q:{"head":%q,"offset":%d,"lines":2}},"runs":{%q:{"run_id":"r1"}}}`, out, fmt.Sprintf("%x", head), 2*len(row), out)
	assert.JSONEq(t, want, string(offsets))
}
