package harness

import (
	"context"
	"fmt"
	"strings"
)

// GymPorts are the loopback ports of an otelcol-gym under test.
type GymPorts struct {
	HTTP, Health, Pprof, Telemetry int
}

// NewGymPorts picks free loopback ports.
func NewGymPorts() (GymPorts, error) {
	p, err := FreePorts(4)
	if err != nil {
		return GymPorts{}, err
	}
	return GymPorts{HTTP: p[0], Health: p[1], Pprof: p[2], Telemetry: p[3]}, nil
}

// GymConfig is the bench configuration of otelcol-gym (bench-gym.yaml): the gym receiver (HTTP
// on a loopback port, or files when filesGlob is set), the default configuration's processors
// (memory_limiter, batch), and an otlp_http exporter to the sink; health_check and pprof on
// loopback; the collector's own metrics on loopback. Host process stats are off: the
// generated resources announce pids that are not Gym processes on this machine.
func GymConfig(p GymPorts, sinkURL, filesGlob string, interval string) (string, error) {
	return LoadConfig("bench-gym.yaml", map[string]any{"P": p, "Sink": sinkURL, "Files": filesGlob, "Interval": interval})
}

// Buckets of the Gym histograms the peer defines (docs/metrics.md).
var (
	lagMS     = "[0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000]"
	gcPauseMS = "[0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000]"
	driverMS  = "[0.1, 1, 10, 100, 500, 1000, 5000, 10000, 30000, 60000, 300000, 1800000]"
	writeB    = "[1000, 10000, 100000, 1000000, 10000000, 100000000]"
	countB    = "[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096]"
	sandboxMS = "[250, 500, 1000, 2000, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000]"
	startupMS = "[100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000]"
	poolMS    = "[0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 5000, 30000]"
)

type peerMetric struct {
	name, event, kind, value, buckets string
	attrs                             []string // required attributes
	optional                          []string
}

// peerMetrics are the Gym metrics that signal_to_metrics can define on the parsed lines:
// every counter, up-down counter, gauge and histogram fed by a flat event. The snapshot
// events (gc.stats, server.requests, http.pool.connects, driver.counts) hold arrays and
// maps that signal_to_metrics cannot iterate over, and their totals are cumulative values to
// be reported as they are (not added): they are defined as gauges of their scalar fields.
var peerMetrics = []peerMetric{
	{"gym.rollout.completed_total", "rollout.completed", "sum", `1`, "", []string{"outcome", "dispatch_name"}, []string{"failure_class", "failure_kind", "failure_type"}},
	{"gym.rollout.rewarded_total", "rollout.completed", "sum", `1`, "", []string{"dispatch_name", "reward"}, nil},
	{"gym.rollout.health_verdict_total", "rollout.health", "sum", `1`, "", []string{"verdict", "outcome"}, nil},
	{"gym.sandbox.active", "sandbox.active", "updown", `Int(attributes["delta"])`, "", []string{"provider"}, nil},
	{"gym.sandbox.startup_duration_ms", "sandbox.startup", "histogram", `attributes["duration_ms"]`, sandboxMS, []string{"provider"}, nil},
	{"gym.sandbox.exec_duration_ms", "sandbox.exec", "histogram", `attributes["duration_ms"]`, sandboxMS, []string{"provider"}, nil},
	{"gym.sandbox.create_retry_total", "sandbox.create_retry", "sum", `1`, "", []string{"provider"}, nil},
	{"gym.server.startup_stage_duration_ms", "server.startup_stage", "histogram", `attributes["duration_ms"]`, startupMS, []string{"stage", "server_name"}, []string{"server_type"}},
	{"gym.http.connection_pool.queue_duration_ms", "http.pool.queue", "histogram", `attributes["duration_ms"]`, poolMS, []string{"queue_constraint", "queue_outcome", "server_name"}, nil},
	{"gym.http.connection_pool.connect_duration_ms", "http.pool.connect", "histogram", `attributes["duration_ms"]`, poolMS, []string{"outcome", "server_name"}, nil},
	{"gym.event_loop.lag_ms", "event_loop.lag", "histogram", `attributes["lag_ms"]`, lagMS, []string{"loop"}, nil},
	{"gym.event_loop.tasks", "event_loop.tasks", "gauge", `Int(attributes["tasks"])`, "", []string{"loop"}, nil},
	{"gym.gc.pause_duration_ms", "gc.pause", "histogram", `attributes["duration_ms"]`, gcPauseMS, []string{"generation"}, nil},
	{"gym.server.requests.in_flight", "server.requests", "gauge", `Int(attributes["in_flight"])`, "", nil, nil},
	{"gym.server.requests.unhandled_exceptions_total", "server.requests", "gauge", `Int(attributes["unhandled_exceptions"])`, "", nil, nil},
	{"gym.driver.rollouts.offered_total", "driver.counts", "gauge", `Int(attributes["offered"])`, "", nil, nil},
	{"gym.driver.rollouts.active", "driver.counts", "gauge", `Int(attributes["active"])`, "", nil, nil},
	{"gym.driver.admission_duration_ms", "driver.admission", "histogram", `attributes["duration_ms"]`, driverMS, nil, nil},
	{"gym.driver.output_write_duration_ms", "driver.output_write", "histogram", `attributes["duration_ms"]`, driverMS, nil, nil},
	{"gym.driver.output_write_bytes", "driver.output_write", "histogram", `attributes["bytes"]`, writeB, nil, nil},
	{"gym.driver.materialize_duration_ms", "driver.materialize", "histogram", `attributes["duration_ms"]`, driverMS, nil, nil},
	{"gym.driver.rollout.input_items", "rollout.size", "histogram", `attributes["input_items"]`, countB, nil, nil},
	{"gym.driver.rollout.output_items", "rollout.size", "histogram", `attributes["output_items"]`, countB, nil, nil},
	{"gym.driver.rollout.turns", "rollout.size", "histogram", `attributes["turns"]`, countB, nil, nil},
	{"gym.driver.rollout.tool_calls", "rollout.size", "histogram", `attributes["tool_calls"]`, countB, nil, nil},
}

// PeerMetricCount is the number of metrics the peer defines.
func PeerMetricCount() int { return len(peerMetrics) }

// PeerPorts are the loopback ports of the stock collector.
type PeerPorts struct {
	Pprof, Telemetry int
}

// PeerConfig is the stock collector's configuration (bench-peer.yaml): file_log tails the file with a
// json_parser, signal_to_metrics defines the Gym metrics, nop discards them. With check, the
// debug exporter (basic verbosity: one log line per batch with its counts) replaces nop.
func PeerConfig(p PeerPorts, fileGlob string, check bool) (string, error) {
	var b strings.Builder
	for _, m := range peerMetrics {
		fmt.Fprintf(&b, "      - name: %s\n", m.name)
		fmt.Fprintf(&b, "        conditions: ['attributes[\"event\"] == \"%s\"']\n", m.event)
		if len(m.attrs)+len(m.optional) > 0 {
			b.WriteString("        attributes:\n")
			for _, a := range m.attrs {
				fmt.Fprintf(&b, "          - key: %s\n", a)
			}
			for _, a := range m.optional {
				fmt.Fprintf(&b, "          - key: %s\n            optional: true\n", a)
			}
		}
		switch m.kind {
		case "sum":
			fmt.Fprintf(&b, "        sum:\n          value: '%s'\n          monotonic: true\n", m.value)
		case "updown":
			fmt.Fprintf(&b, "        sum:\n          value: '%s'\n          monotonic: false\n", m.value)
		case "gauge":
			fmt.Fprintf(&b, "        gauge:\n          value: '%s'\n", m.value)
		case "histogram":
			fmt.Fprintf(&b, "        histogram:\n          value: '%s'\n          buckets: %s\n", m.value, m.buckets)
		}
	}
	return LoadConfig("bench-peer.yaml", map[string]any{"P": p, "Files": fileGlob, "Signals": b.String(), "Check": check})
}

// StartGym starts otelcol-gym (o.Bin) on GymConfig for free ports and waits for its health
// check; o gives the name, directory and environment, the rest is filled in.
func StartGym(ctx context.Context, o ServiceOptions, sinkURL, filesGlob, interval string) (*Service, GymPorts, error) {
	ports, err := NewGymPorts()
	if err != nil {
		return nil, ports, err
	}
	if o.Config, err = GymConfig(ports, sinkURL, filesGlob, interval); err != nil {
		return nil, ports, err
	}
	o.HealthURL = fmt.Sprintf("http://127.0.0.1:%d/", ports.Health)
	o.PprofAddr = fmt.Sprintf("127.0.0.1:%d", ports.Pprof)
	o.Telemetry = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Telemetry)
	c, err := StartService(ctx, o)
	return c, ports, err
}

// StartPeer starts the stock collector (o.Bin) on PeerConfig for free ports and waits for its
// own telemetry: the stock build has no health_check extension, its telemetry answers once it
// runs.
func StartPeer(ctx context.Context, o ServiceOptions, fileGlob string, check bool) (*Service, error) {
	p, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	ports := PeerPorts{Pprof: p[0], Telemetry: p[1]}
	if o.Config, err = PeerConfig(ports, fileGlob, check); err != nil {
		return nil, err
	}
	o.Telemetry = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Telemetry)
	o.HealthURL = o.Telemetry
	o.PprofAddr = fmt.Sprintf("127.0.0.1:%d", ports.Pprof)
	return StartService(ctx, o)
}

// OTLPPorts are the loopback ports of a collector under OTLP load: the same four as GymPorts.
type OTLPPorts = GymPorts

// NewOTLPPorts picks free loopback ports.
func NewOTLPPorts() (OTLPPorts, error) { return NewGymPorts() }

// OTLPConfig describes a collector configuration for the OTLP peer benchmark.
type OTLPConfig struct {
	Ports OTLPPorts
	// Health adds the health_check extension (otelcol-gym has it, the stock build has not).
	Health bool
	// Processor is the one processor of the pipeline: "" (none: the floor), "gymattrs" (its
	// defaults) or "transform" (Statements).
	Processor  string
	Statements []string
	// SinkURL, when set, exports with otlp_http (no compression) to a harness Sink instead of
	// the measured exporter: for the check run, which reads what the pipeline made.
	SinkURL string
}

// Config is the YAML (bench-otlp.yaml). The measured exporter is debug at basic verbosity with
// its log sampled to one line now and then: otelcol-gym's distribution has no nop exporter,
// and the same exporter on both collectors keeps the floors alike (its cost, a data point
// count and a dropped log call per export, is in the floor that is subtracted). No batch
// processor: the receiver answers once the whole pipeline ran on the request, so the last
// answer is the end of the work.
func (c OTLPConfig) Config() (string, error) {
	transform := ""
	switch c.Processor {
	case "", "gymattrs":
	case "transform":
		transform = TransformConfig(c.Statements)
	default:
		return "", fmt.Errorf("harness: unknown processor %q", c.Processor)
	}
	return LoadConfig("bench-otlp.yaml", struct {
		OTLPConfig
		Transform string
	}{c, transform})
}
