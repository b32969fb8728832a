// Command gateway measures the gateway tier (deploy/gateway.yaml) of the real binary: N
// simulated node agents, each sending its collections (the schema's bounded series of its Gym
// processes, as an agent's gymattrs leaves them) as OTLP gRPC requests, gzip-compressed as
// deploy/agent.yaml sends them, over a fixed number of connections; the gateway remote-writes
// them to a real Prometheus (--backend prometheus, the default) or to a sink inside this
// harness that answers 204 at once (--backend sink: the gateway's cost without the backend's).
// It reports data points and remote-write samples per CPU-second of the gateway (user+sys,
// every thread), its peak RSS, the backend's CPU and memory, checks that the backend holds
// every series and every sample sent, and, over two or more --agents values, the memory per
// active series of the gateway and of Prometheus.
//
//	go run ./bench/gateway --collector _build/otelcol-gym --agents 8,64
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"

	"github.com/gym-telemetry/otelcol-gym/bench/internal/cli"
	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/bound"
)

type options struct {
	bin, config, backend, prometheus string
	procsList, agentsList            string
	procsPerAgent, combos            int
	requests, conns, runs            int
	gzip                             bool
}

func main() {
	var o options
	cli.Collector(&o.bin)
	flag.StringVar(&o.config, "config", "deploy/gateway.yaml", "the gateway configuration")
	flag.StringVar(&o.backend, "backend", "prometheus", "prometheus (a real one, remote-write receiver on) or sink (answers 204, counts bytes)")
	flag.StringVar(&o.prometheus, "prometheus", "", "the prometheus binary (default: PROMETHEUS_BIN, /usr/bin/prometheus, PATH)")
	flag.StringVar(&o.procsList, "gomaxprocs", "1,2", "the gateway's GOMAXPROCS values, comma-separated")
	flag.StringVar(&o.agentsList, "agents", "8,64", "simulated node agents (distinct series each), comma-separated: one gateway per value")
	flag.IntVar(&o.procsPerAgent, "servers", 8, "Gym processes (resources) per agent, each with the schema's bounded series")
	cli.Combos(&o.combos)
	flag.IntVar(&o.requests, "requests", 600, "requests (agent collections) per measured run")
	flag.IntVar(&o.conns, "conns", 8, "concurrent requests: gRPC connections, agents spread over them")
	flag.IntVar(&o.runs, "runs", 3, "measured runs per gateway")
	flag.BoolVar(&o.gzip, "gzip", true, "gzip-compress requests (deploy/agent.yaml's compression)")
	flag.Parse()
	harness.Main("bench/gateway", func(ctx context.Context) error { return run(ctx, o) })
}

func run(ctx context.Context, o options) error {
	cfg, err := os.ReadFile(o.config)
	if err != nil {
		return err
	}
	if o.backend != "prometheus" && o.backend != "sink" {
		return fmt.Errorf("--backend %q: prometheus or sink", o.backend)
	}
	promBin := ""
	if o.backend == "prometheus" {
		if promBin, err = prometheusBinary(o.prometheus); err != nil {
			return err
		}
	}
	agentsList, err := cli.Ints(o.agentsList)
	if err != nil {
		return fmt.Errorf("--agents: %w", err)
	}
	procsList, err := cli.Ints(o.procsList)
	if err != nil {
		return fmt.Errorf("--gomaxprocs: %w", err)
	}
	tmpl, err := serverTemplates(o.procsPerAgent, o.combos)
	if err != nil {
		return err
	}
	shape := measureShape(tmpl)
	fmt.Println(harness.MachineInfo())
	fmt.Printf("agent collection: %d Gym servers x %d bounded series (%d numbers, %d histograms) = %d points, %d remote-write samples (buckets, _sum, _count; target_info); gzip %v; %d requests over %d connections per run; backend %s\n",
		o.procsPerAgent, shape.points/o.procsPerAgent, shape.numbers, shape.histograms, shape.points, shape.samples, o.gzip, o.requests, o.conns, o.backend)
	fmt.Println("| agents | active series | GOMAXPROCS | run | points/CPU-s | samples/CPU-s | points/s (wall) | gateway CPU s | gateway RSS peak MiB | backend CPU s | backend RSS MiB |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	var results []result
	for _, procs := range procsList {
		for _, agents := range agentsList {
			r, err := measure(ctx, o, string(cfg), promBin, tmpl, shape, procs, agents)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	}
	for _, r := range results {
		fmt.Println(r.summary)
	}
	// Memory per active series: between the smallest and the largest agent count at each
	// GOMAXPROCS, the same connections and request sizes, so in-flight memory is the same.
	for _, procs := range procsList {
		var lo, hi *result
		for i := range results {
			r := &results[i]
			if r.procs != procs {
				continue
			}
			if lo == nil || r.series < lo.series {
				lo = r
			}
			if hi == nil || r.series > hi.series {
				hi = r
			}
		}
		if lo == nil || hi.series == lo.series {
			continue
		}
		d := float64(hi.series - lo.series)
		line := fmt.Sprintf("GOMAXPROCS=%d, %d -> %d active series: gateway peak RSS %+.0f B per series (%.0f -> %.0f MiB)",
			procs, lo.series, hi.series, float64(hi.gatewayHWM-lo.gatewayHWM)/d, mib(lo.gatewayHWM), mib(hi.gatewayHWM))
		if o.backend == "prometheus" {
			line += fmt.Sprintf("; Prometheus RSS %+.0f B per series (%.0f -> %.0f MiB)",
				(hi.backendRSS-lo.backendRSS)/d, lo.backendRSS/(1<<20), hi.backendRSS/(1<<20))
		}
		fmt.Println(line)
	}
	return nil
}

type result struct {
	procs, agents int
	series        int64 // active series at the backend: every agent's
	gatewayHWM    int64
	backendRSS    float64
	summary       string
}

func measure(ctx context.Context, o options, cfg, promBin string, tmpl []pmetric.Metrics, shape requestShape, procs, agents int) (result, error) {
	res := result{procs: procs, agents: agents}
	dir, err := os.MkdirTemp("", "bench-gateway-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)

	var prom *prometheus
	backend := &countingBackend{}
	if o.backend == "prometheus" {
		if prom, err = startPrometheus(ctx, promBin, dir); err != nil {
			return res, err
		}
		defer prom.stop()
		backend.forward = prom.url + "/api/v1/write"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	srv := &http.Server{Handler: backend}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	ports, err := harness.FreePorts(4)
	if err != nil {
		return res, err
	}
	col, err := harness.StartService(ctx, harness.ServiceOptions{
		Name: "gateway", Bin: o.bin, Config: cfg, Dir: dir,
		Env: []string{
			fmt.Sprintf("GOMAXPROCS=%d", procs),
			fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", ports[0]),
			fmt.Sprintf("OTELCOL_GYM_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", ports[1]),
			fmt.Sprintf("OTELCOL_GYM_HEALTH_ENDPOINT=127.0.0.1:%d", ports[2]),
			fmt.Sprintf("OTELCOL_GYM_TELEMETRY_PORT=%d", ports[3]),
			"OTELCOL_GYM_ZPAGES_ENDPOINT=127.0.0.1:0",
			"OTELCOL_GYM_REMOTE_WRITE_URL=http://" + ln.Addr().String() + "/api/v1/write",
			"OTELCOL_GYM_STORAGE_DIR=" + filepath.Join(dir, "storage"), // the flight recorder's
			"OTELCOL_GYM_LIVE_ENDPOINT=127.0.0.1:0",
		},
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", ports[2]),
		Telemetry: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[3]),
	})
	if err != nil {
		return res, err
	}
	defer col.Stop()

	callOpts := []grpc.CallOption{}
	if o.gzip {
		callOpts = append(callOpts, grpc.UseCompressor(gzip.Name))
	}
	clients := make([]pmetricotlp.GRPCClient, o.conns)
	for i := range clients {
		cc, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", ports[0]),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(append(callOpts, grpc.MaxCallSendMsgSize(64<<20))...))
		if err != nil {
			return res, err
		}
		defer cc.Close()
		clients[i] = pmetricotlp.NewGRPCClient(cc)
	}
	nodes := make([]*node, agents)
	for a := range nodes {
		nodes[a] = newNode(a, tmpl)
	}
	var sent atomic.Int64 // requests the gateway answered OK
	// send makes n requests: connection c sends for the agents a with a % conns == c in turn,
	// each request the agent's next collection (its timestamps 1 ms later).
	send := func(n int64) error {
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, o.conns)
		for c := range o.conns {
			mine := []*node{}
			for a := c; a < agents; a += o.conns {
				mine = append(mine, nodes[a])
			}
			if len(mine) == 0 {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; next.Add(1) <= n; i++ {
					nd := mine[i%len(mine)]
					nd.advance()
					if _, err := clients[c].Export(ctx, nd.req); err != nil {
						errs <- fmt.Errorf("agent %d: %w", nd.id, err)
						return
					}
					sent.Add(1)
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	// Warm-up: every agent's series active at the backend, then a fifth of a run.
	if err := send(int64(max(agents, o.requests/5))); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	res.series = int64(agents) * int64(shape.samples)
	for run := 1; run <= o.runs; run++ {
		cpu0, err := col.CPU()
		if err != nil {
			return res, err
		}
		var bcpu0 float64
		if prom != nil {
			if bcpu0, _, err = prom.usage(ctx); err != nil {
				return res, err
			}
		}
		start := time.Now()
		if err := send(int64(o.requests)); err != nil {
			return res, err
		}
		wall := time.Since(start)
		cpu1, err := col.CPU()
		if err != nil {
			return res, err
		}
		mem, _ := harness.ProcMem(col.Pid)
		res.gatewayHWM = mem.HWM
		bcpu, brss := "", ""
		if prom != nil {
			bcpu1, rss, err := prom.usage(ctx)
			if err != nil {
				return res, err
			}
			res.backendRSS = rss
			bcpu, brss = fmt.Sprintf("%.2f", bcpu1-bcpu0), fmt.Sprintf("%.0f", rss/(1<<20))
		}
		cpu := (cpu1 - cpu0).Seconds()
		points := float64(o.requests * shape.points)
		fmt.Printf("| %d | %d | %d | %d | %.0f | %.0f | %.0f | %.2f | %.0f | %s | %s |\n", agents, res.series, procs, run,
			points/cpu, float64(o.requests*shape.samples)/cpu, points/wall.Seconds(), cpu, mib(mem.HWM), bcpu, brss)
	}

	// What arrived: the gateway's own counts, the bytes it wrote, and what the backend holds.
	m, err := col.Metrics(ctx)
	if err != nil {
		return res, err
	}
	reqs := sent.Load()
	exported := harness.Sum(m, "otelcol_exporter_sent_metric_points")
	failed := harness.Sum(m, "otelcol_exporter_send_failed_metric_points")
	writes, wbytes := backend.requests.Load(), backend.bytes.Load()
	res.summary = fmt.Sprintf("agents=%d GOMAXPROCS=%d: %d requests, the gateway exported %.0f of %d points (%.0f failed); %d remote writes, %.1f MiB (%.2f B per sample, snappy)",
		agents, procs, reqs, exported, reqs*int64(shape.points), failed, writes, mib(wbytes), float64(wbytes)/float64(reqs*int64(shape.samples)))
	if prom != nil {
		head, appended, err := prom.contents(ctx)
		if err != nil {
			return res, err
		}
		wantSamples := reqs * int64(shape.samples)
		res.summary += fmt.Sprintf("; Prometheus holds %.0f series of %d expected and took %.0f samples of %d sent",
			head, res.series, appended, wantSamples)
		if int64(head) != res.series || int64(appended) != wantSamples {
			byName, _ := prom.query(ctx, `count by (__name__) ({__name__=~".+"})`)
			return res, fmt.Errorf("%s: the backend does not hold what was sent; its series by name: %s; sent per instrument and agent: %v", res.summary, byName, shape.perName)
		}
	}
	if exported != float64(reqs*int64(shape.points)) || failed != 0 {
		return res, fmt.Errorf("%s: the gateway did not export every point", res.summary)
	}
	return res, nil
}

// requestShape counts what one agent collection holds.
type requestShape struct {
	points, numbers, histograms int // data points per collection
	// samples are the remote-write samples per collection, target_info included: each is one
	// series at Prometheus, so they are also an agent's series there.
	samples int
	perName map[string]int
}

func measureShape(tmpl []pmetric.Metrics) requestShape {
	s := requestShape{perName: map[string]int{}}
	for _, md := range tmpl {
		s.samples += md.ResourceMetrics().Len() // target_info
		eachMetric(md, func(m pmetric.Metric) {
			n := dataPoints(m)
			s.perName[m.Name()] += n
			if m.Type() != pmetric.MetricTypeHistogram {
				s.numbers += n
				return
			}
			s.histograms += n
			dps := m.Histogram().DataPoints()
			for d := range dps.Len() {
				s.samples += dps.At(d).BucketCounts().Len() + 2 // buckets (+Inf among them), _sum, _count
			}
		})
	}
	s.points = s.numbers + s.histograms
	s.samples += s.numbers
	return s
}

// serverTemplates are one node's Gym servers' collections: the OTLP peer's Gym SDK export of
// every schema instrument (harness.GenOTLP, one SDK series per declared attribute set)
// through gymattrs' rules (internal/bound, defaults), which is what an agent forwards.
func serverTemplates(servers, combos int) ([]pmetric.Metrics, error) {
	load, err := harness.GenOTLP(harness.OTLPShape{Resources: servers, Exports: 1, Workers: 1, Combos: combos, Seed: 1})
	if err != nil {
		return nil, err
	}
	bcfg := bound.DefaultConfig()
	if err := bcfg.Validate(); err != nil {
		return nil, err
	}
	b, err := bound.New(&bcfg, componenttest.NewNopTelemetrySettings())
	if err != nil {
		return nil, err
	}
	var out []pmetric.Metrics
	var u pmetricotlp.ExportRequest
	for _, body := range load.Bodies[0] {
		u = pmetricotlp.NewExportRequest()
		if err := u.UnmarshalProto(body); err != nil {
			return nil, err
		}
		md, err := b.Process(context.Background(), u.Metrics())
		if err != nil {
			return nil, err
		}
		out = append(out, md)
	}
	return out, nil
}

// node is one simulated agent: its collection, with its own resources, sent again and again
// with later timestamps (a cumulative series' next points).
type node struct {
	id  int
	req pmetricotlp.ExportRequest
	t0  time.Time
	seq int
}

func newNode(id int, tmpl []pmetric.Metrics) *node {
	md := pmetric.NewMetrics()
	for s, t := range tmpl {
		rms := t.ResourceMetrics()
		for i := range rms.Len() {
			rm := md.ResourceMetrics().AppendEmpty()
			rms.At(i).CopyTo(rm)
			a := rm.Resource().Attributes()
			a.Clear()
			a.PutStr("service.name", "nemo-gym")
			a.PutStr("service.instance.id", fmt.Sprintf("node%04d-server%d", id, s))
			a.PutInt("process.pid", int64(10000+s))
			a.PutStr("host.name", fmt.Sprintf("node%04d", id))
			a.PutStr("nemo.run.id", "bench-capacity")
			a.PutStr("nemo.gym.server.name", fmt.Sprintf("server%d", s))
			a.PutStr("nemo.gym.server.type", "resources_servers")
		}
	}
	return &node{id: id, req: pmetricotlp.NewExportRequestFromMetrics(md), t0: time.Now()}
}

// advance moves every point of the collection 1 ms on: strictly later for each series.
func (n *node) advance() {
	n.seq++
	ts := pcommon.NewTimestampFromTime(n.t0.Add(time.Duration(n.seq) * time.Millisecond))
	eachMetric(n.req.Metrics(), func(m pmetric.Metric) {
		switch m.Type() {
		case pmetric.MetricTypeSum:
			setNumbers(m.Sum().DataPoints(), ts)
		case pmetric.MetricTypeGauge:
			setNumbers(m.Gauge().DataPoints(), ts)
		case pmetric.MetricTypeHistogram:
			dps := m.Histogram().DataPoints()
			for d := range dps.Len() {
				dps.At(d).SetTimestamp(ts)
			}
		}
	})
}

// eachMetric calls f with every metric of md.
func eachMetric(md pmetric.Metrics, f func(pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				f(ms.At(k))
			}
		}
	}
}

func setNumbers(dps pmetric.NumberDataPointSlice, ts pcommon.Timestamp) {
	for d := range dps.Len() {
		dps.At(d).SetTimestamp(ts)
	}
}

func dataPoints(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	}
	return 0
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
