package console

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

type nopSink struct{}

func (nopSink) Takes(Kind) bool         { return true }
func (nopSink) Metrics(pmetric.Metrics) {}
func (nopSink) Traces(ptrace.Traces)    {}
func (nopSink) Logs(plog.Logs)          {}

// stdoutMix is ten seconds of a busy Gym resources server's stdout, built from the sample's
// lines: one metrics batch (the SDK's export interval), 200 access-log lines, 60 spans, 20
// log records (one pretty-printed), and a 6-line traceback.
func stdoutMix(tb testing.TB) [][]byte {
	var access, spans, metrics, logLine, traceback, block [][]byte
	lines := bytes.Split(readSample(tb), []byte("\n"))
	inBlock := false
	for _, l := range lines {
		switch {
		case inBlock:
			block = append(block, l)
			inBlock = !bytes.Equal(l, []byte("}"))
		case bytes.Equal(l, []byte("{")):
			block, inBlock = append(block, l), true
		case Classify(l) == Metrics && len(l) > 1000:
			metrics = append(metrics, l)
		case Classify(l) == Span:
			spans = append(spans, l)
		case Classify(l) == Log:
			logLine = append(logLine, l)
		case bytes.HasPrefix(l, []byte("Traceback")) || bytes.HasPrefix(l, []byte("  ")) || bytes.HasPrefix(l, []byte("TimeoutError")):
			traceback = append(traceback, l)
		case len(l) > 0:
			access = append(access, l)
		}
	}
	var mix [][]byte
	mix = append(mix, metrics[len(metrics)-1])
	for i := range 200 {
		mix = append(mix, []byte(fmt.Sprintf(`INFO:     127.0.0.1:%d - "POST /verify HTTP/1.1" 200 OK`, 40000+i)))
		if i%10 == 0 {
			mix = append(mix, access[i/10%len(access)])
		}
		if i%10 < 3 {
			mix = append(mix, spans[i%len(spans)])
		}
		if i%10 == 5 {
			mix = append(mix, logLine[0])
		}
	}
	mix = append(mix, block...)
	mix = append(mix, traceback...)
	return mix
}

// BenchmarkStdoutMix: lines and bytes per second through the classifier and the decoders
// (pdata built, handed to a sink that drops it). Run with -cpu 1 for a per-core figure.
func BenchmarkStdoutMix(b *testing.B) {
	mix := stdoutMix(b)
	var n int64
	for _, l := range mix {
		n += int64(len(l) + 1)
	}
	s := NewLineDecoder("bench", 1<<22, nopSink{}, ratelog.NewLogger(zap.NewNop(), 1, 1))
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		for _, l := range mix {
			_, _ = s.Line(l)
		}
		s.Flush()
	}
	reportPerCPU(b, cpu0, int64(len(mix))*int64(b.N), n*int64(b.N))
}

// cpuTime is the CPU time this process used (user and system, every thread: the GC's too).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPerCPU reports lines and bytes per second of CPU time: on a shared machine the
// wall-clock rate says more about the neighbours than about the code.
func reportPerCPU(b *testing.B, cpu0 time.Duration, lines, bytes int64) {
	cpu := (cpuTime() - cpu0).Seconds()
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
	if cpu > 0 {
		b.ReportMetric(float64(lines)/cpu, "lines/cpu-s")
		b.ReportMetric(float64(bytes)/cpu/1e6, "MB/cpu-s")
	}
}

// BenchmarkLines: each kind of line on its own.
func BenchmarkLines(b *testing.B) {
	mix := stdoutMix(b)
	kinds := map[Kind][]byte{}
	for _, l := range mix {
		if _, ok := kinds[Classify(l)]; !ok {
			kinds[Classify(l)] = l
		}
	}
	for _, k := range []Kind{Text, Metrics, Span, Log} {
		l := kinds[k]
		b.Run(k.String(), func(b *testing.B) {
			s := NewLineDecoder("bench", 1<<22, nopSink{}, ratelog.NewLogger(zap.NewNop(), 1, 1))
			b.SetBytes(int64(len(l) + 1))
			b.ReportAllocs()
			cpu0 := cpuTime()
			for i := range b.N {
				_, _ = s.Line(l)
				if i%256 == 255 {
					s.Flush()
				}
			}
			reportPerCPU(b, cpu0, int64(b.N), int64(b.N)*int64(len(l)+1))
		})
	}
}
