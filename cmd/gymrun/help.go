package main

// Usage: each subcommand's, and the command's (all of them). --help (or -h) prints a
// subcommand's usage and flags once, on standard output, and exits 0; a bad flag or argument
// prints them on standard error and exits 2.

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

const (
	summarySynopsis = "gymrun summary [--json] [--prices FILE] [--out FILE] PATH..."
	summaryAbout    = `summary: reads Gym run files (PATH: a run's main output STEM.jsonl, with its sidecar
STEM_failures.jsonl, or a directory of runs) and prints per benchmark attempts, failures,
reward (with its denominator), tokens, truncated responses, tool calls and durations; with
--prices FILE (USD per million tokens by model), the cost of each benchmark. A number too
large to hold is shown as unknown and listed under overflow.
`
	compareSynopsis = "gymrun compare [--json] [--html FILE] [--correction holm|none] [--level L] A B"
	compareAbout    = `compare: is run B better than run A? Per benchmark, the change in mean reward by task (paired
by task when it can) with its 95% interval, its p-value adjusted over the benchmarks
(--correction holm, the default, or none; --level 0.05), a verdict (regression, improvement,
no_change) with the change it could detect, and its causes (model, infrastructure,
denominator). A and B: runs, as summary reads them, or summary JSON files. Exit status 1 on a
regression.
`
	topSynopsis = "gymrun top [--url URL] [--run ID] [--interval D] [--once]"
	topAbout    = `top: the live page of a collector (its gymlive exporter, http://127.0.0.1:8890 by default) in
the terminal: a run's rollouts, failures, rewards, tokens, rollouts in flight, servers and the
collector's health, refreshed every interval. q quits, n shows the next run. --once prints one
frame and exits (for scripts; also when standard input is not a terminal).
`
)

// usage is the command's: every subcommand.
const usage = "usage: " + summarySynopsis + "\n       " + compareSynopsis + "\n       " + topSynopsis + "\n\n" +
	summaryAbout + "\n" + compareAbout + "\n" + topAbout + "\ngymrun SUBCOMMAND --help prints its flags.\n"

// isHelp tells whether args ask for the command's usage: help, -h, --help.
func isHelp(args []string) bool {
	return len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help")
}

// newFlags is a subcommand's flag set: its errors (a bad flag) on stderr, its usage printed by
// parseFlags alone.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {} // parseFlags prints it, once
	return fl
}

// parseFlags parses a subcommand's flags. done: the caller returns code (0 after --help, 2 after
// a bad flag, the usage printed either way).
func parseFlags(fl *flag.FlagSet, args []string, synopsis, about string, stdout, stderr io.Writer) (code int, done bool) {
	err := fl.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		writeUsage(stdout, fl, synopsis, about)
		return 0, true
	case err != nil: // the flag package has said which flag and why
		writeUsage(stderr, fl, synopsis, about)
		return 2, true
	}
	return 0, false
}

// writeUsage writes a subcommand's usage and its flags.
func writeUsage(w io.Writer, fl *flag.FlagSet, synopsis, about string) {
	fmt.Fprintf(w, "usage: %s\n\n%s\nflags:\n", synopsis, about)
	out := fl.Output()
	fl.SetOutput(w)
	fl.PrintDefaults()
	fl.SetOutput(out)
}
