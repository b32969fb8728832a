package transport

import "github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/protocol"

// LineStream takes the lines of one source (a file, a connection) for a decoder: the gym
// events decoder (a protocol.Stream), or another decoder that shares these transports.
type LineStream interface {
	// Line handles one complete line, without its newline.
	Line(line []byte) (protocol.Outcome, error)
	// Reject counts a line refused before it was handled (too long, cut short).
	Reject(reason string)
	// Flush ends a read: the stream hands on what it holds and returns its counts since
	// the last Flush, which the caller records and clears.
	Flush() *protocol.StreamStats
	// ResourceLine is what a file's offsets keep to resume the stream (nil: nothing), and
	// Restore gives it back to the stream of the resumed file.
	ResourceLine() []byte
	Restore(line []byte) error
}

// eventStream is the gym events decoder's stream as a LineStream.
type eventStream struct{ *protocol.Stream }

func (s eventStream) Flush() *protocol.StreamStats { return &s.Stats }
