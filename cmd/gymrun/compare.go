package main

// gymrun compare: is run B better than run A? Each side is a run (read as summary reads it, with
// the rewards kept by rollout for pairing) or a summary JSON (gymrun.summary/v1); the
// comparison itself is in verdict.go, its outputs in compare_report.go and compare_html.go.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxSummaryBytes bounds a summary JSON read whole: a summary is a few KiB per benchmark.
const maxSummaryBytes = 64 << 20

// side is one run of a comparison.
type side struct {
	path    string
	benches map[string]BenchReport
	// runs: each benchmark's accumulated rows, for pairing by task; nil when read from a
	// summary JSON.
	runs map[string]*bench
	// overflow: the numbers of the side that do not fit (its summary's), by JSON Pointer.
	overflow map[string]bool
	warnings []string // what overflowed, from which file (a run's)
}

func compare(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("compare", stderr)
	asJSON := fl.Bool("json", false, "write the gymrun.compare/v1 JSON document instead of tables")
	htmlPath := fl.String("html", "", "also write a self-contained HTML report to `FILE`")
	o := compareOpts{}
	fl.StringVar(&o.correction, "correction", correctionHolm, "the family-wise correction over the benchmarks: holm or none")
	fl.Float64Var(&o.level, "level", 0.05, "the family-wise error level of the verdicts, in (0, 1)")
	if code, done := parseFlags(fl, args, compareSynopsis, compareAbout, stdout, stderr); done {
		return code
	}
	if fl.NArg() != 2 {
		writeUsage(stderr, fl, compareSynopsis, compareAbout)
		return 2
	}
	if o.correction != correctionHolm && o.correction != correctionNone {
		fmt.Fprintf(stderr, "gymrun: --correction %q: holm or none\n", o.correction)
		return 2
	}
	if !(o.level > 0 && o.level < 1) {
		fmt.Fprintf(stderr, "gymrun: --level %v: a level between 0 and 1, such as 0.05\n", o.level)
		return 2
	}
	var sides [2]*side
	for i, p := range fl.Args() {
		s, err := loadSide(p, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "gymrun:", err)
			return 2
		}
		sides[i] = s
	}
	r := compareSides(sides[0], sides[1], o)
	if *htmlPath != "" {
		if err := writeHTMLFile(*htmlPath, r); err != nil {
			fmt.Fprintln(stderr, "gymrun:", err)
			return 2
		}
	}
	var err error
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = writeCompareText(stdout, r)
	}
	if err != nil {
		fmt.Fprintln(stderr, "gymrun:", err)
		return 2
	}
	return gate(r)
}

// gate is the exit status of a comparison written: 1 on a regression (the CI gate), else 0.
func gate(r CompareReport) int {
	if r.Verdict == verdictRegression {
		return 1
	}
	return 0
}

// loadSide reads one side: a summary JSON when the file's first JSON object names the summary's
// schema, else a run (a main output or a directory of them).
func loadSide(path string, stderr io.Writer) (*side, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		schema, err := schemaOf(path)
		if err != nil {
			return nil, err
		}
		switch {
		case schema == Schema:
			return readSummaryJSON(path)
		case strings.HasPrefix(schema, "gymrun."):
			return nil, fmt.Errorf("%s: a %s document: compare reads runs and %s documents", path, schema, Schema)
		}
	}
	s := NewSummary()
	files, err := readRuns(s, []string{path}, stderr)
	if err != nil {
		return nil, err
	}
	sd, err := runSide(path, s, files)
	if err != nil {
		return nil, err
	}
	for _, w := range sd.warnings {
		fmt.Fprintln(stderr, "gymrun:", w)
	}
	return sd, nil
}

// runSide is the side of a run read into s.
func runSide(path string, s *Summary, files []FileReport) (*side, error) {
	if len(s.benches) == 0 {
		return nil, fmt.Errorf("%s: no row read: nothing to compare", path)
	}
	r := s.report(files, nil)
	return &side{path: path, benches: r.Benchmarks, runs: s.benches, overflow: set(r.Overflow), warnings: r.warnings}, nil
}

// schemaOf is the "schema" string of the file's first JSON value when it is an object that has
// one within its first MiB, else "": a run's rows never have a top-level schema key.
func schemaOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, 1<<20))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", nil
		}
		var schema string
		if key == "schema" && json.Unmarshal(v, &schema) == nil {
			return schema, nil
		}
	}
	return "", nil
}

// readSummaryJSON reads a summary document whole; an error names the file and line.
func readSummaryJSON(path string) (*side, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSummaryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxSummaryBytes {
		return nil, fmt.Errorf("%s: a summary JSON over %d bytes", path, maxSummaryBytes)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		off := int64(len(data))
		switch {
		case errors.As(err, &syn):
			off = syn.Offset
		case errors.As(err, &typ):
			off = typ.Offset
		}
		// The error is at the offset's last byte read.
		line := 1 + bytes.Count(data[:max(min(off, int64(len(data)))-1, 0)], []byte("\n"))
		return nil, fmt.Errorf("%s:%d: not a valid summary JSON: %w", path, line, err)
	}
	sd := &side{path: path, benches: r.Benchmarks, overflow: set(r.Overflow)}
	for _, name := range sortedNames(r.Benchmarks) {
		if err := checkSummaryBench(r.Benchmarks[name], sd.rewardOverflow(name)); err != nil {
			return nil, fmt.Errorf("%s: benchmark %q: %w", path, name, err)
		}
	}
	if len(r.Benchmarks) == 0 {
		return nil, fmt.Errorf("%s: no benchmark: nothing to compare", path)
	}
	return sd, nil
}

// maxCount bounds a count of rows read from a summary JSON: far beyond any run's, exact in a
// float64, and sums of a few of them stay within int64 (they never wrap into a match).
const maxCount = 1 << 53

// checkSummaryBench: what the comparison uses is there and consistent. overflowed: the
// summary names some of the rewards' statistics as overflowing (null).
func checkSummaryBench(b BenchReport, overflowed bool) error {
	w := b.Reward
	counts := []int64{b.Attempts, b.Scored, b.Failed, b.Masked, w.N, w.NaN, w.Missing, w.Infinite}
	for _, g := range b.FailedByGroup {
		counts = append(counts, g)
	}
	if h := w.Histogram; h != nil {
		counts = append(counts, h.Counts...)
	}
	for _, c := range counts {
		if c < 0 || c > maxCount {
			return fmt.Errorf("a count outside [0, %d]", int64(maxCount))
		}
	}
	switch {
	case b.Scored != w.N+b.Masked+w.NaN+w.Missing+w.Infinite || b.Attempts != b.Scored+b.Failed:
		return errors.New("counts that do not add up (attempts = scored + failed, scored = reward.n + masked + nan + missing + infinite)")
	case overflowed && w.N > 0:
		return nil // statistics unknown: compare tests nothing (not_finite), and needs none of them
	case (w.Mean != nil) != (w.N > 0):
		return errors.New("reward.mean must be given exactly when reward.n > 0")
	case w.N > 1 && w.SD == nil:
		return errors.New("no reward.sd (written by an older gymrun: run gymrun summary --json again)")
	case b.Failed > 0 && b.FailedByGroup == nil:
		return errors.New("no failed_by_group (written by an older gymrun: run gymrun summary --json again)")
	case w.Tasks < 0 || w.Tasks > w.N:
		return errors.New("reward.tasks must be between 0 and reward.n")
	case w.SD != nil && *w.SD < 0 || w.SEByTask != nil && *w.SEByTask < 0:
		return errors.New("a negative reward.sd or reward.se_by_task")
	case w.Histogram != nil && !(w.Histogram.Lo <= w.Histogram.Hi && finite(w.Histogram.Hi-w.Histogram.Lo)):
		return errors.New("a reward.histogram whose hi is below its lo, or too far from it for a finite width")
	}
	for g, n := range b.FailedByGroup {
		if n > b.Failed {
			return fmt.Errorf("failed_by_group %q above failed", g)
		}
	}
	return nil
}

// rewardOverflow tells whether the side's summary names a statistic of the benchmark's rewards
// as overflowing.
func (s *side) rewardOverflow(name string) bool {
	prefix := pointer("benchmarks", name, "reward") + "/"
	for p := range s.overflow {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// set is the strings of list as a set.
func set(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[s] = true
	}
	return m
}
