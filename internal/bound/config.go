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
	UnknownMetricsPass = "pass" // passed on untouched (the default)
	UnknownMetricsDrop = "drop" // dropped and counted
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

	// UnknownMetrics: "pass" (default) or "drop" for metrics whose name is not in the schema.
	UnknownMetrics string `mapstructure:"unknown_metrics"`

	// SeriesIdleTimeout: a series (and a stream folded into one) that receives no point for
	// this long is forgotten: its admission slot is freed and its cumulative state dropped.
	SeriesIdleTimeout time.Duration `mapstructure:"series_idle_timeout"`

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
// passed on, a 10-minute idle timeout.
func DefaultConfig() Config {
	return Config{
		CardinalityLimit:  schema.DefaultCardinalityLimit,
		UnknownMetrics:    UnknownMetricsPass,
		SeriesIdleTimeout: defaultSeriesIdleTimeout,

		InstancePerProcess: true, // an instance id per process (instance.go)
	}
}

// minIdleTimeout keeps the state sweeps (every quarter of the timeout) cheap.
const minIdleTimeout = time.Second

// Validate checks the configuration; each error names the key and says why.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.CardinalityLimit < 2 {
		errs = append(errs, fmt.Errorf("cardinality_limit: must be at least 2 (one series and the overflow series), got %d", cfg.CardinalityLimit))
	}
	if _, err := normalize.NewRegistry(cfg.FailureKinds, cfg.HealthChecks, cfg.IgnoredHealthChecks); err != nil {
		errs = append(errs, err)
	}
	switch cfg.UnknownMetrics {
	case UnknownMetricsPass, UnknownMetricsDrop:
	default:
		errs = append(errs, fmt.Errorf("unknown_metrics: must be %q or %q, got %q", UnknownMetricsPass, UnknownMetricsDrop, cfg.UnknownMetrics))
	}
	if cfg.SeriesIdleTimeout < minIdleTimeout {
		errs = append(errs, fmt.Errorf("series_idle_timeout: must be at least %s, got %s", minIdleTimeout, cfg.SeriesIdleTimeout))
	}
	return errors.Join(errs...)
}
