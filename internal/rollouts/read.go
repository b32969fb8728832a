package rollouts

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
)

// ReadRows applies the rows of one finished run file of kind, from its start, to sink: the
// Source's decoding and mapping, for a reader of whole files (cmd/gymrun). A rejected row is
// handed to reject with its line number and the rows around it are applied. The file is
// finished: its end ends its last row, newline or not (the Source, following a file that may
// still be written, waits for that newline instead). It returns the rows applied and the read
// error, if any.
func ReadRows(src io.Reader, kind Kind, sink events.Sink, reject func(line int64, re *RowError)) (int64, error) {
	rd := NewRowDecoder(0)
	rd.Reset(io.MultiReader(src, bytes.NewReader(newline)), 0, 0, 0) // a blank last line is skipped
	var (
		row     Row
		evs     [MaxRowEvents]events.Event
		applied int64
	)
	for {
		err := rd.Next(kind, &row)
		switch {
		case errors.Is(err, io.EOF):
			return applied, rd.Err()
		case errors.Is(err, ErrIncomplete): // only a read error ends the stream inside a row
			return applied, rd.Err()
		case err != nil:
			var re *RowError
			if !errors.As(err, &re) {
				return applied, err
			}
			reject(rd.Lines(), re)
		default:
			for i := range row.Events(kind, &evs) {
				sink.Apply(&evs[i])
			}
			if e := row.Evidence; e != nil {
				for i := range e.Len() {
					sink.Apply(e.Event(i))
				}
			}
			applied++
		}
	}
}

var newline = []byte("\n")

// IsMainOutput tells a run's main output STEM.jsonl from the other files of a run (the health
// report, Gym's STEM_*.jsonl files, any S_*.jsonl beside an S.jsonl).
func IsMainOutput(path string) bool { return isMainOutput(path) }

// FailuresPath is the failures sidecar of the main output mainPath: DIR/STEM_failures.jsonl.
func FailuresPath(mainPath string) string {
	return strings.TrimSuffix(mainPath, ".jsonl") + failuresSuffix
}
