package rollouts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The row reader against the floor (a bare newline scan with bytes.IndexByte, which is all a
// line splitter does) and against what a user would otherwise write (Python's json.loads per
// line), over the same files of main output rows of 2 KiB, 200 KiB and 20 MiB, read from the
// page cache through a 256 KiB buffer. One goroutine each: the figures are per core. The
// 20 MiB rows also report the peak RSS of a process that reads them.
//
//	go test ./internal/rollouts -run '^$' -bench Rows -benchtime 3x
//
// ROLLOUTS_BENCH_MB sets the size of each file (default 64 MiB).

var benchSizes = []struct {
	name   string
	row    int
	filler []byte // nil: newSyntheticRows' choice
}{
	{"2KiB", 2 << 10, nil},
	{"200KiB", 200 << 10, nil},
	{"20MiB", 20 << 20, nil},
	{"200KiB-dense", 200 << 10, denseFiller},
}

var (
	benchOnce  sync.Once
	benchDir   string
	benchFiles = map[string]string{}
	benchErr   error
)

// benchFile writes (once per run) a file of main output rows of the size's row length.
func benchFile(b *testing.B, name string, row int) string {
	benchOnce.Do(func() {
		benchDir, benchErr = os.MkdirTemp("", "rollouts-bench-")
		if benchErr != nil {
			return
		}
		total := 64 << 20
		if v, err := strconv.Atoi(os.Getenv("ROLLOUTS_BENCH_MB")); err == nil && v > 0 {
			total = v << 20
		}
		for _, s := range benchSizes {
			path := filepath.Join(benchDir, s.name+".jsonl")
			f, err := os.Create(path)
			if err != nil {
				benchErr = err
				return
			}
			rows := max(3, total/s.row)
			src := newSyntheticRows(s.row, rows)
			if s.filler != nil {
				src = newSyntheticRowsWith(s.filler, s.row, rows)
			}
			_, err = io.Copy(f, src)
			if err == nil {
				// Written back before any pass is timed: else the first benchmark reads the page
				// cache while the kernel writes 256 MiB of dirty pages out.
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				benchErr = err
				return
			}
			benchFiles[s.name] = path
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchFiles[name]
}

func BenchmarkRows(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name+"/reader", func(b *testing.B) {
			path := benchFile(b, s.name, s.row)
			r := NewRowDecoder(0)
			benchPasses(b, path, func(f *os.File) (int, error) { return readRows(r, f) })
		})
		b.Run(s.name+"/indexbyte", func(b *testing.B) {
			path := benchFile(b, s.name, s.row)
			buf := make([]byte, DefaultBufferBytes)
			benchPasses(b, path, func(f *os.File) (int, error) { return countNewlines(f, buf) })
		})
		b.Run(s.name+"/python_json_loads", func(b *testing.B) {
			path := benchFile(b, s.name, s.row)
			benchPython(b, path)
		})
		if s.row >= 20<<20 {
			b.Run(s.name+"/reader_peak_rss", func(b *testing.B) {
				path := benchFile(b, s.name, s.row)
				benchPeakRSS(b, path)
			})
		}
	}
}

// benchPasses reads the whole file b.N times with pass, reporting bytes/s and rows/s.
func benchPasses(b *testing.B, path string, pass func(*os.File) (int, error)) {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	rows := 0
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		n, err := pass(f)
		_ = f.Close()
		if err != nil {
			b.Fatal(err)
		}
		rows += n
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	// On a shared machine the wall clock counts time the process waited for a core: the CPU
	// time it used is the per-core figure.
	if cpu := (cpuTime() - cpu0).Seconds(); cpu > 0 {
		b.ReportMetric(float64(fi.Size())*float64(b.N)/cpu/1e6, "cpu-MB/s")
		b.ReportMetric(float64(rows)/cpu, "cpu-rows/s")
	}
}

// cpuTime is the CPU time (user and system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func readRows(r *RowDecoder, src io.Reader) (int, error) {
	r.Reset(src, 0, 0, 0)
	var row Row
	n := 0
	for {
		err := r.Next(Main, &row)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if !row.HasReward {
			return n, errors.New("a row without its reward")
		}
		n++
	}
}

// countNewlines is the floor: the bare newline scan of a line splitter.
func countNewlines(src io.Reader, buf []byte) (int, error) {
	n := 0
	for {
		k, err := src.Read(buf)
		b := buf[:k]
		for {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			n++
			b = b[i+1:]
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// pythonLoads is what a user would write to read the rows: json.loads per line. It times its
// own loop (interpreter start-up left out) and reports its peak RSS.
const pythonLoads = `
import json, resource, sys, time
t = time.perf_counter()
c = time.process_time()
rows = size = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        size += len(line)
        if line.strip():
            row = json.loads(line)
            if row.get("reward") is None:
                raise SystemExit("a row without its reward")
            rows += 1
print(json.dumps({"rows": rows, "bytes": size, "seconds": time.perf_counter() - t, "cpu": time.process_time() - c,
                  "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
`

func benchPython(b *testing.B, path string) {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 is not installed")
	}
	var rows, size int64
	var seconds, cpu float64
	var rss int64
	b.ResetTimer()
	for range b.N {
		out, err := exec.Command(py, "-c", pythonLoads, path).Output()
		if err != nil {
			b.Fatalf("python3: %v", err)
		}
		var res struct {
			Rows, Bytes int64
			Seconds     float64
			CPU         float64
			MaxrssKiB   int64 `json:"maxrss_kib"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			b.Fatalf("python3 said %q: %v", out, err)
		}
		rows += res.Rows
		size += res.Bytes
		seconds += res.Seconds
		cpu += res.CPU
		rss = max(rss, res.MaxrssKiB)
	}
	b.StopTimer()
	// Python's own timing of its loop, as the figures of this sub-benchmark.
	b.ReportMetric(seconds*1e9/float64(b.N), "py-ns/op")
	b.ReportMetric(float64(size)/seconds/1e6, "py-MB/s")
	b.ReportMetric(float64(rows)/seconds, "rows/s")
	if cpu > 0 {
		b.ReportMetric(float64(size)/cpu/1e6, "cpu-MB/s")
		b.ReportMetric(float64(rows)/cpu, "cpu-rows/s")
	}
	b.ReportMetric(float64(rss)/1024, "peak-RSS-MiB")
}

// benchPeakRSS reads the file in a child process (this test binary, TestHelperReadRows) and
// reports the child's peak RSS, against the same child that reads nothing.
func benchPeakRSS(b *testing.B, path string) {
	run := func(file string) int64 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReadRows$")
		cmd.Env = append(os.Environ(), "ROLLOUTS_READ_FILE="+file)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("child: %v: %s", err, out)
		}
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
	}
	var with, without int64
	for range b.N {
		with = max(with, run(path))
		without = max(without, run(""))
	}
	b.ReportMetric(float64(with)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(without)/1024, "idle-RSS-MiB")
}

// TestHelperReadRows is the child of benchPeakRSS: it reads ROLLOUTS_READ_FILE's rows.
func TestHelperReadRows(t *testing.T) {
	path, ok := os.LookupEnv("ROLLOUTS_READ_FILE")
	if !ok {
		t.Skip("the child process of BenchmarkRows")
	}
	if path == "" {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	n, err := readRows(NewRowDecoder(0), f)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "%d rows in %s\n", n, time.Since(start))
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		_ = os.RemoveAll(benchDir)
	}
	os.Exit(code)
}
