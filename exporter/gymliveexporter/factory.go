// Package gymliveexporter is the gymlive exporter: in a metrics pipeline beside the prometheus
// exporter, it keeps the points it exports (bounded) and serves them as a live page and a
// JSON API. The engine is internal/live; this package wires it to the pipeline and to the
// collector's HTTP server settings. See docs/live.md.
package gymliveexporter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"

	"github.com/gym-telemetry/otelcol-gym/exporter/gymliveexporter/internal/metadata"
)

// NewFactory returns the gymlive exporter's factory.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		exporter.WithMetrics(createMetrics, metadata.MetricsStability),
	)
}

// createMetrics returns the exporter itself, without exporterhelper: it has no queue, retry or
// timeout to give (a batch is copied under a short lock), and it sends nothing, so it adds no
// otelcol_exporter_* counts beside those of the exporters that do send.
func createMetrics(_ context.Context, set exporter.Settings, cfg component.Config) (exporter.Metrics, error) {
	return newLiveExporter(set, cfg.(*Config))
}
