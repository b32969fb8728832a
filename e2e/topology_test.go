//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The deployment topology of deploy/ on loopback (docs/deployment.md): three node agents
// (deploy/agent.yaml), two gateways (deploy/gateway.yaml) and Debian's Prometheus with its
// remote-write receiver as the backend, all from the shipped files with only environment
// variables set.

// gatewayName is what the agents resolve to find the gateways, as a Kubernetes headless Service
// would be resolved; the test's own DNS server answers it with both gateways' addresses.
const gatewayName = "gateways.gym.test"

// startDNS serves A records of name (every address given) on a loopback UDP port and returns
// host:port. Other names get NXDOMAIN; other types of name an empty answer.
func startDNS(t *testing.T, name string, addrs []netip.Addr) string {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	fqdn := dnsmessage.MustNewName(name + ".")
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			hdr := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
			match := strings.EqualFold(q.Name.String(), fqdn.String())
			if !match {
				hdr.RCode = dnsmessage.RCodeNameError
			}
			b := dnsmessage.NewBuilder(nil, hdr)
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if match && q.Type == dnsmessage.TypeA {
				for _, a := range addrs {
					_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1},
						dnsmessage.AResource{A: a.As4()})
				}
			}
			msg, err := b.Finish()
			if err == nil {
				_, _ = conn.WriteTo(msg, from)
			}
		}
	}()
	return conn.LocalAddr().String()
}

// deployed is an otelcol-gym started on files of deploy/ with environment variables.
type deployed struct {
	*harness.Process
	name      string
	configs   []string // files of deploy/ (or absolute paths), merged in order
	env       []string
	ports     harness.Ports // Health and Telemetry are used
	healthURL string
}

// startGatewayToPrometheus starts a Prometheus that receives remote writes and a gateway
// (deploy/gateway.yaml) writing to it; it returns Prometheus' URL and the gateway's OTLP/gRPC
// port.
func startGatewayToPrometheus(t *testing.T) (prom string, gwPort int) {
	t.Helper()
	prom = harness.StartRemoteWritePrometheus(t)
	gwPort = harness.Port(t)
	startDeployed(t, "gateway", "gateway.yaml", []string{
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", gwPort),
		"OTELCOL_GYM_REMOTE_WRITE_URL=" + prom + "/api/v1/write",
	})
	return prom, gwPort
}

// startDeployed starts otelcol-gym on deploy/<config> with env plus the health, zpages,
// telemetry and OTLP/HTTP ports (free ones; picked again when one was taken meanwhile).
func startDeployed(t *testing.T, name, config string, env []string) *deployed {
	t.Helper()
	return startDeployedConfigs(t, name, []string{config}, env)
}

// startDeployedConfigs is startDeployed on several files of deploy/ (or absolute paths, a
// test's own overrides), merged in order.
func startDeployedConfigs(t *testing.T, name string, configs, env []string) *deployed {
	t.Helper()
	harness.UseCollector()
	for attempt := 1; ; attempt++ {
		p := harness.NewPorts(t)
		// A storage directory of its own unless env names one (a gateway keeps its flight
		// recorder there): never the default /var/lib/otelcol-gym, shared by every test.
		all := append([]string{
			"OTELCOL_GYM_STORAGE_DIR=" + t.TempDir(),
			fmt.Sprintf("OTELCOL_GYM_LIVE_ENDPOINT=127.0.0.1:%d", harness.Port(t)), // a gateway's live page
			fmt.Sprintf("OTELCOL_GYM_HEALTH_ENDPOINT=127.0.0.1:%d", p.Health),
			fmt.Sprintf("OTELCOL_GYM_TELEMETRY_PORT=%d", p.Telemetry),
			fmt.Sprintf("OTELCOL_GYM_ZPAGES_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
			fmt.Sprintf("OTELCOL_GYM_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
		}, env...)
		d := &deployed{name: name, configs: configs, env: all, ports: p,
			healthURL: fmt.Sprintf("http://127.0.0.1:%d/", p.Health)}
		err := d.start(t)
		if err == nil {
			return d
		}
		if attempt < harness.StartAttempts && d.Exited() && harness.AddressInUse(d.Process) {
			continue
		}
		t.Fatalf("%s: %v", name, err)
	}
}

func (d *deployed) start(t *testing.T) error {
	t.Helper()
	args := []string{harness.Bin}
	for _, c := range d.configs {
		if !filepath.IsAbs(c) {
			c = filepath.Join(harness.Root, "deploy", c)
		}
		args = append(args, "--config", c)
	}
	d.Process = harness.StartProcessEnv(t, d.name, d.env, args...)
	return d.WaitReady(d.healthURL, 60*time.Second)
}

// kill ends the collector at once (SIGKILL): nothing is flushed.
func (d *deployed) kill() {
	_ = syscall.Kill(-d.Cmd.Process.Pid, syscall.SIGKILL)
	<-d.Done()
}

// acceptedPoints is what the collector's receivers accepted, from its own metrics.
func (d *deployed) acceptedPoints(t *testing.T) float64 {
	return d.counter(t, "otelcol_receiver_accepted_metric_points")
}

// gymProcess is a simulated Gym process: over HTTP to its agent, or writing an events file the
// agent follows. sent counts the rollouts its agent has taken (HTTP: accepted in the answer;
// files: written, as the agent reads every complete line exactly once).
type gymProcess struct {
	instance string
	run      string // nemo.run.id; "" is e2e-topology
	pid      int    // process.pid of the resource line; 0: none
	agent    int
	file     string // "" for HTTP
	otlp     string // Gym's SDK: the agent's OTLP/HTTP endpoint; its counter is its own
	sent     int
	seq      int
	start    pcommon.Timestamp
}

func (g *gymProcess) runID() string {
	if g.run == "" {
		return "e2e-topology"
	}
	return g.run
}

// promInstance is the process's instance in Prometheus: gymattrs' instance_per_process (on in
// the agents) adds the pid its resource line names.
func (g *gymProcess) promInstance() string {
	if g.pid > 0 {
		return fmt.Sprintf("%s-pid%d", g.instance, g.pid)
	}
	return g.instance
}

func (g *gymProcess) resourceLine() string {
	pid := ""
	if g.pid > 0 {
		pid = fmt.Sprintf(`,"process.pid":%d`, g.pid)
	}
	return fmt.Sprintf(`{"event":"resource","attributes":{"service.name":"nemo-gym/topology","service.instance.id":%q,"nemo.run.id":%q,"nemo.gym.server.name":"math","nemo.gym.server.type":"resources_servers"%s}}`+"\n", g.instance, g.runID(), pid)
}

// body is n rollouts, each line distinct (the seq field is unknown to the receiver).
func (g *gymProcess) body(n int) string {
	var b strings.Builder
	for range n {
		g.seq++
		fmt.Fprintf(&b, `{"event":"rollout.completed","outcome":"omitted","dispatch_name":"math","seq":"%s-%d"}`+"\n", g.instance, g.seq)
	}
	return b.String()
}

// emit sends n rollouts.
func (g *gymProcess) emit(t *testing.T, agents []*deployed, gymPorts []int, n int) {
	t.Helper()
	if g.otlp != "" {
		postOTLP(t, g.otlp, g.otlpMetrics(n))
		return
	}
	if g.file != "" {
		if g.seq == 0 {
			harness.AppendFile(t, g.file, g.resourceLine())
		}
		harness.AppendFile(t, g.file, g.body(n))
		g.sent += n
		return
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/events", gymPorts[g.agent])
	status, answer := harness.Post(t, http.DefaultClient, url, g.resourceLine()+g.body(n), nil)
	require.Equal(t, http.StatusOK, status, "%s: %s", g.instance, answer)
	var ans harness.GymAnswer
	require.NoError(t, json.Unmarshal([]byte(answer), &ans))
	require.Zero(t, ans.Rejected+ans.Unknown, "%s: %s", g.instance, answer)
	g.sent += ans.Accepted - 1 // the resource line
}

// otlpMetrics is what Gym's SDK exports after n more rollouts: a cumulative counter kept by the
// process itself, which does not reset when the agent restarts.
func (g *gymProcess) otlpMetrics(n int) pmetric.Metrics {
	g.sent += n
	md := pmetric.NewMetrics()
	sm := sdkScope(md, "nemo_gym.telemetry", map[string]any{
		"service.name": "nemo-gym/topology", "service.instance.id": g.instance, "nemo.run.id": g.runID(),
	})
	m := sm.Metrics().AppendEmpty()
	m.SetName("gym.rollout.completed_total")
	m.SetUnit("{rollout}")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := sum.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(g.start)
	dp.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	dp.SetIntValue(int64(g.sent))
	dp.Attributes().PutStr("nemo.gym.rollout.outcome", "omitted")
	dp.Attributes().PutStr("nemo.gym.rollout.dispatch.name", "math")
	return md
}

// counterTotal is what a cumulative counter counted over its samples, across resets: the value
// before each reset plus the last one (the series starts at 0 with its first export). This is
// exactly what increase() estimates, without the extrapolation.
func counterTotal(samples []float64) (total float64, resets int) {
	for i, v := range samples {
		if i > 0 && v < samples[i-1] {
			total += samples[i-1]
			resets++
		}
	}
	if len(samples) > 0 {
		total += samples[len(samples)-1]
	}
	return total, resets
}

type instanceTotal struct {
	total  float64
	resets int
}

// rolloutTotals is gym_rollout_completed_total of one run (nemo.run.id) by instance, from the
// raw samples.
func rolloutTotals(base, run string) (map[string]instanceTotal, error) {
	series, err := harness.PromRaw(base, fmt.Sprintf(`gym_rollout_completed_total{nemo_run_id=%q}`, run))
	if err != nil {
		return nil, err
	}
	out := map[string]instanceTotal{}
	for _, s := range series {
		total, resets := counterTotal(s.Samples)
		it := out[s.Labels["instance"]]
		it.total += total
		it.resets += resets
		out[s.Labels["instance"]] = it
	}
	return out, nil
}

// waitTotals waits until Prometheus holds, for every process, exactly what it sent, and no
// other instance of their run (the run of procs[0]; they share it).
func waitTotals(t *testing.T, prom, what string, procs []*gymProcess) map[string]instanceTotal {
	t.Helper()
	return waitTotalsTick(t, prom, what, procs, nil)
}

// waitTotalsTick is waitTotals calling tick (when not nil) before each look.
func waitTotalsTick(t *testing.T, prom, what string, procs []*gymProcess, tick func()) map[string]instanceTotal {
	t.Helper()
	return waitTotalsWithin(t, prom, what, procs, tick, time.Minute)
}

// waitTotalsWithin is waitTotalsTick for at most within.
func waitTotalsWithin(t *testing.T, prom, what string, procs []*gymProcess, tick func(), within time.Duration) map[string]instanceTotal {
	t.Helper()
	var got map[string]instanceTotal
	var mismatch []string
	err := harness.Eventually(within, 250*time.Millisecond, func() error {
		if tick != nil {
			tick()
		}
		var err error
		if got, err = rolloutTotals(prom, procs[0].runID()); err != nil {
			return err
		}
		mismatch = mismatch[:0]
		for _, g := range procs {
			if got[g.promInstance()].total != float64(g.sent) {
				mismatch = append(mismatch, fmt.Sprintf("%s: %v, sent %d", g.promInstance(), got[g.promInstance()].total, g.sent))
			}
		}
		if len(got) != len(procs) {
			mismatch = append(mismatch, fmt.Sprintf("%d instances, want %d", len(got), len(procs)))
		}
		if len(mismatch) > 0 {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "%s: Prometheus' totals differ from what was sent: %s", what, strings.Join(mismatch, "; "))
	return got
}

// TestTopology runs the deployment of deploy/ on loopback: three agents (deploy/agent.yaml),
// each fed by two Gym processes over HTTP, one writing an events file and one Gym SDK sending
// OTLP (through gymattrs), export through two
// gateways (deploy/gateway.yaml), found by DNS like a Kubernetes headless Service and balanced
// by the agents' gRPC client, into Debian's Prometheus by remote write. During the run one
// gateway is killed (the other takes all the traffic), then the other is stopped too while the
// agents keep collecting, and one agent is restarted during that outage: what it collected
// before its restart exists only in its persistent queue on disk. At each step Prometheus'
// raw samples must add up, for every process, exactly to what it sent: nothing lost, nothing
// counted twice, and no series resets (the restarted agent's receiver restores its checkpoint;
// the SDK's counter is kept by its process).
func TestTopology(t *testing.T) {
	t.Parallel()
	prom := harness.StartRemoteWritePrometheus(t)

	// Both gateways on one port, on two loopback addresses, as two pods behind one name.
	gwAddrs := []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}
	var gwPort int
	require.NoError(t, harness.Eventually(5*time.Second, 0, func() error {
		gwPort = harness.Port(t)
		for _, a := range gwAddrs {
			ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", a, gwPort))
			if err != nil {
				return err
			}
			ln.Close()
		}
		return nil
	}), "a port free on 127.0.0.2 and 127.0.0.3")
	dns := startDNS(t, gatewayName, gwAddrs)
	gateways := make([]*deployed, len(gwAddrs))
	for i, a := range gwAddrs {
		gateways[i] = startDeployed(t, fmt.Sprintf("gateway-%d", i), "gateway.yaml", []string{
			fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=%s:%d", a, gwPort),
			"OTELCOL_GYM_REMOTE_WRITE_URL=" + prom + "/api/v1/write",
		})
	}

	dir := t.TempDir()
	const nAgents = 3
	agents := make([]*deployed, nAgents)
	gymPorts := make([]int, nAgents)
	var procs []*gymProcess
	for i := range nAgents {
		node := filepath.Join(dir, fmt.Sprintf("node-%d", i))
		logs := filepath.Join(node, "gym")
		require.NoError(t, os.MkdirAll(logs, 0o700))
		gymPorts[i] = harness.Port(t)
		otlpHTTP := fmt.Sprintf("127.0.0.1:%d", harness.Port(t))
		agents[i] = startDeployed(t, fmt.Sprintf("agent-%d", i), "agent.yaml", []string{
			fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=dns://%s/%s:%d", dns, gatewayName, gwPort),
			"OTELCOL_GYM_GATEWAY_INSECURE=true",
			"OTELCOL_GYM_STORAGE_DIR=" + filepath.Join(node, "state"),
			fmt.Sprintf("OTELCOL_GYM_EVENTS_ENDPOINT=127.0.0.1:%d", gymPorts[i]),
			"OTELCOL_GYM_EVENTS_SOCKET=" + filepath.Join(node, "gym.sock"),
			"OTELCOL_GYM_EVENT_FILES=" + filepath.Join(logs, "*.events.jsonl"),
			"OTELCOL_GYM_FILES_POLL_INTERVAL=100ms",
			"OTELCOL_GYM_COLLECTION_INTERVAL=300ms",
			"OTELCOL_GYM_PROCESS_STATS=false",
			fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
			fmt.Sprintf("OTELCOL_GYM_NODE_NAME=node-%d", i),
			"OTELCOL_GYM_OTLP_HTTP_ENDPOINT=" + otlpHTTP,
		})
		for j := range 2 {
			procs = append(procs, &gymProcess{instance: fmt.Sprintf("node%d-http%d", i, j), agent: i})
		}
		procs = append(procs, &gymProcess{instance: fmt.Sprintf("node%d-file", i), agent: i,
			file: filepath.Join(logs, "rollouts.events.jsonl")})
		procs = append(procs, &gymProcess{instance: fmt.Sprintf("node%d-sdk", i), agent: i,
			otlp: "http://" + otlpHTTP, start: pcommon.NewTimestampFromTime(time.Now())})
	}
	round := func(n int, only func(*gymProcess) bool) {
		for _, g := range procs {
			if only == nil || only(g) {
				g.emit(t, agents, gymPorts, n+len(g.instance)%3)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}

	// 1. Both gateways up: the agents' requests are spread over both.
	for r := range 20 {
		round(5+r%4, nil)
	}
	waitTotals(t, prom, "both gateways up", procs)
	for _, gw := range gateways {
		assert.Positive(t, gw.acceptedPoints(t), "%s took requests while both were up", gw.name)
	}

	// 2. Gateway 0 is killed in the middle of the traffic; gateway 1 takes all of it.
	for r := range 20 {
		if r == 5 {
			gateways[0].kill()
		}
		round(3+r%5, nil)
	}
	before := gateways[1].acceptedPoints(t)
	waitTotals(t, prom, "gateway 0 killed", procs)
	assert.Greater(t, gateways[1].acceptedPoints(t), before, "gateway 1 takes the traffic")

	// 3. Gateway 1 stops too: the agents keep what they collect in their queues. Agent 1 gets
	// more rollouts, is restarted (its last collection, never delivered, waits on disk), and
	// more files lines are written while it is down; then the gateway comes back.
	require.NoError(t, gateways[1].Stop(30*time.Second))
	for range 10 {
		round(4, nil)
	}
	time.Sleep(time.Second) // a few collections into the queues
	require.NoError(t, agents[1].Stop(30*time.Second), "agent 1: graceful stop")
	for range 3 {
		round(2, func(g *gymProcess) bool { return g.agent != 1 || g.file != "" })
	}
	require.NoError(t, agents[1].start(t), "agent 1: restart on the same storage")
	for range 5 {
		round(2, nil)
	}
	require.NoError(t, gateways[1].start(t), "gateway 1: back")

	// 4. Everything arrives: each process's total exactly once, and no series resets: agent 1's
	// gym receiver restored its checkpoint (totals and start times) from file_storage.
	for range 5 {
		round(1, nil)
	}
	got := waitTotals(t, prom, "after the outage and agent 1's restart", procs)
	for _, g := range procs {
		assert.Zero(t, got[g.promInstance()].resets, "%s: counter resets", g.instance)
	}
	// And each agent named its node (resource/node), a label of every series.
	nodes, err := harness.PromQuery(prom, `count by (host_name) (gym_rollout_completed_total{nemo_run_id="e2e-topology"})`)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{
		`{host_name="node-0"}`: 4, `{host_name="node-1"}`: 4, `{host_name="node-2"}`: 4,
	}, nodes, "series by host.name")
	for _, a := range agents {
		assert.Zero(t, a.counter(t, "otelcol_exporter_send_failed_metric_points")+
			a.counter(t, "otelcol_exporter_enqueue_failed_metric_points"),
			"%s: points the exporter gave up on", a.name)
	}
	var sent int
	for _, g := range procs {
		sent += g.sent
	}
	t.Logf("%d processes sent %d rollouts; Prometheus holds every one", len(procs), sent)
}
