package harness

import (
	"fmt"
)

// OTLPPorts are the loopback ports of a collector under OTLP load.
type OTLPPorts struct {
	HTTP, Health, Pprof, Telemetry int
}

// NewOTLPPorts picks free loopback ports.
func NewOTLPPorts() (OTLPPorts, error) {
	p, err := FreePorts(4)
	if err != nil {
		return OTLPPorts{}, err
	}
	return OTLPPorts{HTTP: p[0], Health: p[1], Pprof: p[2], Telemetry: p[3]}, nil
}

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
