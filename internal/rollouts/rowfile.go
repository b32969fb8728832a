package rollouts

// A run file's follow.Reader (rowFile: rows applied one by one, the offset and line count per
// row) and the rollouts section's stored format (rolloutCodec).

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/gym-telemetry/otelcol-gym/internal/follow"
)

// Read applies the complete rows the file holds past its offset, one by one: the offset and
// the line count advance per row, and a waiting checkpoint comes in between two rows (yield).
func (rf *rowFile) Read(f *follow.File, size int64, yield func()) error {
	t := rf.t
	rf.partial = false
	if rf.scanned > f.Offset {
		// A row is being written: wait for its newline with a bare scan before reading it.
		nl, scanned, err := findNewline(f.F, rf.scanned, size, t.rd)
		if err != nil {
			return err
		}
		rf.scanned = scanned
		if !nl {
			rf.partial = true
			return nil
		}
	}
	t.rd.Reset(io.NewSectionReader(f.F, f.Offset, size-f.Offset), f.Offset, rf.lines, t.opts.MaxLineBytes)
	for {
		err := t.rd.Next(rf.kind, &t.row)
		if errors.Is(err, io.EOF) {
			rf.scanned = 0
			break
		}
		if errors.Is(err, ErrIncomplete) {
			rf.scanned = t.rd.Scanned()
			rf.partial = true
			break
		}
		// Next returns its *RowError unwrapped; errors.As would move a variable to the heap
		// for every row.
		if re, ok := err.(*RowError); ok { //nolint:errorlint // see above
			t.reject(rf, t.rd.Lines(), re)
		} else if err == nil {
			t.apply(rf.run, rf)
		}
		f.Offset, rf.lines = t.rd.Offset(), t.rd.Lines()
		t.beforeYield()
		yield() // the state is whole here: every row applied has its offset
	}
	return t.rd.Err()
}

// Pending is 0: the offset advances by whole rows.
func (rf *rowFile) Pending() int64 { return 0 }

// Discard starts the file again (truncated or rewritten in place): the main output written
// again is a new run.
func (rf *rowFile) Discard() {
	rf.lines, rf.scanned, rf.noLines, rf.partial = 0, 0, false, false
	if rf.kind == Main {
		rf.run.newRun()
		rf.run.traced = 0
	}
}

// Finish counts a last row that its file was let go before its newline.
func (rf *rowFile) Finish() {
	if rf.partial {
		rf.t.partial(rf)
	}
}

// Flush has nothing to hand on: a row still being written at shutdown stays unread, and a
// restart with storage reads it whole.
func (rf *rowFile) Flush() {}

// State is the count of lines before the offset (-1: unknown, the file was started at its end).
func (rf *rowFile) State() []byte {
	if rf.noLines {
		return []byte("-1")
	}
	return strconv.AppendInt(nil, rf.lines, 10)
}

func (rf *rowFile) Restore(state []byte) error {
	lines, err := strconv.ParseInt(string(state), 10, 64)
	if err != nil {
		return err
	}
	rf.lines, rf.noLines = max(lines, 0), lines < 0
	return nil
}

// rolloutCodec is the rollouts section's format (rolloutState): the follower's entries by path
// under files, with their line counts, and the runs whose resource is fixed (those followed,
// and the stored ones not followed yet, which stand until they are).
type rolloutCodec struct{ t *Source }

func (c rolloutCodec) Decode(data []byte) (map[string]follow.Stored, error) {
	var st rolloutState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, err
	}
	files := make(map[string]follow.Stored, len(st.Files))
	for p, sf := range st.Files {
		files[p] = follow.Stored{Head: sf.Head, Offset: sf.Offset, State: strconv.AppendInt(nil, sf.Lines, 10)}
	}
	c.t.storedRuns = st.Runs
	if c.t.storedRuns == nil {
		c.t.storedRuns = map[string]storedRun{}
	}
	return files, nil
}

func (c rolloutCodec) Encode(files map[string]follow.Stored) []byte {
	st := rolloutState{Files: make(map[string]storedRowFile, len(files)), Runs: map[string]storedRun{}}
	for p, sf := range files {
		lines, _ := strconv.ParseInt(string(sf.State), 10, 64)
		st.Files[p] = storedRowFile{Head: sf.Head, Offset: sf.Offset, Lines: lines}
	}
	for _, r := range c.t.runs {
		if r.fixed {
			st.Runs[r.path] = storedRun{RunID: r.runID}
		}
	}
	for p, sr := range c.t.storedRuns {
		if _, ok := st.Runs[p]; !ok {
			st.Runs[p] = sr
		}
	}
	data, _ := json.Marshal(st)
	return data
}

// findNewline scans f from `from` to `to` for a newline with the bare byte search, through the
// reader's buffer: found, and how far it scanned.
func findNewline(f io.ReaderAt, from, to int64, rd *RowDecoder) (bool, int64, error) {
	buf := rd.Buffer()
	for from < to {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), to-from)], from)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return true, from + int64(i), nil
		}
		from += int64(n)
		if err != nil && !errors.Is(err, io.EOF) {
			return false, from, err
		}
		if n == 0 {
			break
		}
	}
	return false, from, nil
}
