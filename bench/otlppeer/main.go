// Command otlppeer compares otelcol-gym's gymattrs processor with the stock collector's
// transform processor (OTTL) on the same Gym SDK OTLP exports (`make bench-otlp-peer` builds
// the stock collector from bench/otlppeer/builder-config.yaml and runs this):
//
//	go run ./bench/otlppeer --peer _build/otlppeer/otelcol-otlppeer [--collector _build/otelcol-gym] [--rounds 3]
//
// The load (e2e/harness/otlpgen.go) is generated once, in memory: OTLP/HTTP
// protobuf exports of --resources Gym processes, every schema instrument with its kind, unit
// and bucket boundaries, declared attributes with values to normalise (failure kinds, fallback
// enums, identifiers, an over-long dispatch name), undeclared attributes to drop, --workers SDK
// series per declared attribute set (merged once the undeclared ones are dropped), cumulative,
// values growing from one export to the next, about --points data points in all.
//
// A check run first sends a few exports through each processor to a sink in the harness and
// checks what came out (declared attributes only, values normalised, series merged or not).
// Then each round runs four collectors one after another, each fresh, on the same bytes
// posted by --clients concurrent clients to its OTLP/HTTP receiver: otelcol-gym without a
// processor (its floor), otelcol-gym with gymattrs, the stock collector without a processor
// (its floor), the stock collector with transform. There is no batch processor, so a
// receiver answers once the pipeline ran: when every post has returned, the work is done.
// CPU time (user+sys from /proc/<pid>/stat) over the posting span, divided by the points,
// gives ns per point; minus the floor of the same collector in the same round, the cost of
// the processor. --ottl-grouped shares one keep_keys among the instruments with the same
// declared attributes; --profile takes CPU profiles of the last round's processor runs.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/bench/internal/cli"
	"github.com/gym-telemetry/otelcol-gym/bench/internal/scorecard"
	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

type options struct {
	collector, peer, outDir  string
	points                   int64
	resources, workers       int
	combos, clients, rounds  int
	gomaxprocs, checkExports int
	profile                  int
	seed                     uint64
	printOTTL, grouped       bool
	scorecard                string
}

func main() {
	var o options
	cli.Collector(&o.collector)
	flag.StringVar(&o.peer, "peer", "_build/otlppeer/otelcol-otlppeer", "the stock collector built from bench/otlppeer/builder-config.yaml (none: otelcol-gym's two runs only)")
	flag.StringVar(&o.outDir, "out-dir", "_build/bench/otlppeer", "where the configurations, the OTTL and the logs go")
	flag.Int64Var(&o.points, "points", 1_000_000, "data points in the load (about: whole exports)")
	flag.IntVar(&o.resources, "resources", 64, "Gym processes (resources), one export of each per round of posts")
	flag.IntVar(&o.workers, "workers", 2, "SDK series per declared attribute set (told apart by an undeclared attribute)")
	cli.Combos(&o.combos)
	flag.IntVar(&o.clients, "clients", 4, "concurrent HTTP clients")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of the four measured runs")
	flag.IntVar(&o.gomaxprocs, "gomaxprocs", 2, "GOMAXPROCS of every collector")
	flag.IntVar(&o.checkExports, "check-exports", 3, "exports of every resource in the check run (0: no check)")
	flag.Uint64Var(&o.seed, "seed", 1, "generator seed")
	flag.BoolVar(&o.printOTTL, "print-ottl", false, "print the transform processor's configuration and exit")
	flag.IntVar(&o.profile, "profile", 0, "seconds of CPU profile (pprof extension) of every processor run of the last round, from its first post, into --out-dir (0: none)")
	flag.StringVar(&o.scorecard, "scorecard", "", "write the figures for bench/scorecard (gymattrs against the floor, transform beside) to this file")
	flag.BoolVar(&o.grouped, "ottl-grouped", false, "one keep_keys per declared attribute list (or of the instruments' names) instead of one per instrument")
	flag.Parse()
	if o.printOTTL {
		fmt.Print(harness.TransformConfig(harness.GymOTTL(o.grouped)))
		return
	}
	harness.Main("bench/otlppeer", func(ctx context.Context) error { return run(ctx, o) })
}

// setup is one of the four measured collector runs.
type setup struct {
	name, bin, processor string
	health               bool
}

type result struct {
	cpu      time.Duration
	wall     time.Duration
	hwm      int64
	idle     int64   // RSS once started, before the posts
	accepted float64 // the receiver's accepted points (its own telemetry)
	sent     float64 // the exporter's sent points
	own      map[string]float64
}

func (r result) nsPerPoint(points int64) float64 {
	return float64(r.cpu.Nanoseconds()) / float64(points)
}

func run(ctx context.Context, o options) error {
	bins := []string{o.collector, o.peer}
	if o.peer == noPeer {
		bins = bins[:1]
	}
	if err := cli.Ready(o.outDir, true, "bench-otlp-peer", bins...); err != nil {
		return err
	}
	shape := harness.OTLPShape{Resources: o.resources, Workers: o.workers, Combos: o.combos, Seed: o.seed, Exports: 1}
	one, err := harness.GenOTLP(shape)
	if err != nil {
		return err
	}
	shape.Exports = int(max(1, (o.points+one.Points/2)/one.Points))
	t0 := time.Now()
	load, err := harness.GenOTLP(shape)
	if err != nil {
		return err
	}
	statements := harness.GymOTTL(o.grouped)
	ottlPath := filepath.Join(o.outDir, "transform.yaml")
	if err := os.WriteFile(ottlPath, []byte("processors:\n"+harness.TransformConfig(statements)), 0o600); err != nil {
		return err
	}
	fmt.Println(cli.Machine())
	fmt.Printf("load: %d resources x %d exports = %d OTLP/HTTP protobuf bodies, %d data points (%s), %.1f MB, generated in %.1f s\n",
		o.resources, shape.Exports, o.resources*shape.Exports, load.Points, kinds(load.PointsPerKind), float64(load.Bytes)/1e6, time.Since(t0).Seconds())
	fmt.Printf("      %d instruments; per resource %d SDK series, %d once bounded (undeclared attributes dropped, values normalised); seed %d\n",
		load.Instruments, load.SeriesPerResource, load.DeclaredSeries, o.seed)
	fmt.Printf("OTTL: %d statements (datapoint context), generated from internal/schema: %s\n", len(statements), ottlPath)
	fmt.Printf("GOMAXPROCS=%d for every collector; %d concurrent clients\n\n", o.gomaxprocs, o.clients)
	env := fmt.Sprintf("GOMAXPROCS=%d", o.gomaxprocs)

	if o.checkExports > 0 {
		if err := check(ctx, o, load, statements, env); err != nil {
			return err
		}
	}

	setups := []setup{
		{"otelcol-gym floor", o.collector, "", true},
		{"otelcol-gym gymattrs", o.collector, "gymattrs", true},
		{"stock v0.161.0 floor", o.peer, "", false},
		{"stock v0.161.0 transform", o.peer, "transform", false},
	}
	if o.peer == noPeer {
		setups = setups[:2] // gymattrs against its floor only (the stock build takes minutes)
	}
	results := make([][]result, len(setups)) // [setup][round]
	for round := range o.rounds {
		for i, s := range setups {
			prof := o.profile > 0 && round == o.rounds-1 && s.processor != ""
			r, err := measure(ctx, o, s, fmt.Sprintf("r%d-%d", round+1, i+1), load, statements, env, prof)
			if err != nil {
				return err
			}
			results[i] = append(results[i], r)
			fmt.Printf("round %d  %-26s CPU %6.2f s  wall %6.2f s  %7.0f ns/point  RSS %4.0f MiB idle, %4.0f MiB peak  accepted %.0f, exported %.0f points\n",
				round+1, s.name, r.cpu.Seconds(), r.wall.Seconds(), r.nsPerPoint(load.Points), float64(r.idle)/(1<<20), float64(r.hwm)/(1<<20), r.accepted, r.sent)
			if r.accepted != float64(load.Points) {
				return fmt.Errorf("%s accepted %.0f of %d points", s.name, r.accepted, load.Points)
			}
		}
		fmt.Println()
	}
	report(o, setups, results, load)
	if o.scorecard == "" {
		return nil
	}
	// Points per CPU-second, the median over the rounds: gymattrs against otelcol-gym's own
	// floor (no processor), transform beside.
	perCPU := func(i int) float64 {
		var xs []float64
		for _, r := range results[i] {
			xs = append(xs, float64(load.Points)/r.cpu.Seconds())
		}
		med, _, _ := stats(xs)
		return math.Round(med)
	}
	return scorecard.Save(o.scorecard, scorecard.Result{Path: scorecard.OTLP, Figure: perCPU(1), Reference: perCPU(0),
		Aside: []scorecard.Aside{{Name: "transform points/CPU-s", Value: perCPU(3)}, {Name: "stock floor points/CPU-s", Value: perCPU(2)}}})
}

func kinds(m map[string]int64) string {
	var parts []string
	for _, k := range []string{"counter", "updown", "gauge", "histogram"} {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// start starts the collector of s on a configuration with exporter sink (or the measured
// exporter when sinkURL is "").
func start(ctx context.Context, o options, s setup, name string, statements []string, sinkURL, env string) (*harness.Service, harness.OTLPPorts, error) {
	ports, err := harness.NewOTLPPorts()
	if err != nil {
		return nil, ports, err
	}
	cfg, err := harness.OTLPConfig{Ports: ports, Health: s.health, Processor: s.processor, Statements: statements, SinkURL: sinkURL}.Config()
	if err != nil {
		return nil, ports, err
	}
	telemetry := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Telemetry)
	health := "" // the stock build has no health_check: the receiver's port is the sign
	if s.health {
		health = fmt.Sprintf("http://127.0.0.1:%d/", ports.Health)
	}
	c, err := harness.StartService(ctx, harness.ServiceOptions{
		Name: name, Bin: s.bin, Dir: o.outDir, Env: []string{env}, Config: cfg,
		Ready:     harness.Listening(fmt.Sprintf("127.0.0.1:%d", ports.HTTP), health),
		PprofAddr: fmt.Sprintf("127.0.0.1:%d", ports.Pprof), Telemetry: telemetry,
	})
	return c, ports, err
}

func measure(ctx context.Context, o options, s setup, tag string, load *harness.OTLPLoad, statements []string, env string, profile bool) (result, error) {
	var r result
	name := strings.NewReplacer(" ", "-", ".", "").Replace(s.name) + "-" + tag
	c, ports, err := start(ctx, o, s, name, statements, "", env)
	if err != nil {
		return r, err
	}
	defer c.Stop()
	time.Sleep(time.Second) // start-up work done before the CPU is read
	if mem, err := harness.ProcMem(c.Pid); err == nil {
		r.idle = mem.RSS
	}
	cpu0, err := c.CPU()
	if err != nil {
		return r, err
	}
	profiled := make(chan error, 1)
	if profile {
		// The profile's own cost (sampling) is in the CPU measured: the figures of a profiled run
		// are a little higher.
		path := filepath.Join(o.outDir, name+".pprof")
		go func() { profiled <- c.CPUProfile(ctx, o.profile, path) }()
		fmt.Printf("profile: %s\n", path)
	} else {
		profiled <- nil
	}
	rep, err := harness.PostOTLP(ctx, fmt.Sprintf("http://127.0.0.1:%d/v1/metrics", ports.HTTP), load, o.clients)
	if err != nil {
		return r, fmt.Errorf("%s: %w (its log: %s)", s.name, err, c.LogPath)
	}
	if err := <-profiled; err != nil {
		return r, fmt.Errorf("%s: profile: %w", s.name, err)
	}
	cpu1, err := c.CPU()
	if err != nil {
		return r, err
	}
	r.cpu, r.wall = cpu1-cpu0, rep.Wall
	mem, _ := harness.ProcMem(c.Pid)
	r.hwm = mem.HWM
	if rep.Rejected > 0 {
		return r, fmt.Errorf("%s rejected %d points", s.name, rep.Rejected)
	}
	m, err := c.Metrics(ctx)
	if err != nil {
		return r, err
	}
	r.accepted = harness.Sum(m, "otelcol_receiver_accepted_metric_points")
	r.sent = harness.Sum(m, "otelcol_exporter_sent_metric_points")
	r.own = map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "otelcol_processor_") {
			r.own[k] = v
		}
	}
	return r, nil
}

// seen is what the check's sink received from one collector.
type seen struct {
	mu                       sync.Mutex
	points, schemaPoints     int64
	undeclared, unnormalised int64 // points with an undeclared attribute, values a rule would change
	scoredWithFailure        int64
	duplicates               int64 // points of a series already in the same metric of the same export
	series                   map[string]bool
	examples                 []string
}

func (s *seen) add(md pmetric.Metrics) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		res := attrString(rm.Resource().Attributes())
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				inMetric := map[string]bool{}
				eachPoint(m, func(attrs pcommon.Map, ts pcommon.Timestamp) {
					s.points++
					key := attrString(attrs)
					id := fmt.Sprintf("%s|%s|%d|%s", res, m.Name(), ts, key)
					if inMetric[id] {
						s.duplicates++
					}
					inMetric[id] = true
					s.series[res+"|"+m.Name()+"|"+key] = true
					in, ok := schema.Lookup(m.Name())
					if !ok {
						return
					}
					s.schemaPoints++
					s.checkPoint(schema.Get(in), in, attrs)
				})
			}
		}
	}
}

func (s *seen) checkPoint(in *schema.Instrument, id schema.InstrumentID, attrs pcommon.Map) {
	declared := map[string]schema.AttrID{}
	for _, ia := range in.Attrs {
		declared[schema.Attr(ia.ID).Key] = ia.ID
	}
	bad, unnorm := false, false
	attrs.Range(func(k string, v pcommon.Value) bool {
		aid, ok := declared[k]
		if !ok {
			bad = true
			s.example(fmt.Sprintf("%s: undeclared %s", in.Name, k))
			return true
		}
		if v.Type() == pcommon.ValueTypeStr {
			out, ok := (*normalize.Registry)(nil).String(aid, []byte(v.Str()))
			if !ok || string(out) != v.Str() {
				unnorm = true
				s.example(fmt.Sprintf("%s: %s=%.40q not normalised", in.Name, k, v.Str()))
			}
		}
		return true
	})
	if bad {
		s.undeclared++
	}
	if unnorm {
		s.unnormalised++
	}
	if id == schema.GymRolloutCompletedTotal {
		if o, ok := attrs.Get(schema.Attr(schema.AttrNemoGymRolloutOutcome).Key); ok && o.Str() == schema.Attr(schema.AttrNemoGymRolloutOutcome).Values[0] {
			for _, ia := range in.Attrs {
				if _, has := attrs.Get(schema.Attr(ia.ID).Key); has && ia.Optional {
					s.scoredWithFailure++
					break
				}
			}
		}
	}
}

func (s *seen) example(e string) {
	if len(s.examples) < 3 && !slices.Contains(s.examples, e) {
		s.examples = append(s.examples, e)
	}
}

func eachPoint(m pmetric.Metric, f func(pcommon.Map, pcommon.Timestamp)) {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		for i := range m.Sum().DataPoints().Len() {
			dp := m.Sum().DataPoints().At(i)
			f(dp.Attributes(), dp.Timestamp())
		}
	case pmetric.MetricTypeGauge:
		for i := range m.Gauge().DataPoints().Len() {
			dp := m.Gauge().DataPoints().At(i)
			f(dp.Attributes(), dp.Timestamp())
		}
	case pmetric.MetricTypeHistogram:
		for i := range m.Histogram().DataPoints().Len() {
			dp := m.Histogram().DataPoints().At(i)
			f(dp.Attributes(), dp.Timestamp())
		}
	}
}

func attrString(m pcommon.Map) string {
	parts := make([]string, 0, m.Len())
	m.Range(func(k string, v pcommon.Value) bool {
		parts = append(parts, k+"="+v.AsString())
		return true
	})
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// check posts the load's first exports through gymattrs and transform to a sink and checks
// what came out, with each collector's own counters.
func check(ctx context.Context, o options, load *harness.OTLPLoad, statements []string, env string) error {
	head := &harness.OTLPLoad{Bodies: load.Bodies[:min(o.checkExports, len(load.Bodies))]}
	head.Points = load.Points / int64(len(load.Bodies)) * int64(len(head.Bodies)) // every export has the same points
	want := int64(load.DeclaredSeries) * int64(o.resources) * int64(len(head.Bodies))
	fmt.Printf("check: the first %d exports of every resource (%d points, %d once merged) through each processor to a sink\n",
		len(head.Bodies), head.Points, want)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "processor\tpoints in\tpoints out\tseries out\tsame-series points in one metric\tundeclared attrs\tunnormalised values\tscored with failure attrs\tits own counters\t")
	checked := []setup{{"gymattrs", o.collector, "gymattrs", true}, {"transform", o.peer, "transform", false}}
	if o.peer == noPeer {
		checked = checked[:1]
	}
	for _, s := range checked {
		got := &seen{series: map[string]bool{}}
		sink, err := harness.StartSinkWith(func(md pmetric.Metrics) { got.mu.Lock(); got.add(md); got.mu.Unlock() })
		if err != nil {
			return err
		}
		c, ports, err := start(ctx, o, s, "check-"+s.processor, statements, sink.URL, env)
		if err != nil {
			sink.Close()
			return err
		}
		rep, err := harness.PostOTLP(ctx, fmt.Sprintf("http://127.0.0.1:%d/v1/metrics", ports.HTTP), head, o.clients)
		if err != nil {
			c.Stop()
			sink.Close()
			return fmt.Errorf("check %s: %w (its log: %s)", s.processor, err, c.LogPath)
		}
		m, _ := c.Metrics(ctx)
		c.Stop()
		sink.Close()
		var own []string
		for _, k := range []string{"otelcol_processor_gymattrs_attributes_removed", "otelcol_processor_gymattrs_values_normalised",
			"otelcol_processor_gymattrs_points_merged", "otelcol_processor_gymattrs_points_overflowed", "otelcol_processor_gymattrs_points_dropped",
			"otelcol_processor_incoming_items", "otelcol_processor_outgoing_items"} {
			if v := harness.Sum(m, k); v > 0 || strings.Contains(k, s.processor) {
				own = append(own, fmt.Sprintf("%s %.0f", strings.TrimPrefix(k, "otelcol_processor_"), v))
			}
		}
		got.mu.Lock()
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", s.processor, head.Points-rep.Rejected, got.points, len(got.series),
			got.duplicates, got.undeclared, got.unnormalised, got.scoredWithFailure, strings.Join(own, ", "))
		ok := got.undeclared == 0 && got.unnormalised == 0 && got.scoredWithFailure == 0
		switch s.processor {
		case "gymattrs":
			ok = ok && got.points == want && got.duplicates == 0
		case "transform":
			ok = ok && got.points == head.Points
		}
		examples := got.examples
		got.mu.Unlock()
		if !ok {
			_ = tw.Flush()
			return fmt.Errorf("check: %s did not bound the load as expected (e.g. %v); its log: %s", s.processor, examples, c.LogPath)
		}
	}
	_ = tw.Flush()
	fmt.Println("check: both keep only declared attributes with normalised values; gymattrs merges the series, transform leaves their points side by side")
	fmt.Println()
	return nil
}

// stats is the median and range of xs.
func stats(xs []float64) (med, lo, hi float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

func fmtStat(xs []float64, f string) string {
	med, lo, hi := stats(xs)
	if len(xs) == 1 {
		return fmt.Sprintf(f, med)
	}
	return fmt.Sprintf(f+" ("+f+" to "+f+")", med, lo, hi)
}

// noPeer as --peer runs otelcol-gym's floor and gymattrs only.
const noPeer = "none"

func report(o options, setups []setup, results [][]result, load *harness.OTLPLoad) {
	pts := float64(load.Points)
	floorOf := map[int]int{1: 0, 3: 2} // setup -> its floor
	fmt.Printf("summary: %d rounds, median (range); %d data points per run\n", o.rounds, load.Points)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "collector\tCPU s\tns CPU / point\tminus floor, ns / point\tpoints / CPU-s\tpeak RSS MiB\tidle RSS MiB\t")
	sub := make([][]float64, len(setups))
	for i, s := range setups {
		var cpu, ns, per, rss, idle []float64
		for round, r := range results[i] {
			cpu = append(cpu, r.cpu.Seconds())
			ns = append(ns, r.nsPerPoint(load.Points))
			per = append(per, pts/r.cpu.Seconds())
			rss = append(rss, float64(r.hwm)/(1<<20))
			idle = append(idle, float64(r.idle)/(1<<20))
			if f, ok := floorOf[i]; ok {
				sub[i] = append(sub[i], r.nsPerPoint(load.Points)-results[f][round].nsPerPoint(load.Points))
			}
		}
		minus := "-"
		if sub[i] != nil {
			minus = fmtStat(sub[i], "%.0f")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.name, fmtStat(cpu, "%.2f"), fmtStat(ns, "%.0f"), minus, fmtStat(per, "%.0f"), fmtStat(rss, "%.0f"), fmtStat(idle, "%.0f"))
	}
	_ = tw.Flush()
	var floor []float64
	for round := range results[1] {
		floor = append(floor, results[1][round].nsPerPoint(load.Points)/results[0][round].nsPerPoint(load.Points))
	}
	fmt.Printf("\nratio otelcol-gym gymattrs / its floor, ns of CPU per point (per round): x%s\n", fmtStat(floor, "%.2f"))
	shown := []int{1}
	if len(setups) > 3 {
		var ratio []float64
		for round := range sub[1] {
			ratio = append(ratio, sub[3][round]/sub[1][round])
		}
		fmt.Printf("ratio transform / gymattrs, ns of CPU per point minus each collector's floor (per round): x%s\n", fmtStat(ratio, "%.1f"))
		shown = append(shown, 3)
	}
	// What the processors said they did (last round).
	for _, i := range shown {
		r := results[i][len(results[i])-1]
		keys := make([]string, 0, len(r.own))
		for k := range r.own {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %.0f", strings.TrimPrefix(k, "otelcol_processor_"), r.own[k]))
		}
		fmt.Printf("%s, last round: points accepted %.0f, exported %.0f; %s\n", setups[i].name, r.accepted, r.sent, strings.Join(parts, ", "))
	}
}
