package events

import (
	"strings"

	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Sink takes the decoded events of one source (a request body, a connection, a file, a run):
// the one interface between every input and what applies its events (the aggregator). Events
// go under the sink's current resource: its default resource until SetResource. Not safe for
// concurrent use: each source has its own sink.
type Sink interface {
	// SetResource makes the resource of attrs current for the events after it. A refused
	// resource (a limit of the sink's) returns a *DecodeError and makes the default resource
	// current, so that no event goes under a process that did not send it. attrs need be
	// valid only during the call.
	SetResource(attrs []ResourceAttr) error
	// DefaultResource makes the default resource current again.
	DefaultResource()
	// Apply records ev under the current resource. ev need be valid only during the call; its
	// values meet what Decode guarantees (valid UTF-8, enumerations within their sets).
	Apply(ev *Event)
}

// NewSink makes the sink of one source, whose default resource has defaultAttrs
// (DefaultResource). The sink counts into stats what only it sees (measurements folded into an
// overflow series); the source counts its lines or rows there.
type NewSink func(defaultAttrs []ResourceAttr, stats *ingest.Stats) Sink

// DefaultResource returns the attributes of a source's default resource: gym.source, and
// log.file.path for a file (filePath "" leaves it out). A path that is not UTF-8 (a file name
// is any bytes) has its invalid bytes replaced by U+FFFD, as the rollouts source does: an
// attribute value must be UTF-8 for every backend.
func DefaultResource(source, filePath string) []ResourceAttr {
	attrs := []ResourceAttr{{Key: []byte(schema.ResourceSourceKey), Kind: ValueString, Str: []byte(source)}}
	if filePath != "" {
		attrs = append(attrs, ResourceAttr{Key: []byte(schema.ResourceFilePathKey), Kind: ValueString, Str: []byte(strings.ToValidUTF8(filePath, "\uFFFD"))})
	}
	return attrs
}
