package console

import (
	"bytes"
	"os"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/internal/console/oldjson"
	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// FuzzDecodeOracle compares the gymjson decoder with the encoding/json one it replaced
// (oldjson): the same outcome and the same pdata, record by record, but where the old one's
// NaN rewriting leaked or past gymjson.MaxDepth (corpusChanged).
func FuzzDecodeOracle(f *testing.F) {
	for _, p := range []string{"../../testdata/console/gym-server-stdout.log", "../../testdata/console/real-sdk-stdout.log"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range bytes.Split(b, []byte("\n")) {
			switch Classify(l) {
			case Metrics:
				f.Add(uint8(0), l)
			case Span:
				f.Add(uint8(1), l)
			case Log:
				f.Add(uint8(2), l)
			}
		}
	}
	for _, c := range decodeCorpus() {
		f.Add(uint8(Classify([]byte(c.in))-Metrics), []byte(c.in))
	}
	f.Fuzz(func(t *testing.T, k uint8, b []byte) {
		kind := []string{"metrics", "span", "log"}[k%3]
		td, ld := ptrace.NewTraces(), plog.NewLogs()
		otd, old := ptrace.NewTraces(), plog.NewLogs()
		var g resourceGroup
		var og oldjson.Group
		var mr metricsReader
		var sr spanReader
		var lr logReader
		mayDiffer := false
		for _, rec := range bytes.Split(b, []byte("\n")) {
			if len(rec) == 0 || rec[0] != '{' {
				continue
			}
			md, omd := pmetric.NewMetrics(), pmetric.NewMetrics()
			var err error
			switch kind {
			case "metrics":
				err = mr.decodeMetrics(rec, md)
			case "span":
				err = sr.decodeSpan(rec, td, &g)
			case "log":
				err = lr.decodeLog(rec, ld, &g)
			}
			_, serr := gymjson.Skip(rec, 0, 1)
			changed := serr == gymjson.ErrTooDeep || bytes.Contains(rec, []byte("NaN")) || bytes.Contains(rec, []byte("Infinity")) //nolint:errorlint // never wrapped
			if changed {
				mayDiffer = true
			}
			got := ""
			if err != nil {
				got = reasonOf(err)
			}
			want, oerr := oldjson.Decode(kind, rec, omd, otd, old, &og)
			if got != want {
				if changed {
					return // corpusChanged's kinds of change
				}
				t.Fatalf("%s %q: got %q (%v), want %q (%v)", kind, rec, got, err, want, oerr)
			}
			if got == "" && kind == "metrics" && !changed {
				equalProto(t, rec, (&pmetric.ProtoMarshaler{}).MarshalMetrics, md, omd)
			}
		}
		if mayDiffer {
			return
		}
		equalProto(t, b, (&ptrace.ProtoMarshaler{}).MarshalTraces, td, otd)
		equalProto(t, b, (&plog.ProtoMarshaler{}).MarshalLogs, ld, old)
	})
}

func equalProto[T any](t *testing.T, in []byte, marshal func(T) ([]byte, error), got, want T) {
	t.Helper()
	g, err := marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("%q: pdata differs", in)
	}
}
