// Package gymgen generates a realistic, seeded Gym event stream (events-v1): the mix of a real
// run, with many processes, rollouts with rewards and failures, lag and GC samples, sandboxes,
// pool waits and snapshots. Benchmarks, the load tool and tests share it.
package gymgen

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Options shape a generated stream.
type Options struct {
	Seed      uint64
	Processes int // distinct Gym processes (resources); at least 1
	// Dispatches, Providers and Routes bound the free-valued attributes (0: a realistic few).
	Dispatches, Providers, Routes int
}

// Generator writes events one line at a time.
type Generator struct {
	opts  Options
	rng   *rand.Rand
	procs []process
	cur   int
}

type process struct {
	resource  string
	driver    bool
	offered   int64
	responses [3]int64
	cancelled int64
	gcColl    [3]int64
	connects  int64
	sandboxes int64
}

var (
	serverTypes  = []string{"resources_servers", "responses_api_agents", "responses_api_models", "environment_servers", "orchestrator"}
	failureKinds = []string{"transport_timeout", "agent_request_failed", "judge_unparseable", "provider_unavailable", "sandbox:oom", "lab:quirk"}
	checks       = []string{"model_call_failed", "agent_turn_hollow", "rollout_token_count_mismatch", "custom_probe"}
	stages       = []string{"import", "config", "bind", "warmup"}
)

// New returns a generator.
func New(opts Options) *Generator {
	if opts.Processes < 1 {
		opts.Processes = 1
	}
	if opts.Dispatches < 1 {
		opts.Dispatches = 8
	}
	if opts.Providers < 1 {
		opts.Providers = 2
	}
	if opts.Routes < 1 {
		opts.Routes = 6
	}
	g := &Generator{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))}
	for i := range opts.Processes {
		driver := i == 0
		name := "math"
		typ := serverTypes[i%len(serverTypes)]
		if driver {
			name, typ = "driver", "orchestrator"
		}
		g.procs = append(g.procs, process{
			driver: driver,
			resource: fmt.Sprintf(`{"event":"resource","attributes":{"service.name":"nemo-gym/%s","service.instance.id":"run1-%d","nemo.run.id":"run1","nemo.gym.server.name":"%s","nemo.gym.server.type":"%s","process.pid":%d,"host.name":"node%d"}}`,
				name, i, name, typ, 10000+i, i%4),
		})
	}
	return g
}

// Resource returns the resource line of process i.
func (g *Generator) Resource(i int) string { return g.procs[i%len(g.procs)].resource }

// Processes returns the number of processes.
func (g *Generator) Processes() int { return len(g.procs) }

// Lines returns one batch of n lines (Batch) of each of processes processes, generated from
// seed, as separate lines without their newlines: the realistic mix that tests and benchmarks
// feed line by line.
func Lines(seed uint64, processes, n int) [][]byte {
	g := New(Options{Seed: seed, Processes: processes})
	var out [][]byte
	for range processes {
		out = append(out, bytes.Split(bytes.TrimSuffix(g.Batch(nil, n), []byte("\n")), []byte("\n"))...)
	}
	return out
}

// Bodies cuts a generated stream (the batches of Batch, one after another) into its batches:
// each starts at a resource line.
func Bodies(stream []byte) []string {
	var bodies []string
	var cur strings.Builder
	for _, l := range strings.SplitAfter(string(stream), "\n") {
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, `{"event":"resource"`) && cur.Len() > 0 {
			bodies = append(bodies, cur.String())
			cur.Reset()
		}
		cur.WriteString(l)
	}
	if cur.Len() > 0 {
		bodies = append(bodies, cur.String())
	}
	return bodies
}

// Batch appends n lines to b: a resource line for one process, then n-1 of its events. Each
// batch is one process's, as one HTTP request body or one connection's stretch would be.
func (g *Generator) Batch(b []byte, n int) []byte {
	p := &g.procs[g.cur]
	g.cur = (g.cur + 1) % len(g.procs)
	b = append(b, p.resource...)
	b = append(b, '\n')
	for range n - 1 {
		b = g.event(b, p)
		b = append(b, '\n')
	}
	return b
}

func (g *Generator) pick(list []string) string { return list[g.rng.IntN(len(list))] }

func (g *Generator) dur(scale float64) string {
	return strconv.FormatFloat(g.rng.ExpFloat64()*scale, 'f', 3, 64)
}

// event appends one event of the process's mix.
func (g *Generator) event(b []byte, p *process) []byte {
	r := g.rng.IntN(100)
	disp := "d" + strconv.Itoa(g.rng.IntN(g.opts.Dispatches))
	prov := "p" + strconv.Itoa(g.rng.IntN(g.opts.Providers))
	switch {
	case r < 20:
		return append(b, `{"event":"event_loop.lag","loop":"main","lag_ms":`+g.dur(2)+`}`...)
	case r < 28:
		return append(b, `{"event":"gc.pause","generation":`+strconv.Itoa(g.rng.IntN(3))+`,"duration_ms":`+g.dur(0.8)+`}`...)
	case r < 40:
		switch x := g.rng.IntN(10); {
		case x < 7:
			return append(b, `{"event":"rollout.completed","outcome":"scored","dispatch_name":"`+disp+`","reward":`+strconv.FormatFloat(float64(g.rng.IntN(5))/4, 'f', 2, 64)+`}`...)
		case x < 9:
			return append(b, `{"event":"rollout.completed","outcome":"failed","dispatch_name":"`+disp+`","failure_class":"agent_request_failed","failure_kind":"`+g.pick(failureKinds)+`","failure_type":"TimeoutError","failure_reason":"read timed out after `+strconv.Itoa(g.rng.IntN(600))+`s"}`...)
		default:
			return append(b, `{"event":"rollout.completed","outcome":"omitted","dispatch_name":"`+disp+`"}`...)
		}
	case r < 44:
		return append(b, `{"event":"rollout.health","verdict":"unhealthy","outcome":"failed","flagged_checks":["`+g.pick(checks)+`","`+g.pick(checks)+`"]}`...)
	case r < 48:
		return append(b, `{"event":"rollout.size","input_items":`+strconv.Itoa(g.rng.IntN(40))+`,"output_items":`+strconv.Itoa(g.rng.IntN(80))+`,"turns":`+strconv.Itoa(1+g.rng.IntN(12))+`,"tool_calls":`+strconv.Itoa(g.rng.IntN(20))+`}`...)
	case r < 54:
		delta := 1
		if p.sandboxes > 0 && g.rng.IntN(2) == 0 {
			delta = -1
		}
		p.sandboxes += int64(delta)
		return append(b, `{"event":"sandbox.active","provider":"`+prov+`","delta":`+strconv.Itoa(delta)+`}`...)
	case r < 58:
		return append(b, `{"event":"sandbox.exec","provider":"`+prov+`","duration_ms":`+g.dur(400)+`}`...)
	case r < 60:
		return append(b, `{"event":"sandbox.startup","provider":"`+prov+`","duration_ms":`+g.dur(3000)+`}`...)
	case r < 61:
		return append(b, `{"event":"sandbox.create_retry","provider":"`+prov+`"}`...)
	case r < 67:
		return append(b, `{"event":"http.pool.queue","queue_constraint":"per_host","queue_outcome":"ok","server_name":"policy","duration_ms":`+g.dur(0.5)+`}`...)
	case r < 71:
		return append(b, `{"event":"http.pool.connect","outcome":"ok","server_name":"policy","duration_ms":`+g.dur(3)+`}`...)
	case r < 73:
		p.connects += int64(g.rng.IntN(3))
		return append(b, `{"event":"http.pool.connects","counts":{"policy":`+strconv.FormatInt(p.connects, 10)+`,"judge":`+strconv.FormatInt(p.connects/3, 10)+`}}`...)
	case r < 76:
		return append(b, `{"event":"event_loop.tasks","loop":"main","tasks":`+strconv.Itoa(g.rng.IntN(300))+`}`...)
	case r < 79:
		for i := range p.gcColl {
			p.gcColl[i] += int64(g.rng.IntN(10 >> i))
		}
		return append(b, fmt.Sprintf(`{"event":"gc.stats","collections":[%d,%d,%d],"collected":[%d,%d,%d],"uncollectable":[0,0,0],"count":[%d,%d,%d]}`,
			p.gcColl[0], p.gcColl[1], p.gcColl[2], p.gcColl[0]*40, p.gcColl[1]*30, p.gcColl[2]*20, g.rng.IntN(700), g.rng.IntN(10), g.rng.IntN(10))...)
	case r < 84:
		p.responses[0] += int64(g.rng.IntN(20))
		p.responses[1] += int64(g.rng.IntN(2))
		p.responses[2] += int64(g.rng.IntN(2))
		p.cancelled += int64(g.rng.IntN(2))
		route := "/r" + strconv.Itoa(g.rng.IntN(g.opts.Routes))
		return append(b, fmt.Sprintf(`{"event":"server.requests","in_flight":%d,"unhandled_exceptions":%d,"responses":{"200":%d,"422":%d,"503":%d},"cancelled":[{"route":"%s","response_started":false,"count":%d}],"outbound_in_flight":%d}`,
			g.rng.IntN(30), p.responses[2]/4, p.responses[0], p.responses[1], p.responses[2], route, p.cancelled, g.rng.IntN(10))...)
	case r < 88 && p.driver:
		p.offered += int64(1 + g.rng.IntN(4))
		return append(b, `{"event":"driver.counts","offered":`+strconv.FormatInt(p.offered, 10)+`,"resident":`+strconv.Itoa(g.rng.IntN(64))+`,"active":`+strconv.Itoa(g.rng.IntN(32))+`}`...)
	case r < 91:
		return append(b, `{"event":"driver.admission","duration_ms":`+g.dur(50)+`}`...)
	case r < 94:
		return append(b, `{"event":"driver.output_write","duration_ms":`+g.dur(5)+`,"bytes":`+strconv.Itoa(1000+g.rng.IntN(200000))+`}`...)
	case r < 97:
		return append(b, `{"event":"driver.materialize","duration_ms":`+g.dur(20)+`}`...)
	case r < 99:
		return append(b, `{"event":"server.startup_stage","stage":"`+g.pick(stages)+`","server_name":"math","server_type":"`+g.pick(serverTypes)+`","duration_ms":`+g.dur(800)+`}`...)
	default:
		return append(b, `{"event":"http.pool.connect","outcome":"failed","server_name":"judge","duration_ms":`+g.dur(30)+`}`...)
	}
}
