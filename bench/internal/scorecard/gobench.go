package scorecard

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// GoBench reads `go test -bench` output and returns, for each benchmark (its name without the
// -GOMAXPROCS suffix), every value it reported in unit (one per line of it: -count gives several).
func GoBench(r io.Reader, unit string) (map[string][]float64, error) {
	out := map[string][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		// Name, iterations, then value-unit pairs.
		for i := 2; i+1 < len(f); i += 2 {
			if f[i+1] != unit {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a number", name, f[i])
			}
			out[name] = append(out[name], v)
		}
	}
	return out, sc.Err()
}

// Median is the median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[n/2]
}

// The console path's benchmark (internal/console/realsdk_bench_test.go) and its unit.
const (
	ConsoleBench     = "BenchmarkRealSDK/gym_console"
	ConsoleRefBench  = "BenchmarkRealSDK/python_json_loads"
	ConsoleBenchUnit = "cpu-MB/s"
)

// ConsoleResult is the console path's Result from `go test -bench` output that ran
// BenchmarkRealSDK (the medians of its runs); ok is false when the output has no such runs.
func ConsoleResult(r io.Reader) (res Result, ok bool, err error) {
	m, err := GoBench(r, ConsoleBenchUnit)
	if err != nil {
		return Result{}, false, err
	}
	g, p := m[ConsoleBench], m[ConsoleRefBench]
	if len(g) == 0 || len(p) == 0 {
		return Result{}, false, nil
	}
	return Result{Path: Console, Figure: Median(g), Reference: Median(p)}, true, nil
}
