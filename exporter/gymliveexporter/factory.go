// Package gymliveexporter is the gymlive exporter: in a metrics pipeline beside the prometheus
// exporter, it keeps the points it exports (bounded) and serves them as a live page and a
// JSON API. The engine is internal/live; this package wires it to the pipeline and to the
// collector's HTTP server settings. See docs/live.md.
package gymliveexporter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

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

func createMetrics(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Metrics, error) {
	e := newLiveExporter(set, cfg.(*Config))
	// No queue, no retry, no timeout: Consume copies the batch under a short lock and returns.
	return exporterhelper.NewMetrics(ctx, set, cfg, e.consume,
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
	)
}
