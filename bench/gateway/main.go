// Command gateway measures the gateway tier (deploy/gateway.yaml) of the real binary: OTLP gRPC
// requests shaped like a node agent's collections, sent over several connections, remote-written
// to a sink inside this harness that answers 204 at once (the backend's own cost is not
// counted). It reports data points and remote-write samples per CPU-second of the gateway
// (user+sys, every thread) at each GOMAXPROCS, and the gateway's peak RSS.
//
//	go run ./bench/gateway --collector _build/otelcol-gym
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gym-telemetry/otelcol-gym/bench/internal/harness"
)

func main() {
	var (
		bin       = flag.String("collector", "_build/otelcol-gym", "the otelcol-gym binary")
		config    = flag.String("config", "deploy/gateway.yaml", "the gateway configuration")
		procsList = flag.String("gomaxprocs", "1,2", "GOMAXPROCS values, comma-separated")
		resources = flag.Int("resources", 16, "Gym processes (resources) per request")
		sums      = flag.Int("sums", 100, "counter series per resource")
		hists     = flag.Int("histograms", 20, "histogram series per resource (16 buckets each)")
		requests  = flag.Int("requests", 600, "requests per measured run")
		conns     = flag.Int("conns", 8, "concurrent agents (gRPC connections)")
		runs      = flag.Int("runs", 3, "measured runs per GOMAXPROCS")
	)
	flag.Parse()
	cfg, err := os.ReadFile(*config)
	if err != nil {
		log.Fatal(err)
	}
	sink := &rwSink{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = http.Serve(ln, sink) }()

	fmt.Println(harness.MachineInfo())
	pointsPerReq := *resources * (*sums + *hists)
	samplesPerReq := *resources * (*sums + *hists*(16+2)) // a histogram: its buckets, _sum and _count
	fmt.Printf("request: %d resources, %d points (%d counters, %d histograms of 16 buckets), %d remote-write samples; %d requests over %d connections per run\n",
		*resources, pointsPerReq, *resources**sums, *resources**hists, samplesPerReq, *requests, *conns)
	fmt.Println("| GOMAXPROCS | run | points/CPU-s | samples/CPU-s | points/s (wall) | CPU s | RSS peak MiB |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|")
	for _, ps := range strings.Split(*procsList, ",") {
		procs, err := strconv.Atoi(strings.TrimSpace(ps))
		if err != nil {
			log.Fatal(err)
		}
		if err := measure(*bin, string(cfg), "http://"+ln.Addr().String()+"/api/v1/write", procs, *resources, *sums, *hists, *requests, *conns, *runs, pointsPerReq, samplesPerReq, sink); err != nil {
			log.Fatal(err)
		}
	}
}

func measure(bin, cfg, rwURL string, procs, resources, sums, hists, requests, conns, runs, pointsPerReq, samplesPerReq int, sink *rwSink) error {
	ports, err := harness.FreePorts(4)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-gateway-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	col, err := harness.Start(ctx, harness.StartOptions{
		Name: "gateway", Bin: bin, Config: cfg, Dir: dir,
		Env: []string{
			fmt.Sprintf("GOMAXPROCS=%d", procs),
			fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", ports[0]),
			fmt.Sprintf("OTELCOL_GYM_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", ports[1]),
			fmt.Sprintf("OTELCOL_GYM_HEALTH_ENDPOINT=127.0.0.1:%d", ports[2]),
			fmt.Sprintf("OTELCOL_GYM_TELEMETRY_PORT=%d", ports[3]),
			"OTELCOL_GYM_ZPAGES_ENDPOINT=127.0.0.1:0",
			"OTELCOL_GYM_REMOTE_WRITE_URL=" + rwURL,
		},
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", ports[2]),
		Telemetry: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[3]),
	})
	if err != nil {
		return err
	}
	defer col.Stop()

	clients := make([]pmetricotlp.GRPCClient, conns)
	for i := range clients {
		cc, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", ports[0]), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer cc.Close()
		clients[i] = pmetricotlp.NewGRPCClient(cc)
	}
	// One prepared request per connection (an agent's collection); each send is a new
	// collection of the same series, later timestamps.
	reqs := make([]pmetricotlp.ExportRequest, conns)
	for i := range reqs {
		reqs[i] = pmetricotlp.NewExportRequestFromMetrics(agentCollection(i, resources, sums, hists))
	}
	send := func(n int) error {
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, conns)
		for i := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					if _, err := clients[i].Export(ctx, reqs[i]); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	if err := send(requests / 5); err != nil { // warm-up
		return fmt.Errorf("warm-up: %w", err)
	}
	for run := 1; run <= runs; run++ {
		cpu0, err := col.CPU()
		if err != nil {
			return err
		}
		start := time.Now()
		if err := send(requests); err != nil {
			return err
		}
		wall := time.Since(start)
		cpu1, err := col.CPU()
		if err != nil {
			return err
		}
		mem, _ := harness.ProcMem(col.Pid)
		cpu := (cpu1 - cpu0).Seconds()
		points := float64(requests * pointsPerReq)
		fmt.Printf("| %d | %d | %.0f | %.0f | %.0f | %.2f | %.0f |\n", procs, run, points/cpu,
			float64(requests*samplesPerReq)/cpu, points/wall.Seconds(), cpu, float64(mem.HWM)/(1<<20))
	}
	m, err := col.Metrics(ctx)
	if err != nil {
		return err
	}
	sent := harness.Sum(m, "otelcol_exporter_sent_metric_points")
	failed := harness.Sum(m, "otelcol_exporter_send_failed_metric_points")
	req, bytes := sink.requests.Load(), sink.bytes.Load()
	fmt.Printf("GOMAXPROCS=%d: the gateway exported %.0f points (%.0f failed); the sink took %d remote writes, %.1f MiB (%s)\n",
		procs, sent, failed, req, float64(bytes)/(1<<20), filepath.Base(col.LogPath))
	return nil
}

// agentCollection is one node agent's collection: cumulative counters and histograms of
// resources Gym processes, with the attributes the gym receiver gives them.
func agentCollection(agent, resources, sums, hists int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	now := pcommon.NewTimestampFromTime(time.Now())
	start := pcommon.NewTimestampFromTime(time.Now().Add(-time.Hour))
	bounds := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000}
	for r := range resources {
		rm := md.ResourceMetrics().AppendEmpty()
		a := rm.Resource().Attributes()
		a.PutStr("service.name", "nemo-gym/bench")
		a.PutStr("service.instance.id", fmt.Sprintf("agent%d-proc%d", agent, r))
		a.PutStr("nemo.run.id", "bench-gateway")
		a.PutStr("nemo.gym.server.name", fmt.Sprintf("server%d", r%8))
		a.PutStr("nemo.gym.server.type", "resources_servers")
		a.PutStr("host.name", fmt.Sprintf("node-%d", agent))
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver")
		c := sm.Metrics().AppendEmpty()
		c.SetName("gym.rollout.completed_total")
		c.SetUnit("1")
		sum := c.SetEmptySum()
		sum.SetIsMonotonic(true)
		sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for i := range sums {
			dp := sum.DataPoints().AppendEmpty()
			dp.SetStartTimestamp(start)
			dp.SetTimestamp(now)
			dp.SetIntValue(int64(1000 + i))
			dp.Attributes().PutStr("nemo.gym.rollout.dispatch.name", fmt.Sprintf("dispatch-%d", i/3))
			dp.Attributes().PutStr("nemo.gym.rollout.outcome", []string{"scored", "failed", "omitted"}[i%3])
		}
		h := sm.Metrics().AppendEmpty()
		h.SetName("gym.sandbox.exec_duration_ms")
		h.SetUnit("ms")
		hist := h.SetEmptyHistogram()
		hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for i := range hists {
			dp := hist.DataPoints().AppendEmpty()
			dp.SetStartTimestamp(start)
			dp.SetTimestamp(now)
			dp.ExplicitBounds().FromRaw(bounds)
			counts := make([]uint64, len(bounds)+1)
			var total uint64
			for b := range counts {
				counts[b] = uint64(b + i)
				total += counts[b]
			}
			dp.BucketCounts().FromRaw(counts)
			dp.SetCount(total)
			dp.SetSum(float64(total) * 42)
			dp.Attributes().PutStr("nemo.gym.sandbox.provider", fmt.Sprintf("provider-%d", i))
		}
	}
	return md
}

// rwSink is the remote-write backend: it reads each request and answers 204.
type rwSink struct {
	requests, bytes atomic.Int64
}

func (s *rwSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	s.requests.Add(1)
	s.bytes.Add(n)
	w.WriteHeader(http.StatusNoContent)
}
