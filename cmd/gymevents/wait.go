package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func runWait(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	interval := fs.Duration("interval", 200*time.Millisecond, "time between two polls")
	pid := fs.Int("pid", 0, "give up as soon as this process has exited (the server being waited for)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: gymevents wait URL [--timeout 60s]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	alive := func() bool { return true }
	if *pid > 0 {
		alive = func() bool { return processAlive(*pid) }
	}
	if err := waitHealthy(ctx, pos[0], *interval, alive); err != nil {
		fmt.Fprintf(stderr, "gymevents wait: %s: %v\n", pos[0], err)
		return 1
	}
	fmt.Fprintf(stdout, "%s is up\n", pos[0])
	return 0
}

// waitHealthy polls url until it answers 200, ctx is done, or alive says the server is gone;
// the error says what it saw last.
func waitHealthy(ctx context.Context, url string, interval time.Duration, alive func() bool) error {
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else if ctx.Err() == nil || last == "" {
			// A request cut short by the deadline says less than the answer before it.
			last = err.Error()
		}
		if !alive() {
			return fmt.Errorf("the server exited (%s)", last)
		}
		if sleepCtx(ctx, interval) != nil {
			return fmt.Errorf("not up (%s)", last)
		}
	}
}

// processAlive tells whether process pid still exists.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}
