package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// PostReport is what the collector's answers to PostOTLP said.
type PostReport struct {
	Requests int64
	Rejected int64 // partial success: data points the receiver rejected
	Wall     time.Duration
}

// PostOTLP posts the load's bodies to url (an OTLP/HTTP /v1/metrics endpoint) from clients
// concurrent clients. Resource r is always posted by client r % clients, its exports in order
// (cumulative streams arrive as an SDK sends them); each client goes through export e of its
// resources before export e+1. Every answer must be 200.
func PostOTLP(ctx context.Context, url string, load *OTLPLoad, clients int) (PostReport, error) {
	var rep PostReport
	var requests, rejected atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	t0 := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range load.Bodies {
				for r := c; r < len(load.Bodies[e]); r += clients {
					n, err := postOne(ctx, hc, url, load.Bodies[e][r])
					if err != nil {
						errOnce.Do(func() { firstErr = fmt.Errorf("export %d of resource %d: %w", e, r, err); cancel() })
						return
					}
					requests.Add(1)
					rejected.Add(n)
				}
			}
		}()
	}
	wg.Wait()
	rep.Wall = time.Since(t0)
	rep.Requests, rep.Rejected = requests.Load(), rejected.Load()
	return rep, firstErr
}

// postOne posts one body and returns the points the answer's partial success rejected.
func postOne(ctx context.Context, hc *http.Client, url string, body []byte) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(data))
	}
	if len(data) == 0 {
		return 0, nil
	}
	ans := pmetricotlp.NewExportResponse()
	if err := ans.UnmarshalProto(data); err != nil {
		return 0, errors.Join(errors.New("the answer is not an ExportMetricsServiceResponse"), err)
	}
	return ans.PartialSuccess().RejectedDataPoints(), nil
}
