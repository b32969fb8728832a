// Command memory measures what the collector's default pipeline (config/otelcol-gym.yaml: the
// gym receiver, memory_limiter, gymattrs, batch, the Prometheus exporter) costs in
// memory: per minimal resource, per series, after churned resources have expired everywhere,
// per series under resources of 1 MiB strings (longres.go), and under concurrent gzip bombs
// (peak RSS). It runs the real binary on loopback and prints
// Markdown tables (docs/performance.md, SECURITY.md).
//
//	go run ./bench/memory --collector _build/otelcol-gym [--collector-b OTHER] [--resources 5000] [--long-only]
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gym-telemetry/otelcol-gym/bench/internal/cli"
	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

type options struct {
	collectors []string
	config     string
	outDir     string
	resources  int
	seriesRes  int
	seriesPer  int
	bombs      int
	bombSize   int64
	expire     time.Duration
	churnOnly  bool
	bombsOnly  bool
	longOnly   bool
	longSeries int
	longRuns   int
}

func main() {
	var o options
	var a, b string
	cli.Collector(&a)
	flag.StringVar(&b, "collector-b", "", "a second binary measured the same way, side by side (e.g. an older build)")
	flag.StringVar(&o.config, "config", "config/otelcol-gym.yaml", "the default configuration, whose pipeline is measured")
	flag.StringVar(&o.outDir, "out-dir", "_build/bench-memory", "configurations and logs")
	flag.IntVar(&o.resources, "resources", 5000, "minimal resources of the per-resource and churn measurement")
	flag.IntVar(&o.seriesRes, "series-resources", 10, "resources of the per-series measurement")
	flag.IntVar(&o.seriesPer, "series-per-resource", 1000, "series per resource of the per-series measurement")
	flag.IntVar(&o.bombs, "bombs", 48, "concurrent gzip bombs")
	flag.Int64Var(&o.bombSize, "bomb-size", 1<<30, "decoded size of each gzip bomb")
	flag.DurationVar(&o.expire, "expire-after", 20*time.Second, "the receiver's expire_after in the churn run (gymattrs' series_idle_timeout twice that, the Prometheus exporter's metric_expiration the same), scaled down from 5m so that the run takes minutes")
	flag.BoolVar(&o.churnOnly, "churn-only", false, "only the per-resource and churn run; its heap profile after the churn goes to out-dir")
	flag.BoolVar(&o.bombsOnly, "bombs-only", false, "only the gzip bombs")
	flag.BoolVar(&o.longOnly, "long-only", false, "only the run of resources of 1 MiB strings")
	flag.IntVar(&o.longSeries, "long-series", 128, "series under the resource of a 1 MiB service.name")
	flag.IntVar(&o.longRuns, "long-runs", 10, "runs (resources) of a 1 MiB nemo.run.id, one series each")
	flag.Parse()
	o.collectors = []string{a}
	if b != "" {
		o.collectors = append(o.collectors, b)
	}
	harness.Main("memory", func(ctx context.Context) error { return run(ctx, o) })
}

func run(ctx context.Context, o options) error {
	base, err := os.ReadFile(o.config)
	if err != nil {
		return err
	}
	fmt.Println(harness.MachineInfo())
	fmt.Println()
	bomb, err := gzipBomb(o.bombSize)
	if err != nil {
		return err
	}
	type row struct{ name, cells string }
	var rows []row
	for i, bin := range o.collectors {
		name := fmt.Sprintf("%c: %s", 'A'+i, bin)
		fmt.Printf("## %s\n\n", name)
		r, s, l := "- / - | - / -", "- / -", "- / - | - / - | - | -"
		if !o.bombsOnly {
			if l, err = longRuns(ctx, o, string(base), bin, fmt.Sprintf("long-%d", i)); err != nil {
				return fmt.Errorf("%s: long resources: %w", bin, err)
			}
		}
		if o.longOnly {
			rows = append(rows, row{name, r + " | " + s + " | " + l + " | - | -"})
			continue
		}
		if !o.bombsOnly {
			if r, err = resourcesRun(ctx, o, string(base), bin, fmt.Sprintf("res-%d", i)); err != nil {
				return fmt.Errorf("%s: resources: %w", bin, err)
			}
			if o.churnOnly {
				continue
			}
			if s, err = seriesRun(ctx, o, string(base), bin, fmt.Sprintf("series-%d", i)); err != nil {
				return fmt.Errorf("%s: series: %w", bin, err)
			}
		}
		bm, err := bombRun(ctx, o, string(base), bin, fmt.Sprintf("bomb-%d", i), bomb)
		if err != nil {
			return fmt.Errorf("%s: bombs: %w", bin, err)
		}
		fmt.Println()
		rows = append(rows, row{name, r + " | " + s + " | " + l + " | " + bm})
	}
	fmt.Println("| collector | per minimal resource: heap / RSS | after they all expired: heap / RSS over the fresh collector | per series: heap / RSS | per series under 1 MiB resource strings: heap / RSS | the same under 16-byte ones | the 1 MiB run's scrape: size, peak RSS | its runs on the live page | gzip bombs: answers | peak RSS |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s |\n", r.name, r.cells)
	}
	return nil
}

// pipelineConfig is the default configuration on free loopback ports, with a checkpoint
// storage directory of its own (the default's would restore an earlier run), the pprof
// extension (for the live heap) and, for the churn run, the expiry times scaled down. Every
// edit must match the default exactly once, so that a changed default fails here instead of
// measuring something else.
func pipelineConfig(base string, p harness.GymPorts, a addrs, storage string, expire time.Duration) (string, error) {
	promPort, otlp := a.prom, [2]int{a.otlpGRPC, a.otlpHTTP}
	c := base
	var errs []error
	edit := func(old, repl string) {
		if n := strings.Count(c, old); n != 1 {
			errs = append(errs, fmt.Errorf("config/otelcol-gym.yaml: %q found %d times, want once", old, n))
			return
		}
		c = strings.Replace(c, old, repl, 1)
	}
	edit("endpoint: 127.0.0.1:4390", fmt.Sprintf("endpoint: 127.0.0.1:%d", p.HTTP))
	edit("endpoint: 127.0.0.1:4317", fmt.Sprintf("endpoint: 127.0.0.1:%d", otlp[0]))
	edit("endpoint: 127.0.0.1:4318", fmt.Sprintf("endpoint: 127.0.0.1:%d", otlp[1]))
	edit("endpoint: 127.0.0.1:13133", fmt.Sprintf("endpoint: 127.0.0.1:%d", p.Health))
	edit("endpoint: 127.0.0.1:9464", fmt.Sprintf("endpoint: 127.0.0.1:%d", promPort))
	edit("port: 8888", fmt.Sprintf("port: %d", p.Telemetry))
	edit("endpoint: 127.0.0.1:8890", fmt.Sprintf("endpoint: 127.0.0.1:%d", a.live))
	edit("self_metrics: http://127.0.0.1:8888/metrics", fmt.Sprintf("self_metrics: http://127.0.0.1:%d/metrics", p.Telemetry))
	// The storage directory (checkpoint, traces, logs) is named three times.
	const storageDir = "${env:OTELCOL_GYM_STORAGE_DIR:-/var/lib/otelcol-gym}"
	if n := strings.Count(c, storageDir); n != 3 {
		errs = append(errs, fmt.Errorf("config/otelcol-gym.yaml: %q found %d times, want 3", storageDir, n))
	}
	c = strings.ReplaceAll(c, storageDir, storage)
	edit("\nextensions:\n", fmt.Sprintf("\nextensions:\n  pprof:\n    endpoint: 127.0.0.1:%d\n", p.Pprof))
	edit("extensions: [health_check, file_storage]", "extensions: [health_check, file_storage, pprof]")
	edit("      level: info", "      level: warn")
	if expire > 0 {
		edit("    collection_interval: 5s\n", fmt.Sprintf("    collection_interval: 5s\n    expire_after: %s\n", expire))
		edit("  gymattrs: {}", fmt.Sprintf("  gymattrs:\n    series_idle_timeout: %s", 2*expire))
		edit("    endpoint: "+fmt.Sprintf("127.0.0.1:%d", promPort), fmt.Sprintf("    endpoint: 127.0.0.1:%d\n    metric_expiration: %s", promPort, expire))
	}
	return c, errors.Join(errs...)
}

// addrs are the collector's ports beside its GymPorts.
type addrs struct{ prom, otlpGRPC, otlpHTTP, live int }

func start(ctx context.Context, o options, base, bin, name string, expire time.Duration) (*harness.Service, harness.GymPorts, addrs, error) {
	var a addrs
	p, err := harness.NewGymPorts()
	if err != nil {
		return nil, p, a, err
	}
	ports, err := harness.FreePorts(4)
	if err != nil {
		return nil, p, a, err
	}
	a = addrs{prom: ports[0], otlpGRPC: ports[1], otlpHTTP: ports[2], live: ports[3]}
	dir := filepath.Join(o.outDir, name)
	storage, err := filepath.Abs(filepath.Join(dir, "storage"))
	if err != nil {
		return nil, p, a, err
	}
	config, err := pipelineConfig(base, p, a, storage, expire)
	if err != nil {
		return nil, p, a, err
	}
	c, err := harness.StartService(ctx, harness.ServiceOptions{
		Name: name, Bin: bin, Config: config,
		Env: []string{"GOMAXPROCS=2"}, Dir: dir,
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", p.Health),
		PprofAddr: fmt.Sprintf("127.0.0.1:%d", p.Pprof),
		Telemetry: fmt.Sprintf("http://127.0.0.1:%d/metrics", p.Telemetry),
	})
	return c, p, a, err
}

type snapshot struct{ heap, rss int64 }

func measure(ctx context.Context, c *harness.Service) (snapshot, error) {
	h, err := c.HeapAfterGC(ctx)
	if err != nil {
		return snapshot{}, err
	}
	m, err := harness.ProcMem(c.Pid)
	return snapshot{h.Alloc, m.RSS}, err
}

func post(ctx context.Context, url string, body []byte, encoding string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// promSeries counts the gym_ samples the Prometheus exporter serves.
func promSeries(ctx context.Context, port int) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "gym_") {
			n++
		}
	}
	return n, nil
}

func waitSeries(ctx context.Context, port int, cond func(int) bool, limit time.Duration) (int, error) {
	end := time.Now().Add(limit)
	for {
		n, err := promSeries(ctx, port)
		if err == nil && cond(n) {
			return n, nil
		}
		if time.Now().After(end) {
			return n, fmt.Errorf("the Prometheus exporter serves %d gym_ samples after %s (%w)", n, limit, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func perUnit(d int64, n int) string {
	return bytesOf(float64(d) / float64(n))
}

func bytesOf(b float64) string {
	switch {
	case b >= 10<<20 || b <= -10<<20:
		return fmt.Sprintf("%.0f MiB", b/(1<<20))
	case b >= 10<<10 || b <= -10<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// resourcesRun: N minimal resources (service.name and service.instance.id, one counter
// series each), then all of them expire (receiver, gymattrs, Prometheus exporter).
func resourcesRun(ctx context.Context, o options, base, bin, name string) (string, error) {
	c, p, a, err := start(ctx, o, base, bin, name, o.expire)
	prom := a.prom
	if err != nil {
		return "", err
	}
	defer c.Stop()
	time.Sleep(6 * time.Second) // a collection or two of nothing
	before, err := measure(ctx, c)
	if err != nil {
		return "", err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/events", p.HTTP)
	const perBody = 500
	for i := 0; i < o.resources; i += perBody {
		var b strings.Builder
		for j := i; j < min(i+perBody, o.resources); j++ {
			fmt.Fprintf(&b, `{"event":"resource","attributes":{"service.name":"bench/r%d","service.instance.id":"i%d"}}`+"\n", j, j)
			b.WriteString(`{"event":"sandbox.create_retry","provider":"docker"}` + "\n")
		}
		if status, err := post(ctx, url, []byte(b.String()), ""); err != nil || status != http.StatusOK {
			return "", fmt.Errorf("post: %d %w", status, err)
		}
	}
	if _, err := waitSeries(ctx, prom, func(n int) bool { return n >= o.resources }, 60*time.Second); err != nil {
		return "", err
	}
	time.Sleep(6 * time.Second)
	full, err := measure(ctx, c)
	if err != nil {
		return "", err
	}
	fmt.Printf("- %d minimal resources: live heap %s -> %s, RSS %s -> %s\n", o.resources,
		bytesOf(float64(before.heap)), bytesOf(float64(full.heap)), bytesOf(float64(before.rss)), bytesOf(float64(full.rss)))
	// Every stage lets go: the receiver after expire_after, the Prometheus exporter after its
	// metric_expiration, gymattrs after series_idle_timeout (the longest, 2 x expire).
	if _, err := waitSeries(ctx, prom, func(n int) bool { return n == 0 }, 3*o.expire+60*time.Second); err != nil {
		return "", err
	}
	time.Sleep(2*o.expire + 15*time.Second)
	idle, err := measure(ctx, c)
	if err != nil {
		return "", err
	}
	// gymattrs forgets idle state when it processes a batch: one more resource sends a line,
	// as a live run's other processes do.
	if status, err := post(ctx, url, []byte(`{"event":"resource","attributes":{"service.name":"bench/after"}}`+"\n"+`{"event":"sandbox.create_retry","provider":"docker"}`+"\n"), ""); err != nil || status != http.StatusOK {
		return "", fmt.Errorf("post: %d %w", status, err)
	}
	time.Sleep(12 * time.Second)
	after, err := measure(ctx, c)
	if err != nil {
		return "", err
	}
	fmt.Printf("- after all expired, before any other batch: live heap %s, RSS %s\n", bytesOf(float64(idle.heap)), bytesOf(float64(idle.rss)))
	fmt.Printf("- after all expired and one batch of another resource: live heap %s, RSS %s\n", bytesOf(float64(after.heap)), bytesOf(float64(after.rss)))
	if o.churnOnly {
		path := filepath.Join(o.outDir, name, "heap-after-churn.pb.gz")
		if err := saveHeap(ctx, c.PprofAddr, path); err != nil {
			return "", err
		}
		fmt.Printf("- heap profile after the churn: %s (go tool pprof -top -sample_index=inuse_space %s)\n", path, path)
	}
	return fmt.Sprintf("%s / %s | %s / %s",
			perUnit(full.heap-before.heap, o.resources), perUnit(full.rss-before.rss, o.resources),
			bytesOf(float64(after.heap-before.heap)), bytesOf(float64(after.rss-before.rss))),
		nil
}

// seriesRun: a few resources of many counter series each (distinct providers).
func seriesRun(ctx context.Context, o options, base, bin, name string) (string, error) {
	c, p, a, err := start(ctx, o, base, bin, name, 0)
	prom := a.prom
	if err != nil {
		return "", err
	}
	defer c.Stop()
	time.Sleep(6 * time.Second)
	before, err := measure(ctx, c)
	if err != nil {
		return "", err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/events", p.HTTP)
	for r := range o.seriesRes {
		var b strings.Builder
		fmt.Fprintf(&b, `{"event":"resource","attributes":{"service.name":"bench/s%d","service.instance.id":"s%d"}}`+"\n", r, r)
		for s := range o.seriesPer {
			fmt.Fprintf(&b, `{"event":"sandbox.create_retry","provider":"p%d"}`+"\n", s)
		}
		if status, err := post(ctx, url, []byte(b.String()), ""); err != nil || status != http.StatusOK {
			return "", fmt.Errorf("post: %d %w", status, err)
		}
	}
	n := o.seriesRes * o.seriesPer
	if _, err := waitSeries(ctx, prom, func(k int) bool { return k >= n }, 60*time.Second); err != nil {
		return "", err
	}
	time.Sleep(6 * time.Second)
	full, err := measure(ctx, c)
	if err != nil {
		return "", err
	}
	fmt.Printf("- %d series (%d resources): live heap %s -> %s, RSS %s -> %s\n", n, o.seriesRes,
		bytesOf(float64(before.heap)), bytesOf(float64(full.heap)), bytesOf(float64(before.rss)), bytesOf(float64(full.rss)))
	return fmt.Sprintf("%s / %s", perUnit(full.heap-before.heap, n), perUnit(full.rss-before.rss, n)), nil
}

// gzipBomb is a gzip body of size zero bytes decoded.
func gzipBomb(size int64) ([]byte, error) {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	zeros := make([]byte, 1<<20)
	for n := int64(0); n < size; n += int64(len(zeros)) {
		if _, err := zw.Write(zeros); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), zw.Close()
}

// bombRun: o.bombs concurrent gzip bombs, three rounds; the collector's peak RSS (VmHWM).
func bombRun(ctx context.Context, o options, base, bin, name string, bomb []byte) (string, error) {
	c, p, _, err := start(ctx, o, base, bin, name, 0)
	if err != nil {
		return "", err
	}
	defer c.Stop()
	time.Sleep(2 * time.Second)
	idle, err := harness.ProcMem(c.Pid)
	if err != nil {
		return "", err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/events", p.HTTP)
	statuses := map[int]int{}
	var mu sync.Mutex
	for range 3 {
		var wg sync.WaitGroup
		for range o.bombs {
			wg.Go(func() {
				status, err := post(ctx, url, bomb, "gzip")
				if err != nil {
					status = -1
				}
				mu.Lock()
				statuses[status]++
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	if !c.Alive() {
		return "", errors.New("the collector died under the bombs:\n" + c.LogTail(20))
	}
	m, err := harness.ProcMem(c.Pid)
	if err != nil {
		return "", err
	}
	fmt.Printf("- %d x 3 gzip bombs of %s (%s on the wire): answers %v; RSS idle %s, peak %s\n", o.bombs,
		bytesOf(float64(o.bombSize)), bytesOf(float64(len(bomb))), statuses, bytesOf(float64(idle.RSS)), bytesOf(float64(m.HWM)))
	return fmt.Sprintf("%v | %s", statuses, bytesOf(float64(m.HWM))), nil
}

func saveHeap(ctx context.Context, addr, path string) error {
	data, err := harness.Get(ctx, "http://"+addr+"/debug/pprof/heap?gc=1", 64<<20)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
