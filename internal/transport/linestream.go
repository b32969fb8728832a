package transport

import "github.com/gym-telemetry/otelcol-gym/internal/aggregate"

// LineStream takes the lines of one source (a file, a connection) for a decoder: the gym
// events decoder (a aggregate.Stream), or another decoder that shares these transports.
type LineStream interface {
	// Line handles one complete line, without its newline.
	Line(line []byte) (aggregate.Outcome, error)
	// Reject counts a line refused before it was handled (too long, cut short).
	Reject(reason string)
	// Flush ends a read: the stream hands on what it holds and returns its counts since
	// the last Flush, which the caller records and clears.
	Flush() *aggregate.StreamStats
	// ResourceLine is what a file's offsets keep to resume the stream (nil: nothing), and
	// Restore gives it back to the stream of the resumed file.
	ResourceLine() []byte
	Restore(line []byte) error
}

// eventStream is the gym events decoder's stream as a LineStream.
type eventStream struct{ *aggregate.Stream }

func (s eventStream) Flush() *aggregate.StreamStats { return &s.Stats }
