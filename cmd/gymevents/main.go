// Command gymevents sends a Gym event stream (NDJSON, events-v1) to an otelcol-gym receiver.
//
//	gymevents send FILE [--endpoint http://127.0.0.1:4390 | --stream unix:///path|tcp://host:port]
//	gymevents gen [--seed 1] [--processes 16] [--events N] [--rate R] [--duration D]
//	              (--out FILE | --endpoint URL | --stream unix:///path|tcp://host:port)
//	gymevents wait URL [--timeout 60s]
//
// It posts FILE ("-" for standard input) to ENDPOINT/v1/events in batches of at most --batch
// lines and --max-bytes bytes. Each HTTP body is a stream of its own for the receiver, so a batch
// that does not start with a resource line is prefixed with the latest resource line read
// before it: every event keeps the resource the file gave it. The prefix line is not counted in
// the report. A 503 answer is retried after its Retry-After (bounded by --retries and
// --max-wait); a 413 answer splits the batch in two. It prints the receiver's errors with the
// file's line numbers and the accepted/rejected/unknown totals, and exits 1 when a line was
// rejected or a batch could not be delivered, 2 on a usage error.
//
// With --stream, send writes the file's lines over one stream connection (the receiver's
// stream transport) instead, and waits until the receiver has read them all; a stream does not
// answer, so only what was sent is reported.
//
// `gen` generates a realistic, seeded Gym event stream (internal/gymgen: many processes,
// rollouts with rewards and failures, lag and GC samples, sandboxes, pool waits, snapshots) and
// writes it to a file, posts it to a receiver over HTTP (in bodies of --batch lines, over
// --concurrency connections, counting what the receiver's answers accepted) or writes it over
// stream connections, at --rate events per second or as fast as it can, for --events events
// and/or --duration; it reports what it sent and what was accepted, and the rate achieved.
//
// `wait` polls URL (a health endpoint, such as the health_check extension's) until it answers
// 200, and exits 1 when it has not within --timeout.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage: gymevents send FILE [flags]
       gymevents gen [flags] (--out FILE | --endpoint URL | --stream unix:///path|tcp://host:port)
       gymevents wait URL [--timeout 60s]

send: sends the NDJSON Gym event stream in FILE ("-" for standard input) to an otelcol-gym
receiver's POST /v1/events, in batches, and reports accepted, rejected and unknown lines
(or, with --stream, writes the lines over one stream connection).
gen: generates a realistic, seeded Gym event stream and writes it to a file or drives a
receiver with it (gymevents gen --help lists its flags).
wait: polls URL until it answers 200 (e.g. http://127.0.0.1:13133/, the health check).

send flags:
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		newSendFlags(&sendOptions{}, stderr).PrintDefaults()
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "send":
		return runSend(args[1:], stdin, stdout, stderr)
	case "gen":
		return runGen(args[1:], stdout, stderr)
	case "wait":
		return runWait(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "gymevents: unknown command %q\n\n", args[0])
		fmt.Fprint(stderr, usage)
		newSendFlags(&sendOptions{}, stderr).PrintDefaults()
		return 2
	}
}
