package transport

import "github.com/gym-telemetry/otelcol-gym/internal/ingest"

// LineStream takes the lines of one source (a file, a connection, a request body) for the
// decoder behind the transport. The transports move lines; the receiver that starts one
// injects the decoder as a NewStream: the gym events decoder (an aggregate.Stream), or
// another one that shares these transports (gym_console's).
type LineStream interface {
	// Line handles one complete line, without its newline.
	Line(line []byte) (ingest.Outcome, error)
	// Reject counts a line refused before it was handled (too long, cut short).
	Reject(reason string)
	// Flush ends a read: the stream hands on what it holds and returns its counts since
	// the last Flush, which the caller records and clears.
	Flush() *ingest.Stats
	// ResourceLine is what a file's offsets keep to resume the stream (nil: nothing), and
	// Restore gives it back to the stream of the resumed file.
	ResourceLine() []byte
	Restore(line []byte) error
}

// NewStream makes the stream of one source: source is a file's path (the file transport),
// the network of a connection ("tcp", "unix": the stream transport), or "http".
type NewStream func(source string) LineStream

// BodyStream is a LineStream that the HTTP transport reuses for one request body after
// another: Reset clears its counts and whatever a body's lines left current (a resource).
type BodyStream interface {
	LineStream
	Reset()
}

// NewBodyStream makes a stream of the HTTP transport (source is "http"); the handler pools
// them.
type NewBodyStream func(source string) BodyStream

// Recorder receives the counts of every read (a body, a connection's read, a poll of a file),
// for self-telemetry.
type Recorder func(*ingest.Stats)
