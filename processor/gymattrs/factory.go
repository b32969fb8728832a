// Package gymattrs is the attribute-bounding processor: it bounds any metrics pipeline to the
// Gym instrument schema (the top-level metadata.yaml, seen through internal/schema) with the
// normalisation rules the gym receiver uses (internal/normalize). See docs/processor.md.
package gymattrs

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
	"github.com/gym-telemetry/otelcol-gym/processor/gymattrs/internal/metadata"
)

// defaultSeriesIdleTimeout is twice the gym receiver's expire_after (5m) and ten export
// intervals of an OpenTelemetry SDK's default periodic reader (60s): a live series is never
// forgotten, a dead one stops holding memory and its admission slot.
const defaultSeriesIdleTimeout = 10 * time.Minute

// NewFactory returns the gymattrs processor's factory.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithMetrics(createMetricsProcessor, metadata.MetricsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		CardinalityLimit:  schema.DefaultCardinalityLimit,
		UnknownMetrics:    UnknownMetricsPass,
		SeriesIdleTimeout: defaultSeriesIdleTimeout,
	}
}

func createMetricsProcessor(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
	p, err := newProcessor(set, cfg.(*Config))
	if err != nil {
		return nil, err
	}
	return processorhelper.NewMetrics(ctx, set, cfg, next, p.processMetrics,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithShutdown(p.shutdown),
	)
}
