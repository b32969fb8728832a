package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gym-telemetry/otelcol-gym/internal/gymgen"
)

type genOptions struct {
	seed                         uint64
	processes                    int
	dispatches, providers, route int
	events                       int64
	rate                         float64
	duration                     time.Duration
	batch                        int
	concurrency                  int
	out, endpoint, stream        string
	pregen                       bool
	retries                      int
	maxWait                      time.Duration
	timeout                      time.Duration
	progress                     time.Duration
	json                         bool
	allowRemote                  bool
}

// pregenLimit bounds the memory --pregen may take (the generated lines average ~85 bytes).
const (
	pregenLimit    = 8 << 30
	pregenLineCost = 100
)

func newGenFlags(o *genOptions, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the generator: the same seed and shape give the same stream")
	fs.IntVar(&o.processes, "processes", 16, "Gym processes (resources) in the stream; process 0 is the rollout driver")
	fs.IntVar(&o.dispatches, "dispatches", 0, "distinct dispatch names (0: a realistic few)")
	fs.IntVar(&o.providers, "providers", 0, "distinct sandbox providers (0: a realistic few)")
	fs.IntVar(&o.route, "routes", 0, "distinct HTTP routes (0: a realistic few)")
	fs.Int64Var(&o.events, "events", 1_000_000, "events to send (resource lines not counted); 0: until --duration")
	fs.Float64Var(&o.rate, "rate", 0, "events per second; 0: as fast as the receiver takes them")
	fs.DurationVar(&o.duration, "duration", 0, "stop sending after this long (0: when --events are sent); at least one of --events and --duration bounds a run")
	fs.IntVar(&o.batch, "batch", 1000, "lines per HTTP body (or per stretch of a stream), its resource line included")
	fs.IntVar(&o.concurrency, "concurrency", 4, "connections (HTTP or stream); each Gym process always uses the same one, so its events stay in order (at most --processes are used)")
	fs.StringVar(&o.out, "out", "", "write the stream to FILE (\"-\": standard output)")
	fs.StringVar(&o.endpoint, "endpoint", "", "POST the stream to this receiver (http://127.0.0.1:4390; its /v1/events)")
	fs.StringVar(&o.stream, "stream", "", "write the stream over stream connections: unix:///path/to.sock or tcp://host:port")
	fs.BoolVar(&o.pregen, "pregen", false, "generate every body before sending (needs --events; ~85 bytes of memory per event), so that generating does not compete with the receiver for CPU while sending")
	fs.IntVar(&o.retries, "retries", 10, "retries of a body answered 503 (after its Retry-After)")
	fs.DurationVar(&o.maxWait, "max-wait", 2*time.Second, "longest wait before one retry")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "timeout of one HTTP request, of one stream write, and of the end of a stream")
	fs.DurationVar(&o.progress, "progress", 0, "print progress to standard error at this interval (0: never)")
	fs.BoolVar(&o.json, "json", false, "print the report as one JSON object")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow a target that is not on the loopback interface (gen is a load generator: by default it only loads this host)")
	return fs
}

// genReport is what a run sent and what the receiver accepted.
type genReport struct {
	Target         string  `json:"target"`
	Seed           uint64  `json:"seed"`
	Processes      int     `json:"processes"`
	Connections    int     `json:"connections"`
	Bodies         int64   `json:"bodies"`
	Lines          int64   `json:"lines"`  // resource lines included
	Events         int64   `json:"events"` // lines that are not resource lines
	Bytes          int64   `json:"bytes"`
	Seconds        float64 `json:"seconds"` // from the first body sent to the last answer
	EventsPerSec   float64 `json:"events_per_second"`
	Answered       bool    `json:"answered"` // HTTP: the counts below come from the receiver's answers
	AcceptedLines  int64   `json:"accepted_lines"`
	AcceptedEvents int64   `json:"accepted_events"`
	Rejected       int64   `json:"rejected"`
	Unknown        int64   `json:"unknown"`
	Retries503     int64   `json:"retries_503"`
	FailedLines    int64   `json:"failed_lines"` // sent but not delivered (no usable answer)
	PregenSeconds  float64 `json:"pregen_seconds,omitempty"`
	Stopped        string  `json:"stopped"` // events, duration, interrupted, error
	Error          string  `json:"error,omitempty"`
}

func runGen(args []string, stdout, stderr io.Writer) int {
	var o genOptions
	fs := newGenFlags(&o, stderr)
	pos, code, ok := parseCommand(fs, args, "usage: gymevents gen [flags] (--out FILE | --endpoint URL | --stream unix:///path|tcp://host:port)\n\n", stderr)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		fmt.Fprintf(stderr, "gymevents gen: unexpected argument %q\n", pos[0])
		return 2
	}
	target, err := o.check()
	if err != nil {
		fmt.Fprintf(stderr, "gymevents gen: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	var w io.Writer
	if o.out != "" {
		if o.out == "-" {
			w = stdout
		} else {
			f, err := os.Create(o.out)
			if err != nil {
				fmt.Fprintf(stderr, "gymevents gen: %v\n", err)
				return 1
			}
			defer f.Close()
			w = f
		}
	}
	g := &genRun{opts: o, target: target, file: w, log: &lockedWriter{w: stderr}}
	rep := g.run(ctx)
	if o.out != "" && o.out != "-" {
		if f, ok := w.(*os.File); ok {
			if err := f.Close(); err != nil && rep.Error == "" {
				rep.Error, rep.Stopped = err.Error(), "error"
			}
		}
	}

	report := stdout
	if o.out == "-" {
		report = stderr
	}
	if o.json {
		_ = json.NewEncoder(report).Encode(rep)
	} else {
		printGenReport(report, rep, o)
	}
	if rep.Error != "" || rep.Rejected > 0 || rep.FailedLines > 0 {
		return 1
	}
	return 0
}

// check validates the options and returns the target (events URL, stream URL or file name).
func (o *genOptions) check() (string, error) {
	outputs := 0
	for _, s := range []string{o.out, o.endpoint, o.stream} {
		if s != "" {
			outputs++
		}
	}
	switch {
	case outputs != 1:
		return "", errors.New("want exactly one of --out FILE, --endpoint URL and --stream URL")
	case o.events < 0 || o.duration < 0 || o.rate < 0 || math.IsNaN(o.rate) || math.IsInf(o.rate, 0):
		return "", errors.New("--events, --duration and --rate must not be negative")
	case o.events == 0 && o.duration == 0:
		return "", errors.New("a run needs a bound: --events N, --duration D, or both")
	case o.batch < 2:
		return "", errors.New("--batch must be at least 2 (a resource line and an event)")
	case o.concurrency < 1 || o.processes < 1 || o.retries < 0:
		return "", errors.New("--concurrency and --processes must be at least 1, --retries at least 0")
	case o.pregen && o.events == 0:
		return "", errors.New("--pregen needs --events")
	case o.pregen && o.events > pregenLimit/pregenLineCost:
		return "", fmt.Errorf("--pregen: %d events would take about %d MiB; at most %d events", o.events, o.events*pregenLineCost>>20, pregenLimit/pregenLineCost)
	}
	switch {
	case o.out != "":
		return o.out, nil
	case o.endpoint != "":
		u, err := eventsURL(o.endpoint)
		if err != nil {
			return "", fmt.Errorf("--endpoint: %w", err)
		}
		pu, _ := url.Parse(u)
		if !o.allowRemote && !loopbackHost(pu.Hostname()) {
			return "", fmt.Errorf("--endpoint %s is not a loopback address (use --allow-remote to load another host)", o.endpoint)
		}
		return u, nil
	default:
		network, addr, err := parseStreamURL(o.stream)
		if err != nil {
			return "", fmt.Errorf("--stream: %w", err)
		}
		if network != "unix" && !o.allowRemote {
			host, _, _ := net.SplitHostPort(addr)
			if !loopbackHost(host) {
				return "", fmt.Errorf("--stream %s is not a loopback address (use --allow-remote to load another host)", o.stream)
			}
		}
		return o.stream, nil
	}
}

func loopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// body is one run of lines of one process: its resource line, then events.
type body struct {
	data   []byte
	events int64
}

// genStats are the running totals, read by the progress printer.
type genStats struct {
	bodies, lines, events, bytes                  atomic.Int64
	acceptedLines, acceptedEvents, rejected, unkn atomic.Int64
	retries503, failedLines, printedErrors        atomic.Int64
}

type genRun struct {
	opts   genOptions
	target string
	file   io.Writer // --out
	log    *lockedWriter
	st     genStats
	pace   pacer
	client *http.Client

	errOnce sync.Once
	err     error
	cancel  context.CancelFunc // stops the run (a fatal error)

	free chan []byte // reusable buffers (file and stream outputs write synchronously)
}

func (g *genRun) fail(err error) {
	g.errOnce.Do(func() {
		g.err = err
		g.cancel()
	})
}

// connections is the number of senders: a process always goes over the same one.
func (g *genRun) connections() int {
	if g.opts.out != "" {
		return 1
	}
	return min(g.opts.concurrency, g.opts.processes)
}

func (g *genRun) run(parent context.Context) genReport {
	o := g.opts
	rep := genReport{Target: g.target, Seed: o.seed, Processes: o.processes, Connections: g.connections()}
	gen := gymgen.New(gymgen.Options{Seed: o.seed, Processes: o.processes, Dispatches: o.dispatches, Providers: o.providers, Routes: o.route})

	// runCtx bounds what is started (duration, interrupt, a fatal error); requests already
	// sent finish under reqCtx (interrupt only), so that every body sent gets its answer.
	reqCtx, reqCancel := context.WithCancel(parent)
	defer reqCancel()
	runCtx, cancel := context.WithCancel(parent)
	g.cancel = cancel
	defer cancel()

	conns := g.connections()
	queues := make([]chan body, conns)
	g.free = make(chan []byte, 4*conns+4)

	// Body k belongs to process k % processes (the generator takes them in turn) and goes
	// over connection (k % processes) % conns.
	next := func(remaining int64, buf []byte) body {
		n := int64(o.batch - 1)
		if o.events > 0 && remaining < n {
			n = remaining
		}
		return body{data: gen.Batch(buf, int(n)+1), events: n}
	}
	var produce func()
	if o.pregen {
		t0 := time.Now()
		all := make([][]body, conns)
		remaining := o.events
		for k := int64(0); remaining > 0; k++ {
			b := next(remaining, make([]byte, 0, min(int64(o.batch), remaining+1)*pregenLineCost))
			c := int(k%int64(o.processes)) % conns
			all[c] = append(all[c], b)
			remaining -= b.events
		}
		for c := range queues {
			queues[c] = make(chan body, len(all[c]))
			for _, b := range all[c] {
				queues[c] <- b
			}
			close(queues[c])
		}
		rep.PregenSeconds = time.Since(t0).Seconds()
		produce = func() {}
	} else {
		for c := range queues {
			queues[c] = make(chan body, 2)
		}
		produce = func() {
			defer func() {
				for _, q := range queues {
					close(q)
				}
			}()
			remaining := o.events
			for k := int64(0); o.events == 0 || remaining > 0; k++ {
				var buf []byte
				select {
				case buf = <-g.free:
					buf = buf[:0]
				default:
				}
				b := next(remaining, buf)
				remaining -= b.events
				select {
				case queues[int(k%int64(o.processes))%conns] <- b:
				case <-runCtx.Done():
					return
				}
			}
		}
	}
	if o.duration > 0 {
		var c context.CancelFunc
		runCtx, c = context.WithTimeout(runCtx, o.duration)
		defer c()
	}

	if o.endpoint != "" {
		rep.Answered = true
		g.client = &http.Client{
			Timeout: o.timeout,
			Transport: &http.Transport{
				Proxy:               nil,
				MaxIdleConnsPerHost: conns,
				MaxConnsPerHost:     conns,
				DisableCompression:  true,
				IdleConnTimeout:     90 * time.Second,
			},
		}
		defer g.client.CloseIdleConnections()
	}

	start := time.Now()
	g.pace = pacer{start: start, rate: o.rate}
	stopProgress := g.startProgress(start)
	var wg sync.WaitGroup
	wg.Go(produce)
	for c := range conns {
		wg.Go(func() {
			switch {
			case o.out != "":
				g.writeFile(runCtx, queues[c])
			case o.endpoint != "":
				g.sendHTTP(runCtx, reqCtx, queues[c])
			default:
				g.sendStream(runCtx, queues[c])
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()

	rep.Bodies = g.st.bodies.Load()
	rep.Lines = g.st.lines.Load()
	rep.Events = g.st.events.Load()
	rep.Bytes = g.st.bytes.Load()
	rep.Seconds = elapsed.Seconds()
	if rep.Seconds > 0 {
		rep.EventsPerSec = float64(rep.Events) / rep.Seconds
	}
	rep.AcceptedLines = g.st.acceptedLines.Load()
	rep.AcceptedEvents = g.st.acceptedEvents.Load()
	rep.Rejected = g.st.rejected.Load()
	rep.Unknown = g.st.unkn.Load()
	rep.Retries503 = g.st.retries503.Load()
	rep.FailedLines = g.st.failedLines.Load()
	switch {
	case g.err != nil:
		rep.Stopped, rep.Error = "error", g.err.Error()
	case parent.Err() != nil:
		rep.Stopped = "interrupted"
	case o.events > 0 && rep.Events >= o.events:
		rep.Stopped = "events"
	default:
		rep.Stopped = "duration"
	}
	return rep
}

func (g *genRun) sent(b body) {
	g.st.bodies.Add(1)
	g.st.lines.Add(b.events + 1)
	g.st.events.Add(b.events)
	g.st.bytes.Add(int64(len(b.data)))
}

func (g *genRun) recycle(buf []byte) {
	select {
	case g.free <- buf:
	default:
	}
}

// printError prints the first ten errors of a run.
func (g *genRun) printError(format string, args ...any) {
	if g.st.printedErrors.Add(1) <= 10 {
		g.log.Printf("gymevents gen: "+format+"\n", args...)
	}
}

func (g *genRun) startProgress(start time.Time) (stop func()) {
	if g.opts.progress <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(g.opts.progress)
		defer t.Stop()
		last, lastT := int64(0), start
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				ev := g.st.events.Load()
				rate := float64(ev-last) / now.Sub(lastT).Seconds()
				g.log.Printf("gymevents gen: %6.1fs  sent %d events (%.0f/s), accepted %d, rejected %d, 503 retries %d\n",
					now.Sub(start).Seconds(), ev, rate, g.st.acceptedEvents.Load(), g.st.rejected.Load(), g.st.retries503.Load())
				last, lastT = ev, now
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// pacer spaces bodies so that events go out at rate per second on average, over all
// connections; a rate of 0 sends as fast as possible.
type pacer struct {
	start   time.Time
	rate    float64
	mu      sync.Mutex
	claimed int64
}

// wait waits for the time the next n events are due, and fails when ctx is done.
func (p *pacer) wait(ctx context.Context, n int64) error {
	if err := ctx.Err(); err != nil || p.rate <= 0 {
		return err
	}
	p.mu.Lock()
	due := p.start.Add(time.Duration(float64(p.claimed) / p.rate * float64(time.Second)))
	p.claimed += n
	p.mu.Unlock()
	if d := time.Until(due); d > 0 {
		return sleepCtx(ctx, d)
	}
	return nil
}

func printGenReport(w io.Writer, r genReport, o genOptions) {
	fmt.Fprintf(w, "gymevents gen: seed %d, %d processes, batches of %d lines, %d connection(s) -> %s\n",
		r.Seed, r.Processes, o.batch, r.Connections, r.Target)
	if r.PregenSeconds > 0 {
		fmt.Fprintf(w, "generated beforehand in %.2fs\n", r.PregenSeconds)
	}
	fmt.Fprintf(w, "sent %d events (%d lines with the resource lines, %d bodies, %.1f MB) in %.3fs: %.0f events/s\n",
		r.Events, r.Lines, r.Bodies, float64(r.Bytes)/1e6, r.Seconds, r.EventsPerSec)
	if r.Answered {
		fmt.Fprintf(w, "accepted %d events (+%d resource lines), rejected %d, unknown %d; 503 retries %d, not delivered %d lines\n",
			r.AcceptedEvents, r.AcceptedLines-r.AcceptedEvents, r.Rejected, r.Unknown, r.Retries503, r.FailedLines)
	} else if o.stream != "" {
		fmt.Fprintln(w, "a stream does not answer: the receiver counts the lines in otelcol_receiver_gym_lines_accepted/_rejected/_unknown")
	}
	fmt.Fprintf(w, "stopped: %s", r.Stopped)
	if r.Error != "" {
		fmt.Fprintf(w, ": %s", r.Error)
	}
	fmt.Fprintln(w)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, args...)
}
