package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"time"
)

type sendOptions struct {
	endpoint string
	batch    int
	maxBytes int
	retries  int
	maxWait  time.Duration
	timeout  time.Duration
	gzip     bool
	quiet    bool
	stream   string
}

func newSendFlags(o *sendOptions, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.endpoint, "endpoint", "http://127.0.0.1:4390", "receiver base URL; the events go to its /v1/events (a URL that already ends in /v1/events is used as is)")
	fs.IntVar(&o.batch, "batch", 1000, "lines per HTTP request, at most")
	fs.IntVar(&o.maxBytes, "max-bytes", 8<<20, "bytes per HTTP request, at most (a single longer line is sent alone)")
	fs.IntVar(&o.retries, "retries", 5, "retries of a request answered 503, or refused at connect, before giving up on it")
	fs.DurationVar(&o.maxWait, "max-wait", 30*time.Second, "longest wait before one retry, whatever Retry-After says")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "timeout of one HTTP request")
	fs.BoolVar(&o.gzip, "gzip", false, "gzip the request bodies")
	fs.BoolVar(&o.quiet, "quiet", false, "print only the errors and the totals")
	fs.StringVar(&o.stream, "stream", "", "send the lines over one stream connection instead of HTTP: unix:///path/to.sock or tcp://host:port (the stream transport does not answer: only what was sent is reported)")
	return fs
}

// parseInterleaved parses flags that may come before or after the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// parseCommand parses a command's flags and arguments, with usage over the flags as its help;
// when ok is false the command ends with code (0 after --help).
func parseCommand(fs *flag.FlagSet, args []string, usage string, stderr io.Writer) (pos []string, code int, ok bool) {
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, 0, false
	case err != nil:
		return nil, 2, false
	}
	return pos, 0, true
}

func runSend(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o sendOptions
	fs := newSendFlags(&o, stderr)
	pos, code, ok := parseCommand(fs, args, usage, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "gymevents send: want exactly one FILE, got %d\n", len(pos))
		fs.Usage()
		return 2
	}
	if o.batch < 1 || o.maxBytes < 1 || o.retries < 0 {
		fmt.Fprintln(stderr, "gymevents send: --batch and --max-bytes must be >= 1, --retries >= 0")
		return 2
	}
	if o.stream != "" && flagSet(fs, "endpoint") {
		fmt.Fprintln(stderr, "gymevents send: --stream and --endpoint exclude each other")
		return 2
	}
	target := ""
	var err error
	if o.stream != "" {
		if _, _, err := parseStreamURL(o.stream); err != nil {
			fmt.Fprintf(stderr, "gymevents send: --stream: %v\n", err)
			return 2
		}
	} else if target, err = eventsURL(o.endpoint); err != nil {
		fmt.Fprintf(stderr, "gymevents send: --endpoint: %v\n", err)
		return 2
	}

	var in io.Reader
	name := pos[0]
	if name == "-" {
		in, name = stdin, "standard input"
	} else {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "gymevents send: %v\n", err)
			return 1
		}
		defer f.Close()
		in = f
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	if o.stream != "" {
		st, err := sendOverStream(ctx, in, o.stream, o.timeout)
		fmt.Fprintf(stdout, "%s: %d lines (%d bytes) over %s", name, st.lines, st.bytes, o.stream)
		if err != nil {
			fmt.Fprintln(stdout)
			fmt.Fprintf(stderr, "gymevents send: %s: %v\n", o.stream, err)
			return 1
		}
		fmt.Fprintln(stdout, "; a stream does not answer: the receiver counts them in otelcol_receiver_gym_lines_accepted/_rejected/_unknown")
		return 0
	}

	s := &sender{
		url:    target,
		opts:   o,
		client: &http.Client{Timeout: o.timeout},
		out:    stdout,
		sleep:  sleepCtx,
	}
	tot, err := s.sendStream(ctx, in)
	if err != nil {
		fmt.Fprintf(stderr, "gymevents send: %s: %v\n", name, err)
	}
	fmt.Fprintf(stdout, "%s: %d lines in %d requests: accepted %d, rejected %d, unknown %d",
		name, tot.lines, tot.requests, tot.accepted, tot.rejected, tot.unknown)
	if tot.failed > 0 {
		fmt.Fprintf(stdout, ", NOT DELIVERED %d", tot.failed)
	}
	fmt.Fprintln(stdout)
	if err != nil || tot.rejected > 0 || tot.failed > 0 {
		return 1
	}
	return 0
}

// flagSet tells whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// eventsURL turns --endpoint into the URL of POST /v1/events.
func eventsURL(endpoint string) (string, error) {
	if !strings.Contains(endpoint, "://") {
		endpoint = "http://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	if u.Host == "" {
		return "", errors.New("no host")
	}
	if !strings.HasSuffix(u.Path, "/v1/events") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/events"
	}
	return u.String(), nil
}

// answer is the receiver's JSON reply (docs/receiver.md, Transports).
type answer struct {
	Accepted int64 `json:"accepted"`
	Rejected int64 `json:"rejected"`
	Unknown  int64 `json:"unknown"`
	Errors   []struct {
		Line  int64  `json:"line"`
		Error string `json:"error"`
	} `json:"errors"`
}

type totals struct {
	lines, requests                     int64
	accepted, rejected, unknown, failed int64
}

type sender struct {
	url    string
	opts   sendOptions
	client *http.Client
	out    io.Writer
	sleep  func(context.Context, time.Duration) error
}

// line is one line of the input without its line terminator.
type line struct {
	no   int64 // 1-based line number in the file
	text []byte
}

// batch is a run of consecutive lines of the file, with the resource line in force before
// its first line (nil when none, or when the batch starts with a resource line).
type batch struct {
	prefix []byte
	lines  []line
}

func (s *sender) sendStream(ctx context.Context, in io.Reader) (totals, error) {
	var tot totals
	r := bufio.NewReaderSize(in, 64<<10)
	var (
		cur      batch
		curBytes int
		resource []byte // latest resource line read so far
		no       int64
	)
	flush := func() error {
		if len(cur.lines) == 0 {
			return nil
		}
		err := s.deliver(ctx, cur, &tot)
		cur = batch{}
		curBytes = 0
		return err
	}
	for {
		text, rerr := r.ReadBytes('\n')
		if len(text) > 0 {
			no++
			text = bytes.TrimSuffix(text, []byte("\n"))
			if curBytes > 0 && curBytes+len(text)+1 > s.opts.maxBytes {
				if err := flush(); err != nil {
					return tot, err
				}
			}
			if len(cur.lines) == 0 && !isResourceLine(text) && resource != nil {
				cur.prefix = resource
				curBytes = len(resource) + 1
			}
			cur.lines = append(cur.lines, line{no: no, text: text})
			curBytes += len(text) + 1
			tot.lines++
			if isResourceLine(text) {
				resource = text
			}
			if len(cur.lines) >= s.opts.batch {
				if err := flush(); err != nil {
					return tot, err
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			_ = flush()
			return tot, rerr
		}
	}
	return tot, flush()
}

var resourceRE = regexp.MustCompile(`^\s*\{\s*"event"\s*:\s*"resource"\s*[,}]`)

// isResourceLine tells whether a line is a `resource` event. It only needs to agree with the
// receiver on well-formed lines: a malformed resource line is rejected by the receiver and
// then counts as no resource in either place.
func isResourceLine(text []byte) bool {
	if !bytes.Contains(text, []byte(`"resource"`)) {
		return false
	}
	var ev struct {
		Event *string `json:"event"`
	}
	if err := json.Unmarshal(text, &ev); err == nil {
		return ev.Event != nil && *ev.Event == "resource"
	}
	// encoding/json refuses Python's NaN/Infinity tokens that the receiver accepts.
	return resourceRE.Match(text)
}

// deliver sends one batch, splitting it on 413, and adds its results to tot. It returns an
// error only when the context is done.
func (s *sender) deliver(ctx context.Context, b batch, tot *totals) error {
	var body bytes.Buffer
	offset := int64(0) // body line number of the batch's first line, minus one
	if b.prefix != nil {
		body.Write(b.prefix)
		body.WriteByte('\n')
		offset = 1
	}
	for _, l := range b.lines {
		body.Write(l.text)
		body.WriteByte('\n')
	}
	first, last := b.lines[0].no, b.lines[len(b.lines)-1].no

	status, ans, err := s.post(ctx, body.Bytes())
	tot.requests++
	if ctx.Err() != nil {
		tot.failed += int64(len(b.lines))
		return ctx.Err()
	}
	switch {
	case err != nil:
		fmt.Fprintf(s.out, "lines %d-%d: not delivered: %v\n", first, last, err)
		tot.failed += int64(len(b.lines))
		return nil
	case status == http.StatusRequestEntityTooLarge && len(b.lines) > 1:
		half := len(b.lines) / 2
		left := batch{prefix: b.prefix, lines: b.lines[:half]}
		right := batch{prefix: b.prefix, lines: b.lines[half:]}
		for _, l := range left.lines {
			if isResourceLine(l.text) {
				right.prefix = l.text
			}
		}
		if isResourceLine(right.lines[0].text) {
			right.prefix = nil
		}
		if !s.opts.quiet {
			fmt.Fprintf(s.out, "lines %d-%d: 413 Request Entity Too Large, splitting\n", first, last)
		}
		if err := s.deliver(ctx, left, tot); err != nil {
			return err
		}
		return s.deliver(ctx, right, tot)
	case status != http.StatusOK && status != http.StatusBadRequest:
		fmt.Fprintf(s.out, "lines %d-%d: not delivered: HTTP %d\n", first, last, status)
		tot.failed += int64(len(b.lines))
		return nil
	case ans == nil:
		fmt.Fprintf(s.out, "lines %d-%d: HTTP %d without a JSON answer\n", first, last, status)
		tot.failed += int64(len(b.lines))
		return nil
	}

	// The prefix line is ours, not the file's: take it out of the counts.
	acc, rej, unk := ans.Accepted, ans.Rejected, ans.Unknown
	listed := int64(0)
	for _, e := range ans.Errors {
		if offset == 1 && e.Line == 1 {
			rej-- // our repeated resource line; its rejection was reported with its own line
			continue
		}
		listed++
		fileLine := first + e.Line - 1 - offset
		fmt.Fprintf(s.out, "line %d: %s\n", fileLine, e.Error)
	}
	if offset == 1 && (len(ans.Errors) == 0 || ans.Errors[0].Line != 1) {
		acc-- // the prefix was accepted
	}
	if acc < 0 || rej < 0 || acc+rej+unk > int64(len(b.lines)) {
		fmt.Fprintf(s.out, "lines %d-%d: inconsistent answer %+v\n", first, last, *ans)
	}
	if rej > listed {
		fmt.Fprintf(s.out, "lines %d-%d: %d more rejected lines not listed by the receiver\n", first, last, rej-listed)
	}
	if !s.opts.quiet {
		fmt.Fprintf(s.out, "lines %d-%d: HTTP %d, accepted %d, rejected %d, unknown %d\n", first, last, status, acc, rej, unk)
	}
	tot.accepted += acc
	tot.rejected += rej
	tot.unknown += unk
	return nil
}

// post sends one body, retrying a 503 (after its Retry-After) and a refused connection.
func (s *sender) post(ctx context.Context, payload []byte) (int, *answer, error) {
	if s.opts.gzip {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		_, _ = zw.Write(payload)
		_ = zw.Close()
		payload = zb.Bytes()
	}
	r := retrier{client: s.client, url: s.url, gzip: s.opts.gzip, retries: s.opts.retries,
		backoff: 500 * time.Millisecond, maxWait: s.opts.maxWait, sleep: s.sleep}
	if !s.opts.quiet {
		r.onRetry = func(attempt, _ int, wait time.Duration) {
			fmt.Fprintf(s.out, "retrying in %v (attempt %d of %d)\n", wait, attempt+1, s.opts.retries)
		}
	}
	status, data, err := r.post(ctx, payload)
	if err != nil {
		return status, nil, err
	}
	var ans answer
	if json.Unmarshal(data, &ans) != nil {
		if status == http.StatusOK || status == http.StatusBadRequest {
			return status, nil, fmt.Errorf("HTTP %d with an answer that is not JSON: %.200q", status, data)
		}
		return status, nil, nil
	}
	return status, &ans, nil
}

func isRefused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// retryAfter reads a Retry-After header (delay-seconds or an HTTP date); def when absent or
// unreadable.
func retryAfter(h string, def time.Duration, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return def
	}
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs < 0 {
			return 0
		}
		if secs > 86400 {
			secs = 86400
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
		return 0
	}
	return def
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
