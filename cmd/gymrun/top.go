package main

// gymrun top: the live page's numbers in a terminal, for an SSH session without a browser. It
// reads the page's JSON API (internal/live), so the terminal and the page show one set of
// numbers, and it draws frames of at most 80 columns.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gym-telemetry/otelcol-gym/internal/live"
)

// maxAnswerBytes bounds what top reads of one answer: the API's own limit.
const maxAnswerBytes = live.MaxResponseBytes

// topAPI is a client of the live page's API.
type topAPI struct {
	base   string
	client *http.Client
}

func (a *topAPI) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: %s: %s", a.base, path, resp.Status, strings.TrimSpace(string(body[:min(len(body), 200)])))
	}
	if len(body) > maxAnswerBytes {
		return fmt.Errorf("%s%s: answer over %d bytes", a.base, path, maxAnswerBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s%s: not the live page's API: %w", a.base, path, err)
	}
	return nil
}

// frame is what one refresh read.
type frame struct {
	url    string
	asOf   time.Time
	runs   []live.RunSummary
	index  int // of the run shown, in runs
	run    *live.RunView
	health *live.CollectorHealth
	err    error
}

// fetch reads the runs, the one to show (by id, else the index'th, else the last seen) and the
// collector's health.
func (a *topAPI) fetch(ctx context.Context, id string, index int) frame {
	f := frame{url: a.base}
	var runs struct {
		AsOf time.Time         `json:"as_of"`
		Runs []live.RunSummary `json:"runs"`
	}
	if f.err = a.get(ctx, "/api/v1/runs", &runs); f.err != nil {
		return f
	}
	f.asOf, f.runs = runs.AsOf, runs.Runs
	if len(f.runs) == 0 {
		return f
	}
	f.index = pickRun(f.runs, id, index)
	if f.index < 0 {
		f.err = fmt.Errorf("no run %q among the %d the collector sees", id, len(f.runs))
		return f
	}
	var one struct {
		Run *live.RunView `json:"run"`
	}
	if f.err = a.get(ctx, runPath(f.runs[f.index].ID), &one); f.err != nil {
		return f
	}
	f.run = one.Run
	var health struct {
		Collector *live.CollectorHealth `json:"collector"`
	}
	if err := a.get(ctx, "/api/v1/health", &health); err == nil {
		f.health = health.Collector
	}
	return f
}

// pickRun is the run named id; without one, the index'th (wrapped), or the last seen for a
// negative index. -1 when id names no run.
func pickRun(runs []live.RunSummary, id string, index int) int {
	if id != "" {
		for i, r := range runs {
			if r.ID == id {
				return i
			}
		}
		return -1
	}
	if index >= 0 {
		return index % len(runs)
	}
	last := 0
	for i, r := range runs {
		if r.LastSeen.After(runs[last].LastSeen) {
			last = i
		}
	}
	return last
}

func runTop(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	fl := newFlags("top", stderr)
	base := fl.String("url", "http://127.0.0.1:8890", "the live page")
	id := fl.String("run", "", "the run to show (default: the one seen last; n cycles)")
	interval := fl.Duration("interval", 2*time.Second, "time between refreshes")
	once := fl.Bool("once", false, "print one frame and exit")
	if code, done := parseFlags(fl, args, topSynopsis, topAbout, stdout, stderr); done {
		return code
	}
	if fl.NArg() != 0 || *interval < 100*time.Millisecond {
		writeUsage(stderr, fl, topSynopsis, topAbout)
		return 2
	}
	api := &topAPI{base: strings.TrimRight(*base, "/"), client: &http.Client{Timeout: 5 * time.Second}}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	term, err := openTerminal(stdin)
	if *once || err != nil {
		f := api.fetch(ctx, *id, -1)
		writeFrame(stdout, f, 80)
		if f.err != nil {
			return 2
		}
		return 0
	}
	defer term.restore(stdout)
	keys := make(chan byte, 8)
	go term.readKeys(keys)
	index := -1
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for {
		f := api.fetch(ctx, *id, index)
		if f.run != nil {
			index = f.index
		}
		term.draw(stdout, f)
		select {
		case <-ctx.Done():
			return 0
		case k, ok := <-keys:
			if !ok || k == 'q' || k == 'Q' || k == 3 /* Ctrl-C in raw mode */ {
				return 0
			}
			if (k == 'n' || k == 'N') && len(f.runs) > 0 && *id == "" {
				index = (index + 1) % len(f.runs)
			}
		case <-tick.C:
		}
	}
}

// errNoTerminal: standard input is not a terminal; top prints one frame.
var errNoTerminal = errors.New("not a terminal")

// runPath is the live API's path of one run: by query when the id has a dot segment (a path
// is cleaned of it before it is routed), else by path, which collectors before the query form
// answer too.
func runPath(id string) string {
	for _, seg := range strings.Split(id, "/") {
		if seg == "." || seg == ".." {
			return "/api/v1/run?id=" + url.QueryEscape(id)
		}
	}
	return "/api/v1/runs/" + url.PathEscape(id)
}
