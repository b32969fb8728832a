// Command gymrun reads the files of NeMo Gym runs (gym eval run's STEM.jsonl and its failures
// sidecar) and summarises them by benchmark.
//
//	gymrun summary [--json] [--prices FILE] [--out FILE] PATH...
//	gymrun compare [--json] [--html FILE] [--correction holm|none] [--level L] A B
//
// PATH is a run's main output DIR/STEM.jsonl, or a directory whose main outputs are read (not
// its subdirectories). Each main output is read with its sidecar STEM_failures.jsonl when there
// is one, by the receiver's own decoding and mapping (internal/rollouts), so that the summary
// counts what the collector's metrics count. A rejected row is reported on standard error with
// its file and line and counted; the rows around it are read. With --prices, a price table
// (internal/prices: USD per million tokens by model), each benchmark's cost too. Exit status: 0
// when the summary was written, 2 on a usage error or a file (or price table) that cannot be read.
// compare (compare.go) reads two runs, or their summaries, and says per benchmark whether B's
// reward changed and why.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/gym-telemetry/otelcol-gym/internal/prices"
	"github.com/gym-telemetry/otelcol-gym/internal/rollouts"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "top" {
		os.Exit(runTop(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if isHelp(args) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if len(args) > 0 && args[0] == "compare" {
		return compare(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "summary" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fl := newFlags("summary", stderr)
	asJSON := fl.Bool("json", false, "write the gymrun.summary/v1 JSON document instead of tables")
	pricesPath := fl.String("prices", "", "a price table (USD per million tokens by model, docs/gymrun.md): each benchmark's cost")
	out := fl.String("out", "", "write to this file (whole, or not at all; its directory created) instead of standard output")
	if code, done := parseFlags(fl, args[1:], summarySynopsis, summaryAbout, stdout, stderr); done {
		return code
	}
	var table *prices.Table
	if *pricesPath != "" {
		var err error
		if table, err = prices.Load(*pricesPath); err != nil {
			fmt.Fprintln(stderr, "gymrun:", err)
			return 2
		}
	}
	if fl.NArg() == 0 {
		writeUsage(stderr, fl, summarySynopsis, summaryAbout)
		return 2
	}
	s := NewSummary()
	files, err := readRuns(s, fl.Args(), stderr)
	if err != nil {
		fmt.Fprintln(stderr, "gymrun:", err)
		return 2
	}
	r := s.report(files, table)
	for _, w := range r.warnings {
		fmt.Fprintln(stderr, "gymrun:", w)
	}
	write := func(w io.Writer) error {
		if *asJSON {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		}
		return writeText(w, r)
	}
	if *out != "" {
		err = writeFile(*out, write)
	} else {
		err = write(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "gymrun:", err)
		return 2
	}
	return 0
}

// readRuns applies the runs the paths name to s: each main output, then its sidecar when
// there is one.
func readRuns(s *Summary, paths []string, stderr io.Writer) ([]FileReport, error) {
	mains, err := mainOutputs(paths)
	if err != nil {
		return nil, err
	}
	var files []FileReport
	for _, m := range mains {
		f, err := readFile(s, m, rollouts.Main, stderr)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		f, err = readFile(s, rollouts.FailuresPath(m), rollouts.Failures, stderr)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a run without failures has no sidecar
		}
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// mainOutputs returns the main outputs the paths name: a file as given, a directory's main
// outputs in name order. A path that cannot be read, or a directory without one, is an error.
func mainOutputs(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		names, err := filepath.Glob(filepath.Join(p, "*.jsonl"))
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		n := len(out)
		for _, name := range names {
			if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() && rollouts.IsMainOutput(name) {
				out = append(out, name)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s: no run's main output (STEM.jsonl) in the directory", p)
		}
	}
	return out, nil
}

// readFile applies the rows of one run file to s, reporting each rejected row on stderr.
func readFile(s *Summary, path string, kind rollouts.Kind, stderr io.Writer) (FileReport, error) {
	fr := FileReport{Path: path, Kind: kind.String(), ByReason: map[string]int64{}}
	f, err := os.Open(path)
	if err != nil {
		return fr, err
	}
	defer f.Close()
	s.cur, s.file = nil, path
	fr.Rows, err = rollouts.ReadRows(f, kind, s, func(line int64, re *rollouts.RowError) {
		fr.Rejected++
		fr.ByReason[re.Reason]++
		fmt.Fprintf(stderr, "gymrun: %s:%d: row rejected (%s): %s\n", path, line, re.Reason, re.Msg)
	})
	if err != nil {
		return fr, fmt.Errorf("%s: %w", path, err)
	}
	return fr, nil
}

// writeFile writes a file whole or not at all: a job's summary is read by other tools, which
// must never see half of one. Its directory is created.
func writeFile(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if err = write(tmp); err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
