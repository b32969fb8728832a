package gymrollouts

import (
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/gym-telemetry/otelcol-gym/internal/flight"
)

// Config is the gymrollouts connector's configuration (docs/connector.md).
type Config struct {
	// CollectionInterval: how often the metrics and the log records are written.
	CollectionInterval time.Duration `mapstructure:"collection_interval"`
	// Storage names a storage extension (e.g. file_storage) that keeps the rollouts across
	// a restart; none by default (the set is rebuilt from the next spans).
	Storage       *component.ID `mapstructure:"storage"`
	flight.Config `mapstructure:",squash"`
}

func createDefaultConfig() *Config {
	return &Config{CollectionInterval: 15 * time.Second, Config: flight.DefaultConfig()}
}

// Validate names the key of a bad value.
func (c *Config) Validate() error {
	var errs []error
	if c.CollectionInterval <= 0 {
		errs = append(errs, errors.New("collection_interval must be positive"))
	}
	return errors.Join(append(errs, c.Config.Validate())...)
}
