package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The backends the gateway writes to: a real Prometheus (remote-write receiver on) or a sink
// that answers 204 and counts bytes.

// countingBackend is what the gateway remote-writes to: it counts requests and bytes, then
// answers 204 itself (sink) or forwards the request to Prometheus and relays its answer.
type countingBackend struct {
	forward         string // Prometheus' /api/v1/write, or "" for the sink
	requests, bytes atomic.Int64
	client          http.Client
}

func (b *countingBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.requests.Add(1)
	b.bytes.Add(int64(len(body)))
	if b.forward == "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, b.forward, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for _, h := range []string{"Content-Type", "Content-Encoding", "X-Prometheus-Remote-Write-Version", "User-Agent"} {
		req.Header.Set(h, r.Header.Get(h))
	}
	resp, err := b.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(msg)
}

// prometheus is a Prometheus started for one gateway: remote-write receiver on, no scrape,
// the out-of-order window deploy/gateway.yaml's backend needs (docs/deployment.md).
type prometheus struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

func prometheusBinary(flagValue string) (string, error) {
	if p := harness.FindPrometheus(flagValue); p != "" {
		return p, nil
	}
	return "", errors.New("prometheus is not installed: apt-get install prometheus, or --prometheus PATH, or --backend sink")
}

func startPrometheus(ctx context.Context, bin, dir string) (*prometheus, error) {
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("storage:\n  tsdb:\n    out_of_order_time_window: 30m\n"), 0o600); err != nil {
		return nil, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	p := &prometheus{url: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{})}
	p.cmd = exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--web.enable-remote-write-receiver", "--log.level=warn")
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(p.url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			return nil, fmt.Errorf("prometheus exited at start-up:\n%s", log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, errors.New("prometheus not ready within 60s")
		}
	}
}

func (p *prometheus) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *prometheus) metrics(ctx context.Context) (map[string]float64, error) {
	body, err := harness.Get(ctx, p.url+"/metrics", 16<<20)
	if err != nil {
		return nil, err
	}
	return harness.ParsePrometheusText(body), nil
}

// usage is Prometheus' CPU seconds and resident memory, from its own metrics.
func (p *prometheus) usage(ctx context.Context) (cpu, rss float64, err error) {
	m, err := p.metrics(ctx)
	if err != nil {
		return 0, 0, err
	}
	return m["process_cpu_seconds_total"], m["process_resident_memory_bytes"], nil
}

// contents is what Prometheus holds: head series and samples appended (float and histogram).
func (p *prometheus) contents(ctx context.Context) (series, samples float64, err error) {
	m, err := p.metrics(ctx)
	if err != nil {
		return 0, 0, err
	}
	return m["prometheus_tsdb_head_series"], harness.Sum(m, "prometheus_tsdb_head_samples_appended_total"), nil
}

// query is the raw answer of an instant query.
func (p *prometheus) query(ctx context.Context, q string) (string, error) {
	body, err := harness.Get(ctx, p.url+"/api/v1/query?query="+url.QueryEscape(q), 1<<20)
	return string(body), err
}
