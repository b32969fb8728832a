package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// retrier posts bodies to the events endpoint, retrying a refused connection (after a backoff
// that doubles) and a 503 (after its Retry-After): send and gen share it.
type retrier struct {
	client  *http.Client
	url     string
	gzip    bool // the payloads are gzip-compressed
	retries int
	backoff time.Duration // the first wait after a refused connection
	maxWait time.Duration // the longest wait before one retry
	sleep   func(context.Context, time.Duration) error
	// onRetry, when set, learns of each retry: the status that asked for it (0: refused).
	onRetry func(attempt, status int, wait time.Duration)
}

// maxAnswerBytes bounds what is read of an answer.
const maxAnswerBytes = 4 << 20

// post sends payload until it is answered with something else than a 503 (or the retries are
// used up) and returns that answer's status and body.
func (r *retrier) post(ctx context.Context, payload []byte) (int, []byte, error) {
	backoff := r.backoff
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(payload))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		if r.gzip {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := r.client.Do(req)
		var wait time.Duration
		status := 0
		switch {
		case err != nil:
			if !isRefused(err) || attempt >= r.retries {
				return 0, nil, err
			}
			wait = backoff
		case resp.StatusCode == http.StatusServiceUnavailable && attempt < r.retries:
			status = resp.StatusCode
			wait = retryAfter(resp.Header.Get("Retry-After"), backoff, time.Now())
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
		default:
			data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
			resp.Body.Close()
			return resp.StatusCode, data, err
		}
		backoff *= 2
		wait = min(wait, r.maxWait)
		if r.onRetry != nil {
			r.onRetry(attempt, status, wait)
		}
		if err := r.sleep(ctx, wait); err != nil {
			return 0, nil, err
		}
	}
}
