package main

// The three targets of a generated run, each a consumer of the run's queue of bodies: a file,
// stream connections and HTTP senders (with their retries).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	r := retrier{client: g.client, url: g.target, retries: g.opts.retries,
		backoff: 100 * time.Millisecond, maxWait: g.opts.maxWait, sleep: sleepCtx,
		onRetry: func(_, status int, _ time.Duration) {
			if status == http.StatusServiceUnavailable {
				g.st.retries503.Add(1)
			}
		}}
	status, data, err := r.post(ctx, data)
	if err != nil {
		if status != 0 {
			return nil, statusError{status}
		}
		return nil, err
	}
	var ans answer
	if (status != http.StatusOK && status != http.StatusBadRequest) || json.Unmarshal(data, &ans) != nil {
		return nil, statusError{status}
	}
	return &ans, nil
}
