package transport

import (
	"io"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/checkpoint"
	"github.com/gym-telemetry/otelcol-gym/internal/follow"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// OffsetStore keeps the read offsets of the file transport across restarts (the Collector's
// storage extension, behind the receiver).
type OffsetStore = follow.OffsetStore

// FilesOptions configure the file transport.
type FilesOptions = follow.Options

// FileTailer is the file transport: internal/follow's Follower, each file's bytes split into
// lines by a line reader, in front of the decoder newDecoder made for the file. Start, Poll,
// Locker, Offsets and Shutdown are the follower's.
type FileTailer struct{ *follow.Follower }

// NewFileTailer returns a file tailer whose files' lines go to the decoders newDecoder makes,
// one per file (for the source of the file's path); Start begins polling. Its polls hold a
// checkpoint.Gate (unless opts.Lock names another lock), which each file's reader yields
// after every read: a checkpoint waits for at most one read of one file (a buffer of lines),
// not for a poll over a large backlog.
func NewFileTailer(newDecoder NewDecoder, opts FilesOptions, record Recorder, logger *zap.Logger) *FileTailer {
	if opts.Lock == nil {
		opts.Lock = &checkpoint.Gate{}
	}
	refusals := newRefusalLog(logger, "files")
	return &FileTailer{follow.NewFollower(func(f *follow.File, _ follow.Opened) follow.Reader {
		return fileLines{newLineReader(newDecoder(f.Path), opts.MaxLineBytes, func(s *ingest.Stats) {
			refusals.rejected("path", f.Path, s, "")
			if record != nil {
				record(s)
			}
		})}
	}, opts, logger)}
}

// fileLines is a file's line reader as the follower's Reader. Its offsets are those of the
// lines it applied; it yields after each read, its file's offset brought up to it first.
type fileLines struct{ *lineReader }

func (l fileLines) Read(f *follow.File, size int64, yield func()) error {
	from, before := f.Offset, l.read
	l.chunkFn = func() {
		f.Offset = from + l.read - before
		yield()
	}
	err := l.readFrom(io.NewSectionReader(f.F, from, size-from))
	l.chunkFn = nil
	f.Offset = from + l.read - before
	return err
}

func (l fileLines) Pending() int64 { return int64(l.end - l.start) }

func (l fileLines) Discard() { l.start, l.end, l.skip = 0, 0, false }

func (l fileLines) Finish() { l.finish() }

func (l fileLines) Flush() { l.flush() }

// State is the resource line the file's decoder is under (nil on its default resource).
func (l fileLines) State() []byte { return l.dec.ResourceLine() }

func (l fileLines) Restore(state []byte) error { return l.dec.Restore(state) }
