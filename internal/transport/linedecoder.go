package transport

import "github.com/gym-telemetry/otelcol-gym/internal/ingest"

// LineDecoder decodes the lines of one source (a file, a connection, a request body) and hands
// what they say to its sink. The transports move lines; the receiver that starts one injects
// the decoder as a NewDecoder: the gym receiver's events.LineDecoder, or gym_console's.
type LineDecoder interface {
	// Line handles one complete line, without its newline.
	Line(line []byte) (ingest.Outcome, error)
	// Reject counts a line refused before it was handled (too long, cut short).
	Reject(reason string)
	// Flush ends a read: the decoder hands on what it holds and returns its counts since
	// the last Flush, which the caller records and clears.
	Flush() *ingest.Stats
	// ResourceLine is what a file's offsets keep to resume the decoder (nil: nothing), and
	// Restore gives it back to the decoder of the resumed file.
	ResourceLine() []byte
	Restore(line []byte) error
}

// NewDecoder makes the decoder of one source: source is a file's path (the file transport),
// the network of a connection ("tcp", "unix": the stream transport), or "http".
type NewDecoder func(source string) LineDecoder

// BodyDecoder is a LineDecoder that the HTTP transport reuses for one request body after
// another: Reset clears its counts and whatever a body's lines left current (a resource).
type BodyDecoder interface {
	LineDecoder
	Reset()
}

// NewBodyDecoder makes a decoder of the HTTP transport (source is "http"); the handler pools
// them.
type NewBodyDecoder func(source string) BodyDecoder

// Recorder receives the counts of every read (a body, a connection's read, a poll of a file),
// for self-telemetry.
type Recorder func(*ingest.Stats)
