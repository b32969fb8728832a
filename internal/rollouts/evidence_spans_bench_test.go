package rollouts

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// BenchmarkEvidenceSpans reads BenchmarkEvidenceRows' rows as the default configuration does,
// with rollouts.traces on: the reader keeps what the spans need, and each row's trace is built
// (into a span slice emptied every 64 rows, as a hand-off would). Beside
// BenchmarkEvidenceRows/*/reader it is the cost of the traces; not in bench/compare.sh, whose
// base trees have neither.
//
//	go test ./internal/rollouts -run '^$' -bench 'Evidence(Rows|Spans)' -benchmem
func BenchmarkEvidenceSpans(b *testing.B) {
	for _, s := range evidenceBenchSizes {
		b.Run(s.name+"/reader+spans", func(b *testing.B) {
			path := evidenceBenchFile(b, s.name, s.row)
			r := NewRowDecoder(0)
			r.KeepSpans(true)
			var sb SpanBuilder
			td := ptrace.NewTraces()
			spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
			now := time.Unix(1767225600, 0)
			benchPasses(b, path, func(f *os.File) (int, error) {
				r.Reset(f, 0, 0, 0)
				var row Row
				n := 0
				for {
					start := r.Offset()
					err := r.Next(Main, &row)
					if errors.Is(err, io.EOF) {
						return n, nil
					}
					if err != nil {
						return n, err
					}
					if sb.Append(spans, &row, RowSpans{RunID: "run-bench", RowStart: start, Now: now}) == 0 {
						return n, errors.New("a row without spans")
					}
					if n++; n%64 == 0 {
						spans = td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
						spans.RemoveIf(func(ptrace.Span) bool { return true })
					}
				}
			})
		})
	}
}
