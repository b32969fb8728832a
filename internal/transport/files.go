package transport

import (
	"io"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/follow"
)

// OffsetStore keeps the read offsets of the file transport across restarts (the Collector's
// storage extension, behind the receiver).
type OffsetStore = follow.OffsetStore

// FilesOptions configure the file transport.
type FilesOptions = follow.Options

// FileTailer is the file transport: internal/follow's Follower, each file's bytes split into
// lines by a line reader, in front of the stream newStream made for the file. Start, Poll,
// Locker, Offsets and Shutdown are the follower's.
type FileTailer struct{ *follow.Follower }

// NewFileTailer returns a file tailer whose files' lines go to the streams newStream makes,
// one per file (for the source of the file's path); Start begins polling.
func NewFileTailer(newStream NewStream, opts FilesOptions, record Recorder, logger *zap.Logger) *FileTailer {
	return &FileTailer{follow.NewFollower(func(f *follow.File, _ follow.Opened) follow.Reader {
		return fileLines{newLineReader(newStream(f.Path), opts.MaxLineBytes, record)}
	}, opts, logger)}
}

// fileLines is a file's line reader as the follower's Reader. It never yields: a poll of the
// events files is one critical section, and its offsets are those of the lines it applied.
type fileLines struct{ *lineReader }

func (l fileLines) Read(f *follow.File, size int64, _ func()) error {
	before := l.read
	err := l.readFrom(io.NewSectionReader(f.F, f.Offset, size-f.Offset))
	f.Offset += l.read - before
	return err
}

func (l fileLines) Pending() int64 { return int64(l.end - l.start) }

func (l fileLines) Discard() { l.start, l.end, l.skip = 0, 0, false }

func (l fileLines) Finish() { l.finish() }

func (l fileLines) Flush() { l.flush() }

// State is the resource line the file's stream is under (nil on its default resource).
func (l fileLines) State() []byte { return l.st.ResourceLine() }

func (l fileLines) Restore(state []byte) error { return l.st.Restore(state) }
