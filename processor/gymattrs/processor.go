package gymattrs

import (
	"context"

	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/bound"
	"github.com/gym-telemetry/otelcol-gym/processor/gymattrs/internal/metadata"
)

// gymattrsProcessor is the engine with the processor's own telemetry.
type gymattrsProcessor struct {
	tb      *metadata.TelemetryBuilder
	bounder *bound.Bounder
}

func newProcessor(set processor.Settings, cfg *Config) (*gymattrsProcessor, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	b, err := bound.New(cfg, telemetry(tb, set.Logger))
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	return &gymattrsProcessor{tb: tb, bounder: b}, nil
}

// telemetry hands the engine the instruments of metadata.yaml and the processor's logger.
func telemetry(tb *metadata.TelemetryBuilder, logger *zap.Logger) bound.Telemetry {
	return bound.Telemetry{
		AttributesRemoved: tb.ProcessorGymattrsAttributesRemoved,
		ValuesNormalised:  tb.ProcessorGymattrsValuesNormalised,
		PointsMerged:      tb.ProcessorGymattrsPointsMerged,
		PointsOverflowed:  tb.ProcessorGymattrsPointsOverflowed,
		PointsMismatched:  tb.ProcessorGymattrsPointsMismatched,
		PointsUnmerged:    tb.ProcessorGymattrsPointsUnmerged,
		PointsDropped:     tb.ProcessorGymattrsPointsDropped,
		StateEntries:      tb.ProcessorGymattrsStateEntries,

		UnknownPoints:         tb.ProcessorGymattrsUnknownPoints,
		HistogramBoundsDiffer: tb.ProcessorGymattrsHistogramBoundsDiffer,
		Logger:                logger,
	}
}

func (p *gymattrsProcessor) shutdown(context.Context) error {
	p.tb.Shutdown()
	return nil
}
