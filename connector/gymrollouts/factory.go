// Package gymrollouts is the gymrollouts connector, the flight recorder: from Gym's spans
// (traces in) it tells which rollouts are in flight and which are stalled, as metrics and log
// records (out). The engine is internal/flight; this package wires it to the pipelines. See
// docs/connector.md.
package gymrollouts

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/connector/gymrollouts/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/internal/sharedcomponent"
)

// NewFactory returns the gymrollouts connector's factory.
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		connector.WithTracesToMetrics(createTracesToMetrics, metadata.TracesToMetricsStability),
		connector.WithTracesToLogs(createTracesToLogs, metadata.TracesToLogsStability),
	)
}

// recorders holds one recorder per configuration: a connector used traces-to-metrics and
// traces-to-logs records each span once and writes both outputs from the same state.
var recorders = sharedcomponent.NewMap[*Config, *recorder]()

func get(set connector.Settings, cfg *Config, attach func(*recorder)) (*sharedcomponent.Component[*recorder], error) {
	c, err := recorders.LoadOrStore(cfg, func() (*recorder, error) { return newRecorder(set, cfg) })
	if err != nil {
		return nil, err
	}
	attach(c.Unwrap())
	return c, nil
}

func createTracesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	c, err := get(set, cfg.(*Config), func(r *recorder) { r.setMetrics(next) })
	if err != nil {
		return nil, err
	}
	return &side{Component: c, feeds: func(*recorder) bool { return true }}, nil
}

func createTracesToLogs(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Logs) (connector.Traces, error) {
	c, err := get(set, cfg.(*Config), func(r *recorder) { r.setLogs(next) })
	if err != nil {
		return nil, err
	}
	// Both sides receive every span: the metrics side records them, the logs side only when
	// the connector has no metrics side.
	return &side{Component: c, feeds: func(r *recorder) bool { return !r.hasMetrics() }}, nil
}

// side is the connector as one pipeline pair sees it.
type side struct {
	*sharedcomponent.Component[*recorder]
	feeds func(*recorder) bool
}

func (s *side) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *side) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	if r := s.Unwrap(); s.feeds(r) {
		r.rec.ConsumeTraces(td)
	}
	return nil
}
