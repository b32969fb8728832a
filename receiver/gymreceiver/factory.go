// Package gymreceiver turns NeMo Gym's JSON event stream (events-v1) into the metrics of the
// Gym instrument schema, aggregated per Gym process.
package gymreceiver

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/gym-telemetry/otelcol-gym/internal/follow"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
	"github.com/gym-telemetry/otelcol-gym/internal/sharedcomponent"
	"github.com/gym-telemetry/otelcol-gym/internal/transport"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadata"
)

const (
	defaultHTTPEndpoint       = "127.0.0.1:4390" // loopback by default
	defaultMaxBodyBytes       = 16 << 20
	defaultCollectionInterval = 10 * time.Second
	defaultExpireAfter        = 5 * time.Minute
	defaultMaxLineBytes       = schema.DefaultMaxLineBytes
	defaultHTTPReadTimeout    = 30 * time.Second
	defaultMaxResources       = 10000
)

// NewFactory returns the gym receiver's factory.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		createDefaultConfig,
		receiver.WithMetrics(createMetricsReceiver, metadata.MetricsStability),
		receiver.WithTraces(createTracesReceiver, metadata.TracesStability),
	)
}

func createDefaultConfig() component.Config {
	httpCfg := confighttp.NewDefaultServerConfig()
	httpCfg.NetAddr.Endpoint = defaultHTTPEndpoint
	httpCfg.MaxRequestBodySize = defaultMaxBodyBytes
	// A sender holds one of the few body slots while its body arrives: a trickling sender
	// must not hold it forever (confighttp's default is no limit).
	httpCfg.ReadTimeout = defaultHTTPReadTimeout
	return &Config{
		HTTP:               configoptional.Default(HTTPConfig{ServerConfig: httpCfg, MaxConnections: transport.DefaultMaxConnections}),
		Stream:             configoptional.Default(transport.DefaultStreamConfig("/tmp/otelcol-gym.sock")),
		Files:              configoptional.Default(follow.DefaultFilesConfig()),
		Rollouts:           configoptional.Default(RolloutsConfig{Config: follow.Config{StartAt: follow.StartAtBeginning, PollInterval: follow.DefaultPollInterval}, Traces: true}),
		CollectionInterval: defaultCollectionInterval,
		ExpireAfter:        defaultExpireAfter,
		MaxLineBytes:       defaultMaxLineBytes,
		CardinalityLimit:   schema.DefaultCardinalityLimit,
		MaxResources:       defaultMaxResources,
		DrainTimeout:       transport.DefaultDrainTimeout,
		Process: ProcessConfig{
			Enabled:            true,
			CollectionInterval: defaultCollectionInterval,
			MaxProcesses:       procstats.DefaultMaxProcesses,
		},
	}
}

// One receiver serves both signals of a configuration: the run files' rows feed the metrics
// and, with their rollout evidence, the traces.
var receivers = sharedcomponent.NewMap[*Config, *gymReceiver]()

// get returns the configuration's shared receiver with attach applied to it (a signal's
// pipeline set).
func get(set receiver.Settings, cfg *Config, attach func(*gymReceiver)) (*sharedcomponent.Component[*gymReceiver], error) {
	c, err := receivers.LoadOrStore(cfg, func() (*gymReceiver, error) { return newGymReceiver(set, cfg, nil) })
	if err != nil {
		return nil, err
	}
	attach(c.Unwrap())
	return c, nil
}

func createMetricsReceiver(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	r, err := get(set, cfg.(*Config), func(r *gymReceiver) { r.next = next })
	if err != nil {
		return nil, err // never a nil *Component in a non-nil interface
	}
	return r, nil
}

func createTracesReceiver(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	r, err := get(set, cfg.(*Config), func(r *gymReceiver) { r.traces = next })
	if err != nil {
		return nil, err
	}
	return r, nil
}
