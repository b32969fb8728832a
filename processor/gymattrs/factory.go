// Package gymattrs is the attribute-bounding processor: it bounds any metrics pipeline to the
// Gym instrument schema with the gymattrs rules (internal/bound, the engine it wraps), which
// report through the processor's telemetry settings (internal/bound's metadata.yaml). See
// docs/processor.md.
package gymattrs

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/gym-telemetry/otelcol-gym/internal/bound"
	"github.com/gym-telemetry/otelcol-gym/processor/gymattrs/internal/metadata"
)

// NewFactory returns the gymattrs processor's factory.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithMetrics(createMetricsProcessor, metadata.MetricsStability),
		processor.WithTraces(createTracesProcessor, metadata.TracesStability),
		processor.WithLogs(createLogsProcessor, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	cfg := bound.DefaultConfig()
	return &cfg
}

func createMetricsProcessor(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
	b, err := bound.New(cfg.(*Config), set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewMetrics(ctx, set, cfg, next, b.Process,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithShutdown(func(context.Context) error { b.Shutdown(); return nil }),
	)
}

// In a traces or logs pipeline gymattrs bounds the resources only (docs/processor.md,
// "Resource attributes"): spans and log records have no schema of their own here.
func createTracesProcessor(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	b, err := bound.New(cfg.(*Config), set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewTraces(ctx, set, cfg, next, func(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
		b.BoundResources(ctx, func(yield func(pcommon.Resource) bool) {
			for _, rs := range td.ResourceSpans().All() {
				if !yield(rs.Resource()) {
					return
				}
			}
		})
		return td, nil
	}, processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithShutdown(func(context.Context) error { b.Shutdown(); return nil }))
}

func createLogsProcessor(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	b, err := bound.New(cfg.(*Config), set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewLogs(ctx, set, cfg, next, func(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
		b.BoundResources(ctx, func(yield func(pcommon.Resource) bool) {
			for _, rl := range ld.ResourceLogs().All() {
				if !yield(rl.Resource()) {
					return
				}
			}
		})
		return ld, nil
	}, processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithShutdown(func(context.Context) error { b.Shutdown(); return nil }))
}
