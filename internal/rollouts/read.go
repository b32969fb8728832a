package rollouts

import (
	"errors"
	"io"
	"strings"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// ReadRows applies the rows of one finished run file of kind, from its start, to sink: the
// Source's decoding and mapping, for a reader of whole files (cmd/gymrun). A rejected row is
// handed to reject with its line number and the rows around it are applied; a last row without
// its newline is rejected as ingest.ReasonPartialLine. It returns the rows applied and the read
// error, if any.
func ReadRows(src io.Reader, kind Kind, sink events.Sink, reject func(line int64, re *RowError)) (int64, error) {
	rd := NewRowDecoder(0)
	rd.Reset(src, 0, 0, 0)
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
		case errors.Is(err, ErrIncomplete):
			if rd.Err() != nil {
				return applied, rd.Err()
			}
			reject(rd.Lines()+1, &RowError{Reason: ingest.ReasonPartialLine, Msg: "the file ends inside a row (no newline)"})
			return applied, nil
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
			applied++
		}
	}
}

// IsMainOutput tells a run's main output STEM.jsonl from the other files of a run (the health
// report, Gym's STEM_*.jsonl files, any S_*.jsonl beside an S.jsonl).
func IsMainOutput(path string) bool { return isMainOutput(path) }

// FailuresPath is the failures sidecar of the main output mainPath: DIR/STEM_failures.jsonl.
func FailuresPath(mainPath string) string {
	return strings.TrimSuffix(mainPath, ".jsonl") + failuresSuffix
}
