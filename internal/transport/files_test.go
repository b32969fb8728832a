package transport

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
)

// tailer returns a tailer that is polled by hand (its loop ticks rarely).
func tailer(t *testing.T, agg *aggregate.Aggregator, dir string, beginning bool, store OffsetStore) (*FileTailer, *followtest.Counts) {
	t.Helper()
	got := followtest.NewCounts()
	ft := newEventsFileTailer(agg, FilesOptions{
		Include:          []string{filepath.Join(dir, "*.events.jsonl")},
		Exclude:          []string{filepath.Join(dir, "skip*")},
		StartAtBeginning: beginning,
		PollInterval:     time.Hour,
		MaxLineBytes:     1 << 16,
		MaxFiles:         100,
		Store:            store,
	}, got.Record, zap.NewNop())
	require.NoError(t, ft.Start(context.Background()))
	t.Cleanup(func() { _ = ft.Shutdown(context.Background()) })
	return ft, got
}

func lines(p string, n int) string { return strings.Repeat(retry(p)+"\n", n) }

func TestFilesStartAtAndGrowth(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.events.jsonl")
	followtest.AppendFile(t, a, lines("old", 3)+retry("old")[:10]) // a partial line being written at start
	followtest.AppendFile(t, filepath.Join(dir, "skip.events.jsonl"), lines("excluded", 1))

	agg := newTestAggregator(t)
	ft, _ := tailer(t, agg, dir, false, nil)
	assert.Empty(t, providers(agg.Collect(aggregate.Scope{})), "start_at end: what was there is not read")
	followtest.AppendFile(t, a, retry("old")[10:]+"\n"+lines("new", 2))
	ft.Poll(context.Background())
	assert.Equal(t, map[string]int64{"old": 1, "new": 2}, providers(agg.Collect(aggregate.Scope{})),
		"start_at end starts after the last complete line: the line being written at start is read whole")

	// A new file appearing while running is read from its beginning.
	followtest.AppendFile(t, filepath.Join(dir, "b.events.jsonl"), lines("b", 4))
	ft.Poll(context.Background())
	assert.Equal(t, map[string]int64{"old": 1, "new": 2, "b": 4}, providers(agg.Collect(aggregate.Scope{})))
}

func TestFilesStartAtBeginningAndDefaultResource(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.events.jsonl")
	followtest.AppendFile(t, a, lines("x", 3))
	agg := newTestAggregator(t)
	tailer(t, agg, dir, true, nil)
	md := agg.Collect(aggregate.Scope{})
	assert.Equal(t, map[string]int64{"x": 3}, providers(md))
	require.Equal(t, 1, md.ResourceMetrics().Len())
	assert.Equal(t, map[string]any{"gym.source": "file", "log.file.path": a}, md.ResourceMetrics().At(0).Resource().Attributes().AsRaw())
}

func TestFilesRotationByRename(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.events.jsonl")
	followtest.AppendFile(t, a, "")
	agg := newTestAggregator(t)
	ft, _ := tailer(t, agg, dir, true, nil)
	followtest.AppendFile(t, a, lines("r", 2))
	ft.Poll(context.Background())
	// The writer appends a last line, then the file is renamed away and a new one begins.
	followtest.AppendFile(t, a, lines("r", 1))
	require.NoError(t, os.Rename(a, a+".1"))
	followtest.AppendFile(t, a, lines("r", 5))
	ft.Poll(context.Background())
	ft.Poll(context.Background())
	ft.Poll(context.Background())
	assert.Equal(t, map[string]int64{"r": 8}, providers(agg.Collect(aggregate.Scope{})), "nothing lost, nothing twice")
	assert.Equal(t, 1, ft.Followed(), "the renamed file was closed")
}

func TestFilesCopyTruncate(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.events.jsonl")
	followtest.AppendFile(t, a, lines("c", 4))
	agg := newTestAggregator(t)
	ft, _ := tailer(t, agg, dir, true, nil)
	require.NoError(t, os.Truncate(a, 0))
	followtest.AppendFile(t, a, lines("c", 2))
	ft.Poll(context.Background())
	assert.Equal(t, map[string]int64{"c": 6}, providers(agg.Collect(aggregate.Scope{})))

	// Truncated and rewritten past the old size between two polls: the changed head tells.
	require.NoError(t, os.Truncate(a, 0))
	followtest.AppendFile(t, a, lines("d", 10))
	ft.Poll(context.Background())
	assert.Equal(t, map[string]int64{"c": 6, "d": 10}, providers(agg.Collect(aggregate.Scope{})))
}

// With storage, a restart neither re-counts what was read nor skips what was written meanwhile.
func TestFilesOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.events.jsonl")
	followtest.AppendFile(t, a, lines("s", 3)+retry("s")[:15])
	store := &followtest.MemStore{}
	agg := newTestAggregator(t)
	ft, _ := tailer(t, agg, dir, true, store)
	require.NoError(t, ft.Shutdown(context.Background()))
	assert.Equal(t, map[string]int64{"s": 3}, providers(agg.Collect(aggregate.Scope{})))

	// While the collector is down: the partial line is finished, more lines come, a new file.
	followtest.AppendFile(t, a, retry("s")[15:]+"\n"+lines("s", 2))
	followtest.AppendFile(t, filepath.Join(dir, "b.events.jsonl"), lines("b", 2))

	agg2 := newTestAggregator(t)
	tailer(t, agg2, dir, false, store) // start_at end applies only without stored offsets
	assert.Equal(t, map[string]int64{"s": 3, "b": 2}, providers(agg2.Collect(aggregate.Scope{})))
}

func TestFilesBadLinesAndPartialLastLineOnRotation(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.events.jsonl")
	followtest.AppendFile(t, a, lines("k", 1)+"{not json}\n"+lines("k", 1)+retry("k")[:9])
	agg := newTestAggregator(t)
	ft, got := tailer(t, agg, dir, true, nil)
	require.NoError(t, os.Remove(a))
	ft.Poll(context.Background())
	ft.Poll(context.Background())
	assert.Equal(t, map[string]int64{"k": 2}, providers(agg.Collect(aggregate.Scope{})))
	assert.Equal(t, map[string]int64{events.ReasonInvalidJSON: 1, ReasonPartialLine: 1}, nonZero(got.Rejected))
}

// A file resumed from storage goes on under the resource its stream was under.
func TestFilesResumeKeepsResource(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.events.jsonl")
	res := `{"event":"resource","attributes":{"service.name":"gym-a"}}`
	followtest.AppendFile(t, a, res+"\n"+lines("s", 2))
	store := &followtest.MemStore{}
	agg := newTestAggregator(t)
	ft, _ := tailer(t, agg, dir, true, store)
	require.NoError(t, ft.Shutdown(context.Background()))

	followtest.AppendFile(t, a, lines("s", 3)) // written while the collector is down
	agg2 := newTestAggregator(t)
	_, got := tailer(t, agg2, dir, false, store)
	md := agg2.Collect(aggregate.Scope{})
	require.Equal(t, 1, md.ResourceMetrics().Len())
	assert.Equal(t, map[string]any{"service.name": "gym-a"}, md.ResourceMetrics().At(0).Resource().Attributes().AsRaw())
	assert.Equal(t, map[string]int64{"s": 3}, providers(md))
	assert.Equal(t, int64(3), got.Accepted, "the restored resource line is not counted again")
}

// A file known to the store that waits past max_files keeps its stored offset: when its turn
// comes it resumes there, not from its start (which would count its lines again).
func TestFilesWaitingFileKeepsStoredOffset(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.events.jsonl"), filepath.Join(dir, "b.events.jsonl")
	followtest.AppendFile(t, a, lines("a", 3))
	followtest.AppendFile(t, b, lines("b", 3))
	store := &followtest.MemStore{}
	agg := newTestAggregator(t)
	ft, _ := tailer(t, agg, dir, true, store)
	require.NoError(t, ft.Shutdown(context.Background()))
	require.Equal(t, map[string]int64{"a": 3, "b": 3}, providers(agg.Collect(aggregate.Scope{})))

	followtest.AppendFile(t, a, lines("a", 1)) // written while the collector is down
	followtest.AppendFile(t, b, lines("b", 1))
	agg2 := newTestAggregator(t)
	got := followtest.NewCounts()
	ft2 := newEventsFileTailer(agg2, FilesOptions{
		Include: []string{filepath.Join(dir, "*.events.jsonl")}, PollInterval: time.Hour,
		MaxLineBytes: 1 << 16, MaxFiles: 1, Store: store,
	}, got.Record, zap.NewNop())
	require.NoError(t, ft2.Start(context.Background())) // polls once: a is followed, b waits
	ft2.Poll(context.Background())
	require.Equal(t, map[string]int64{"a": 1}, providers(agg2.Collect(aggregate.Scope{})))

	require.NoError(t, os.Remove(a)) // a's turn ends; b's comes
	for range 3 {
		ft2.Poll(context.Background())
	}
	assert.Equal(t, map[string]int64{"a": 1, "b": 1}, providers(agg2.Collect(aggregate.Scope{})), "b resumes at its stored offset")
	require.NoError(t, ft2.Shutdown(context.Background()))
}

// TestFilesCheckpointDuringALongPoll: checkpoints taken while the first poll reads a large
// backlog get in between two reads, rather than waiting for the poll to end, and each is
// consistent: a collector restored from it and resumed at its offsets counts every line of
// the file exactly once.
func TestFilesCheckpointDuringALongPoll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.events.jsonl")
	const n = 300_000
	followtest.AppendFile(t, path, lines("p", n))
	opts := FilesOptions{
		Include:          []string{filepath.Join(dir, "*.events.jsonl")},
		StartAtBeginning: true,
		PollInterval:     time.Hour,
		MaxLineBytes:     1 << 16,
		MaxFiles:         10,
	}
	start := func(store *storagetest.Mem) (*aggregate.Aggregator, *checkpoint.Checkpointer, *FileTailer) {
		agg := newTestAggregator(t)
		c := checkpoint.New(store, agg)
		_, err := c.Restore(context.Background())
		require.NoError(t, err)
		o := opts
		o.Store = c.Section("files")
		ft := newEventsFileTailer(agg, o, nil, zap.NewNop())
		t.Cleanup(func() { _ = ft.Shutdown(context.Background()) })
		return agg, c, ft
	}

	store := storagetest.NewMem(nil)
	_, c, ft := start(store)
	saved := saveWhilePolling(t, ft, c, store) // the first poll reads the backlog

	midPoll := 0
	for i := 0; i < len(saved); i += 1 + len(saved)/8 { // restoring each would take a minute
		ck := saved[i]
		agg, _, ft := start(storagetest.NewMem(map[string][]byte{checkpoint.Key: ck}))
		restored := providers(agg.Collect(aggregate.Scope{}))["p"]
		if restored > 0 && restored < n {
			midPoll++
		}
		require.NoError(t, ft.Start(context.Background()))
		require.Equal(t, map[string]int64{"p": n}, providers(agg.Collect(aggregate.Scope{})),
			"restored at %d lines and resumed: every line once", restored)
	}
	assert.Positive(t, midPoll, "a checkpoint got in during the poll (%d taken)", len(saved))
	t.Logf("%d checkpoints during the poll; of those restored, %d between its first and last line", len(saved), midPoll)
}

// TestFilesSparseHugeFile: a sparse file of 100 GB among the events files (nothing written:
// zeros, no newline; a real writer's crash or a copy-truncate with a writer far past the new
// end makes such files). Start reads at most a budget of it; each poll reads another budget of
// it in turn with the other files, whose lines keep being counted at every poll; the zeros are
// one line over max_line_bytes, rejected once and logged with the file; memory stays bounded.
func TestFilesSparseHugeFile(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.events.jsonl")
	require.NoError(t, os.WriteFile(huge, nil, 0o600))
	require.NoError(t, os.Truncate(huge, 100<<30))
	small := filepath.Join(dir, "small.events.jsonl")
	followtest.AppendFile(t, small, lines("s", 3))

	agg := newTestAggregator(t)
	got := followtest.NewCounts()
	ft, logs := budgetTailer(t, agg, dir, 16<<20, got.Record)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	require.NoError(t, ft.Start(context.Background()))
	t.Cleanup(func() { _ = ft.Shutdown(context.Background()) })
	assert.Equal(t, map[string]int64{"s": 3}, providers(agg.Collect(aggregate.Scope{})), "Start did not wait for the huge file")
	for i := range 8 {
		followtest.AppendFile(t, small, lines("s", 1))
		ft.Poll(context.Background())
		assert.Equal(t, map[string]int64{"s": int64(4 + i)}, providers(agg.Collect(aggregate.Scope{})), "poll %d", i)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use grew by %d KiB while reading the sparse file", grown/1024)
	assert.Less(t, grown, int64(8<<20), "bounded: the line buffer is at most max_line_bytes+1")
	assert.Equal(t, map[string]int64{"too_long": 1}, got.Rejected, "the zeros are one line, rejected once")
	var named bool
	for _, e := range logs.FilterMessage("files: lines rejected").All() {
		named = named || e.ContextMap()["path"] == huge
	}
	assert.True(t, named, "the rejection is logged with the file")
}

// budgetTailer is a tailer that reads at most budget bytes of a file per poll: a test stops it
// in the middle of a file.
func budgetTailer(t *testing.T, agg *aggregate.Aggregator, dir string, budget int64, record Recorder) (*FileTailer, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	ft := newEventsFileTailer(agg, FilesOptions{
		Include:          []string{filepath.Join(dir, "*.events.jsonl")},
		StartAtBeginning: true,
		PollInterval:     time.Hour,
		MaxLineBytes:     1 << 16,
		MaxFiles:         100,
		ReadBudget:       budget,
	}, record, zap.New(core))
	return ft, logs
}

// pollHalfway writes 1000 lines of provider p to a file and polls it once with a budget of
// 4 KiB, so that the poll stops in its middle; part is what it counted.
func pollHalfway(t *testing.T, p string) (path string, agg *aggregate.Aggregator, ft *FileTailer, logs *observer.ObservedLogs, part int64) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "a.events.jsonl")
	followtest.AppendFile(t, path, lines(p, 1000))
	agg = newTestAggregator(t)
	ft, logs = budgetTailer(t, agg, dir, 4096, nil)
	ft.Poll(context.Background())
	part = providers(agg.Collect(aggregate.Scope{}))[p]
	require.Less(t, part, int64(1000), "the poll stopped in the middle")
	return path, agg, ft, logs, part
}

// TestFilesDeletedMidRead: a file deleted while it is being read (its first poll read part of
// it) is read to its end from the descriptor still open, then let go: every line counted.
func TestFilesDeletedMidRead(t *testing.T) {
	path, agg, ft, _, _ := pollHalfway(t, "d")
	require.NoError(t, os.Remove(path))
	for range 3 {
		ft.Poll(context.Background())
	}
	assert.Equal(t, map[string]int64{"d": 1000}, providers(agg.Collect(aggregate.Scope{})))
	require.NoError(t, ft.Shutdown(context.Background()))
}

// TestFilesTruncatedMidRead: a file truncated and written again while it is being read (copy-
// truncate in the middle of a backlog) is read again from its beginning at the next poll,
// said in a log line; the lines not read before the truncation are lost, as with any reader of
// copy-truncate rotation, and none is counted twice.
func TestFilesTruncatedMidRead(t *testing.T) {
	path, agg, ft, logs, part := pollHalfway(t, "old")
	require.NoError(t, os.Truncate(path, 0))
	followtest.AppendFile(t, path, lines("new", 10))
	ft.Poll(context.Background())
	assert.Equal(t, map[string]int64{"old": part, "new": 10}, providers(agg.Collect(aggregate.Scope{})))
	assert.Equal(t, 1, logs.FilterMessage("files: file was truncated or replaced; reading it from the start").Len())
	require.NoError(t, ft.Shutdown(context.Background()))
}

// TestFiles100kMatching: 100,000 files match the glob, with max_files 1024. The first poll
// follows 1024 of them and counts their lines; the others wait, reported as a number at every
// poll and logged once (not once per file or per poll); memory is that of 1024 files. When the
// followed files go, the waiting ones take their places, and every line is counted once.
func TestFiles100kMatching(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 100,000 files")
	}
	dir := t.TempDir()
	const n, maxFiles = 100_000, 1024
	line := lines("m", 1)
	for i := range n {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%06d.events.jsonl", i)), []byte(line), 0o600))
	}
	core, logs := observer.New(zapcore.InfoLevel)
	agg := newTestAggregator(t)
	var waiting []int
	ft := newEventsFileTailer(agg, FilesOptions{
		Include:          []string{filepath.Join(dir, "*.events.jsonl")},
		StartAtBeginning: true,
		PollInterval:     time.Hour,
		MaxLineBytes:     1 << 16,
		MaxFiles:         maxFiles,
		Waiting:          func(n int) { waiting = append(waiting, n) },
	}, nil, zap.New(core))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	require.NoError(t, ft.Start(context.Background()))
	t.Logf("first poll over %d matching files: %v", n, time.Since(start))
	t.Cleanup(func() { _ = ft.Shutdown(context.Background()) })
	counted := func() int64 {
		var total int64
		for _, rm := range agg.Collect(aggregate.Scope{}).ResourceMetrics().All() {
			for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
				if m.Name() == "gym.sandbox.create_retry_total" {
					for _, dp := range m.Sum().DataPoints().All() {
						total += dp.IntValue()
					}
				}
			}
		}
		return total
	}
	assert.EqualValues(t, maxFiles, counted())
	start = time.Now()
	ft.Poll(context.Background())
	t.Logf("a poll with %d waiting: %v", n-maxFiles, time.Since(start))
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("heap in use: +%d KiB for %d followed files", (int64(after.HeapInuse)-int64(before.HeapInuse))/1024, maxFiles)
	assert.Equal(t, []int{n - maxFiles, n - maxFiles}, waiting)
	assert.Equal(t, 1, logs.FilterMessage("files: more matching files than max_files; the rest wait until followed files go").Len(), "logged once")

	// The followed files go (deleted after they were read): the next ones take their places.
	for i := range maxFiles {
		require.NoError(t, os.Remove(filepath.Join(dir, fmt.Sprintf("f%06d.events.jsonl", i))))
	}
	for range 3 { // let go one poll after they were last found, then the places are taken
		ft.Poll(context.Background())
	}
	assert.EqualValues(t, 2*maxFiles, counted(), "the next 1024, each line once")
	assert.Equal(t, n-2*maxFiles, waiting[len(waiting)-1])
}

// TestFilesCheckpointMidPollKeepsWaitingOffsets: a file waiting past max_files keeps its stored
// offset in a checkpoint taken in the middle of a poll (before the poll has reached it, so
// before it knows that it waits): a restart from that checkpoint resumes it there instead of
// reading it again from its beginning.
func TestFilesCheckpointMidPollKeepsWaitingOffsets(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.events.jsonl"), filepath.Join(dir, "b.events.jsonl")
	followtest.AppendFile(t, a, lines("a", 3))
	followtest.AppendFile(t, b, lines("b", 3))
	life := func(ck []byte, maxFiles int) (*aggregate.Aggregator, *checkpoint.Checkpointer, *FileTailer, *storagetest.Mem) {
		data := map[string][]byte{}
		if ck != nil {
			data[checkpoint.Key] = ck
		}
		store := storagetest.NewMem(data)
		agg := newTestAggregator(t)
		c := checkpoint.New(store, agg)
		_, err := c.Restore(context.Background())
		require.NoError(t, err)
		ft := newEventsFileTailer(agg, FilesOptions{
			Include: []string{filepath.Join(dir, "*.events.jsonl")}, StartAtBeginning: true,
			PollInterval: time.Hour, MaxLineBytes: 1 << 16, MaxFiles: maxFiles, Store: c.Section("files"),
		}, nil, zap.NewNop())
		t.Cleanup(func() { _ = ft.Shutdown(context.Background()) })
		return agg, c, ft, store
	}
	_, c1, ft1, store1 := life(nil, 10)
	require.NoError(t, ft1.Start(context.Background()))
	require.NoError(t, ft1.Shutdown(context.Background()))
	_, err := c1.Save(context.Background())
	require.NoError(t, err)

	const backlog = 300_000
	followtest.AppendFile(t, a, lines("a", backlog)) // written while the collector was down
	followtest.AppendFile(t, b, lines("b", 1))
	_, c2, ft2, store2 := life(store1.Value(checkpoint.Key), 1) // a is followed, b waits
	saved := saveWhilePolling(t, ft2, c2, store2)
	require.NotEmpty(t, saved)
	midPoll := 0
	for i := 0; i < len(saved); i += 1 + len(saved)/6 {
		agg, _, ft, _ := life(saved[i], 10)
		if providers(agg.Collect(aggregate.Scope{}))["a"] < 3+backlog {
			midPoll++
		}
		require.NoError(t, ft.Start(context.Background()))
		require.Equal(t, map[string]int64{"a": 3 + backlog, "b": 4}, providers(agg.Collect(aggregate.Scope{})),
			"checkpoint %d: b resumes at its stored offset, a at the checkpoint's", i)
	}
	assert.Positive(t, midPoll, "a checkpoint came in during the poll")
}

// saveWhilePolling starts ft and takes checkpoints with c until its first poll ends; it
// returns each checkpoint as stored.
func saveWhilePolling(t *testing.T, ft *FileTailer, c *checkpoint.Checkpointer, store *storagetest.Mem) [][]byte {
	polled := make(chan error)
	go func() { polled <- ft.Start(context.Background()) }()
	var saved [][]byte
	for {
		select {
		case err := <-polled:
			require.NoError(t, err)
			return saved
		default:
			_, err := c.Save(context.Background())
			require.NoError(t, err)
			saved = append(saved, store.Value(checkpoint.Key))
			time.Sleep(time.Millisecond)
		}
	}
}
