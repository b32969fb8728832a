package main

// The three targets of a generated run, each a consumer of the run's queue of bodies: a file,
// stream connections and HTTP senders (with their retries).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

func (g *genRun) writeFile(ctx context.Context, q <-chan body) {
	w := bufio.NewWriterSize(g.file, 1<<20)
	defer func() {
		if err := w.Flush(); err != nil {
			g.fail(err)
		}
	}()
	for b := range q {
		if g.pace.wait(ctx, b.events) != nil {
			return
		}
		if _, err := w.Write(b.data); err != nil {
			g.fail(err)
			return
		}
		g.sent(b)
		g.recycle(b.data)
	}
}

func (g *genRun) sendStream(ctx context.Context, q <-chan body) {
	c, err := dialStream(ctx, g.target, g.opts.timeout)
	if err != nil {
		g.fail(err)
		return
	}
	for b := range q {
		if g.pace.wait(ctx, b.events) != nil {
			break
		}
		_ = c.SetWriteDeadline(time.Now().Add(g.opts.timeout))
		if _, err := c.Write(b.data); err != nil {
			g.fail(fmt.Errorf("stream: %w", err))
			c.Close()
			return
		}
		g.sent(b)
		g.recycle(b.data)
	}
	_ = c.SetWriteDeadline(time.Time{})
	if err := finishStream(c, g.opts.timeout); err != nil {
		g.fail(fmt.Errorf("stream: %w", err))
	}
}

func (g *genRun) sendHTTP(runCtx, reqCtx context.Context, q <-chan body) {
	for b := range q {
		if g.pace.wait(runCtx, b.events) != nil {
			return
		}
		g.sent(b)
		ans, err := g.postBody(reqCtx, b.data)
		if err != nil {
			g.st.failedLines.Add(b.events + 1)
			if reqCtx.Err() != nil {
				return
			}
			var se statusError
			if !errors.As(err, &se) {
				// The receiver cannot be reached (after the retries of a refused connection):
				// the run stops rather than counting every remaining body as lost.
				g.fail(err)
				return
			}
			g.printError("body %d: %v", g.st.bodies.Load(), err)
			continue
		}
		resourceOK := true
		for _, e := range ans.Errors {
			if e.Line == 1 {
				resourceOK = false
			}
			g.printError("body %d, line %d: %s", g.st.bodies.Load(), e.Line, e.Error)
		}
		g.st.acceptedLines.Add(ans.Accepted)
		ev := ans.Accepted
		if resourceOK && ev > 0 {
			ev--
		}
		g.st.acceptedEvents.Add(ev)
		g.st.rejected.Add(ans.Rejected)
		g.st.unkn.Add(ans.Unknown)
	}
}

type statusError struct{ status int }

func (e statusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.status, http.StatusText(e.status))
}

// postBody posts one body, retrying 503 (after its Retry-After) and a refused connection.
func (g *genRun) postBody(ctx context.Context, data []byte) (*answer, error) {
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.target, bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := g.client.Do(req)
		var wait time.Duration
		switch {
		case err != nil:
			if !isRefused(err) || attempt >= g.opts.retries {
				return nil, err
			}
			wait = backoff
			backoff *= 2
		case resp.StatusCode == http.StatusServiceUnavailable && attempt < g.opts.retries:
			wait = retryAfter(resp.Header.Get("Retry-After"), backoff, time.Now())
			backoff *= 2
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			g.st.retries503.Add(1)
		default:
			data, rerr := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
			resp.Body.Close()
			if rerr != nil {
				return nil, statusError{resp.StatusCode}
			}
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
				return nil, statusError{resp.StatusCode}
			}
			var ans answer
			if err := json.Unmarshal(data, &ans); err != nil {
				return nil, statusError{resp.StatusCode}
			}
			return &ans, nil
		}
		if err := sleepCtx(ctx, min(wait, g.opts.maxWait)); err != nil {
			return nil, err
		}
	}
}
