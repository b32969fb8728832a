// Package console reads the telemetry that the OpenTelemetry Python SDK's console exporters
// write into a program's stdout (nemo-lens, in a Gym run with the console exporter): metrics
// batches, spans and log records, each one JSON object, among the program's other output.
package console

import "bytes"

// Kind is what a line of stdout is.
type Kind uint8

const (
	// Text is anything that is not telemetry: ordinary output, a traceback, JSON of another
	// shape or a piece of one. It is skipped.
	Text Kind = iota
	// Metrics is a MetricsData.to_json line: {"resource_metrics": ...
	Metrics
	// Span is a ReadableSpan.to_json line: {"name": "...", "context": ...
	Span
	// Log is a LogRecord.to_json line: {"body": ...
	Log
	// BlockStart is a line that is only "{": the first line of a record written with the
	// SDK's default formatter (json.dumps with indent=4), as nemo-lens's log exporter does.
	BlockStart
)

func (k Kind) String() string {
	switch k {
	case Metrics:
		return "metrics"
	case Span:
		return "span"
	case Log:
		return "log"
	case BlockStart:
		return "block"
	}
	return "text"
}

// Classify tells a line's kind from its first keys only, without decoding it: a line is a
// record of a signal when it starts as the SDK writes that signal, whatever follows (a
// record that starts so but does not decode is a malformed record, not text). It does not
// allocate.
func Classify(line []byte) Kind {
	b := bytes.TrimRight(line, " \t\r")
	if len(b) == 0 || b[0] != '{' {
		return Text
	}
	if len(b) == 1 {
		return BlockStart
	}
	key, rest, ok := firstKey(b[1:])
	if !ok {
		return Text
	}
	switch string(key) {
	case "resource_metrics":
		return Metrics
	case "body":
		return Log
	case "name":
		// A span's name, then its context: many JSON logs start with "name", none of them
		// with a context next.
		rest, ok = skipString(skipWS(rest))
		if !ok {
			return Text
		}
		rest = skipWS(rest)
		if len(rest) == 0 || rest[0] != ',' {
			return Text
		}
		if key, _, ok = firstKey(rest[1:]); ok && string(key) == "context" {
			return Span
		}
	}
	return Text
}

// firstKey reads `ws "key" ws :` and returns the key (without escapes: the SDK's keys have
// none) and what follows the colon.
func firstKey(b []byte) (key, rest []byte, ok bool) {
	b = skipWS(b)
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 || end > 32 {
		return nil, nil, false
	}
	key = b[1 : 1+end]
	if bytes.IndexByte(key, '\\') >= 0 {
		return nil, nil, false
	}
	b = skipWS(b[2+end:])
	if len(b) == 0 || b[0] != ':' {
		return nil, nil, false
	}
	return key, b[1:], true
}

// skipString skips a JSON string (escapes included) at the start of b.
func skipString(b []byte) ([]byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, false
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[i+1:], true
		}
	}
	return nil, false
}

func skipWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}
