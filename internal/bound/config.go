// Package bound is the engine of the gymattrs rules: it bounds metrics (pdata in, pdata out) to
// the Gym instrument schema (the top-level metadata.yaml, seen through internal/schema) with the
// normalisation rules the gym receiver uses (internal/normalize), keeping the series state
// across batches: the cardinality limit and its overflow series, merges, cumulative streams.
// The gymattrs processor and the gym_console receiver are its shells. See docs/processor.md.
package bound

import (
	"errors"
	"fmt"
	"time"

	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// What to do with a metric whose name is not in the schema (unknown_metrics).
const (
	UnknownMetricsPass  = "pass"  // passed on untouched: unbounded, the user's choice
	UnknownMetricsDrop  = "drop"  // dropped and counted
	UnknownMetricsBound = "bound" // bounded by the generic rules (unknown.go): the default
)

// Config is the configuration of the gymattrs rules (docs/processor.md): the gymattrs
// processor's, and the gym_console receiver's `gymattrs:` block.
type Config struct {
	// CardinalityLimit is the most series an instrument keeps per resource, the overflow
	// series included (default: the schema's default_cardinality_limit).
	CardinalityLimit int `mapstructure:"cardinality_limit"`

	// FailureKinds and HealthChecks are registered in addition to Gym's own; points whose
	// raw nemo.gym.health.check is in IgnoredHealthChecks are dropped (never counted as
	// flagged), as the receiver never counts an ignored check.
	FailureKinds        []string `mapstructure:"failure_kinds"`
	HealthChecks        []string `mapstructure:"health_checks"`
	IgnoredHealthChecks []string `mapstructure:"ignored_health_checks"`

	// UnknownMetrics: "bound" (default), "pass" or "drop" for metrics whose name is not in the
	// schema; "bound" and "drop" bound schema metrics the schema does not accept as sent too.
	UnknownMetrics string `mapstructure:"unknown_metrics"`

	// SeriesIdleTimeout: a series (and a stream folded into one) that receives no point for
	// this long is forgotten: its admission slot is freed and its cumulative state dropped.
	SeriesIdleTimeout time.Duration `mapstructure:"series_idle_timeout"`

	// GenAIConventions also exports Gym's model calls as the OpenTelemetry GenAI client
	// metrics (semantic conventions v1.41.0), derived from the bounded gym.model_call.* points
	// (genai.go; docs/gym.md, "GenAI conventions"). Off by default.
	GenAIConventions bool `mapstructure:"genai_conventions"`

	// InstancePerProcess: a resource with a process.pid gets a service.instance.id of its
	// own process, <id>-pid<pid> (instance.go), so two processes never share job and instance.
	InstancePerProcess bool `mapstructure:"instance_per_process"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// defaultSeriesIdleTimeout is twice the gym receiver's expire_after (5m) and ten export
// intervals of an OpenTelemetry SDK's default periodic reader (60s): a live series is never
// forgotten, a dead one stops holding memory and its admission slot.
const defaultSeriesIdleTimeout = 10 * time.Minute

// DefaultConfig returns the defaults: the schema's default_cardinality_limit, unknown metrics
// bounded by the generic rules, a 10-minute idle timeout.
func DefaultConfig() Config {
	return Config{
		CardinalityLimit:  schema.DefaultCardinalityLimit,
		UnknownMetrics:    UnknownMetricsBound,
		SeriesIdleTimeout: defaultSeriesIdleTimeout,

		InstancePerProcess: true, // an instance id per process (instance.go)
	}
}

// minIdleTimeout keeps the state sweeps (every quarter of the timeout) cheap.
const minIdleTimeout = time.Second

// Validate checks the configuration; each error names the key and says why.
func (cfg *Config) Validate() error {
	var errs []error
	if err := schema.CheckCardinalityLimit(cfg.CardinalityLimit); err != nil {
		errs = append(errs, err)
	}
	if _, err := normalize.NewRegistry(cfg.FailureKinds, cfg.HealthChecks, cfg.IgnoredHealthChecks); err != nil {
		errs = append(errs, err)
	}
	switch cfg.UnknownMetrics {
	case UnknownMetricsBound, UnknownMetricsPass, UnknownMetricsDrop:
	default:
		errs = append(errs, fmt.Errorf("unknown_metrics: must be %q, %q or %q, got %q", UnknownMetricsBound, UnknownMetricsPass, UnknownMetricsDrop, cfg.UnknownMetrics))
	}
	if cfg.SeriesIdleTimeout < minIdleTimeout {
		errs = append(errs, fmt.Errorf("series_idle_timeout: must be at least %s, got %s", minIdleTimeout, cfg.SeriesIdleTimeout))
	}
	return errors.Join(errs...)
}
