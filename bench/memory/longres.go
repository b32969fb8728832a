package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// longRuns measures longRun with 1 MiB strings, then the same with 16-byte ones on a fresh
// collector: the control that says what the same series cost under short resources.
func longRuns(ctx context.Context, o options, base, bin, name string) (string, error) {
	long, err := longRun(ctx, o, base, bin, name, 1<<20)
	if err != nil {
		return "", err
	}
	short, err := longRun(ctx, o, base, bin, name+"-short", 16)
	if err != nil {
		return "", err
	}
	return long.perSeries + " | " + short.perSeries + " | " + long.scrape + " | " + long.runs, nil
}

// longFigures are longRun's table cells.
type longFigures struct{ perSeries, scrape, runs string }

// longRun: what a series costs under a resource of long strings (size bytes). One OTLP request
// of o.longSeries series under a long service.name, then o.longRuns requests of one series
// under a long nemo.run.id each; then the live heap and RSS added per series, one scrape of
// the Prometheus endpoint (its size, the peak RSS after it) and the live page's list of runs.
// Bounded, a series costs what it costs under a short resource; unbounded, each one costs its
// resource's strings in the live page's store and in the Prometheus exporter, and each line
// of the scrape carries them.
func longRun(ctx context.Context, o options, base, bin, name string, size int) (longFigures, error) {
	var f longFigures
	c, _, a, err := start(ctx, o, base, bin, name, 0)
	if err != nil {
		return f, err
	}
	defer c.Stop()
	time.Sleep(6 * time.Second)
	before, err := measure(ctx, c)
	if err != nil {
		return f, err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/metrics", a.otlpHTTP)
	wire := 0
	send := func(md pmetric.Metrics) error {
		body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
		if err != nil {
			return err
		}
		wire += len(body)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("OTLP POST: %s", resp.Status)
		}
		return nil
	}
	if err := send(longResource("service.name", "bench/long-", "bench-long", size, o.longSeries)); err != nil {
		return f, err
	}
	for r := range o.longRuns {
		if err := send(longResource("nemo.run.id", fmt.Sprintf("run-%d-", r), fmt.Sprintf("bench/run-%d", r), size, 1)); err != nil {
			return f, err
		}
	}
	n := o.longSeries + o.longRuns
	if _, err := waitSeries(ctx, a.prom, func(k int) bool { return k >= n }, 120*time.Second); err != nil {
		return f, err
	}
	time.Sleep(6 * time.Second)
	full, err := measure(ctx, c)
	if err != nil {
		return f, err
	}
	scrape, err := scrapeSize(ctx, a.prom)
	if err != nil {
		return f, err
	}
	m, err := harness.ProcMem(c.Pid)
	if err != nil {
		return f, err
	}
	runs := liveRuns(ctx, a.live)
	fmt.Printf("- %d series under a service.name of %s, %d runs of a nemo.run.id of %s (%s of OTLP): live heap %s -> %s, RSS %s -> %s\n",
		o.longSeries, bytesOf(float64(size)), o.longRuns, bytesOf(float64(size)), bytesOf(float64(wire)),
		bytesOf(float64(before.heap)), bytesOf(float64(full.heap)), bytesOf(float64(before.rss)), bytesOf(float64(full.rss)))
	fmt.Printf("- one scrape of the Prometheus endpoint: %s; peak RSS after it %s\n", bytesOf(float64(scrape)), bytesOf(float64(m.HWM)))
	fmt.Printf("- the live page's /api/v1/runs: %s\n", runs)
	return longFigures{
		perSeries: fmt.Sprintf("%s / %s", perUnit(full.heap-before.heap, n), perUnit(full.rss-before.rss, n)),
		scrape:    fmt.Sprintf("%s, %s", bytesOf(float64(scrape)), bytesOf(float64(m.HWM))),
		runs:      runs,
	}, nil
}

func longResource(key, tag, svc string, size, n int) pmetric.Metrics {
	return harness.CompletedUnder(map[string]string{"service.name": svc, key: tag + strings.Repeat("x", max(size-len(tag), 0))}, n)
}

// scrapeSize reads the Prometheus endpoint once and returns its size, without keeping it.
func scrapeSize(ctx context.Context, port int) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return io.Copy(io.Discard, resp.Body)
}

// liveRuns describes the live page's answer to /api/v1/runs: its status, the runs and their
// longest id.
func liveRuns(ctx context.Context, port int) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/api/v1/runs", port), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.Status
	}
	var v struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return err.Error()
	}
	longest := 0
	for _, r := range v.Runs {
		longest = max(longest, len(r.ID))
	}
	return fmt.Sprintf("200, %d runs, ids up to %d B", len(v.Runs), longest)
}
