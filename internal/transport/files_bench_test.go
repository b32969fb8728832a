package transport

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// nopStream takes lines and does nothing with them: the benchmark measures the follower and
// the line splitter, not a decoder.
type nopStream struct{ stats ingest.Stats }

func (s *nopStream) Line([]byte) (ingest.Outcome, error) { s.stats.Accepted++; return 0, nil }
func (s *nopStream) Reject(string)                       {}
func (s *nopStream) Flush() *ingest.Stats                { return &s.stats }
func (s *nopStream) ResourceLine() []byte                { return nil }
func (s *nopStream) Restore([]byte) error                { return nil }

// BenchmarkFileTailer is the events files' path through the follower: a new tailer per pass
// reads a 32 MiB file of 200-byte lines from its beginning. Its cpu-MB/s is per core.
func BenchmarkFileTailer(b *testing.B) {
	dir := b.TempDir()
	line := append(bytes.Repeat([]byte("x"), 199), '\n')
	data := bytes.Repeat(line, (32<<20)/len(line))
	path := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for range b.N {
		ft := NewFileTailer(func(string) LineDecoder { return &nopStream{} }, FilesOptions{
			Include: []string{path}, StartAtBeginning: true, PollInterval: time.Hour, MaxLineBytes: 1 << 20, MaxFiles: 10,
		}, func(*ingest.Stats) {}, zap.NewNop())
		if err := ft.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		_ = ft.Shutdown(context.Background())
	}
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()).Seconds()
	if cpu > 0 {
		b.ReportMetric(float64(len(data))*float64(b.N)/cpu/1e6, "cpu-MB/s")
	}
}
