package gymattrs

import (
	"errors"
	"fmt"
	"time"

	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
)

// What to do with a metric whose name is not in the schema (unknown_metrics).
const (
	UnknownMetricsPass = "pass" // passed on untouched (the default)
	UnknownMetricsDrop = "drop" // dropped and counted
)

// Config is the gymattrs processor's configuration (docs/processor.md).
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

	// prevent unkeyed literal initialization
	_ struct{}
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
