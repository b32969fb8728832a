// Package gymconsolereceiver is the gym_console receiver: it reads the telemetry that a Gym
// server's OpenTelemetry Python SDK console exporters write into its stdout (nemo-lens with
// `exporter: console`), from log files or a socket, and turns it into metrics (bounded by the
// gymattrs rules), traces and logs. See README.md.
//
// It shares the gym receiver's file and stream transports (internal/transport), and runs the
// gymattrs processor's engine (internal/bound) on its metrics.
package gymconsolereceiver

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/gym-telemetry/otelcol-gym/internal/bound"
	"github.com/gym-telemetry/otelcol-gym/internal/follow"
	"github.com/gym-telemetry/otelcol-gym/internal/sharedcomponent"
	"github.com/gym-telemetry/otelcol-gym/internal/transport"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymconsolereceiver/internal/metadata"
)

const (
	// A metrics line is a process's whole cumulative state: a few hundred series with
	// 16-bucket histograms make a few hundred KiB. Each followed file may hold up to about
	// three times this (its line buffer, a pretty-printed record, a copy for Python's NaN).
	defaultMaxLineBytes = 1 << 20
	defaultSocketPath   = "/tmp/otelcol-gym-console.sock"
)

// NewFactory returns the gym_console receiver's factory.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		createDefaultConfig,
		receiver.WithMetrics(createMetrics, metadata.MetricsStability),
		receiver.WithTraces(createTraces, metadata.TracesStability),
		receiver.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		Files:        configoptional.Default(follow.DefaultFilesConfig()),
		Stream:       configoptional.Default(transport.DefaultStreamConfig(defaultSocketPath)),
		MaxLineBytes: defaultMaxLineBytes,
		Gymattrs:     bound.DefaultConfig(),
	}
}

// One receiver serves the three signals of a configuration: the same files feed them all.
var receivers = sharedcomponent.NewMap[*Config, *consoleReceiver]()

// get returns the configuration's shared receiver with attach applied to it (a signal's
// pipeline set). A receiver made for this call is registered only once attach succeeded: one
// that failed is not left in the map for the next signal to pick up, and holds nothing. A
// registered receiver that attach fails on stays, for the signals it already serves.
func get(set receiver.Settings, cfg *Config, attach func(*consoleReceiver) error) (*sharedcomponent.Component[*consoleReceiver], error) {
	created := false
	c, err := receivers.LoadOrStore(cfg, func() (*consoleReceiver, error) {
		created = true
		r, err := newReceiver(set, cfg)
		if err != nil {
			return nil, err
		}
		if err := attach(r); err != nil {
			r.telemetry.Shutdown()
			return nil, err
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	if !created {
		if err := attach(c.Unwrap()); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func createMetrics(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	r, err := get(set, cfg.(*Config), func(r *consoleReceiver) error { return r.setMetrics(next) })
	if err != nil {
		return nil, err // never a nil *Component in a non-nil interface
	}
	return r, nil
}

func createTraces(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	r, err := get(set, cfg.(*Config), func(r *consoleReceiver) error { r.traces = next; return nil })
	if err != nil {
		return nil, err
	}
	return r, nil
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	r, err := get(set, cfg.(*Config), func(r *consoleReceiver) error { r.logs = next; return nil })
	if err != nil {
		return nil, err
	}
	return r, nil
}
