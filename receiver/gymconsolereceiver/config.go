package gymconsolereceiver

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/gym-telemetry/otelcol-gym/internal/bound"
	"github.com/gym-telemetry/otelcol-gym/internal/follow"
	"github.com/gym-telemetry/otelcol-gym/internal/transport"
)

// Config is the gym_console receiver's configuration (README.md).
type Config struct {
	// Files follows Gym's log files (a server's stdout redirected to a file).
	Files configoptional.Optional[FilesConfig] `mapstructure:"files"`
	// Stream reads stdout piped into a TCP or Unix-domain socket connection.
	Stream configoptional.Optional[StreamConfig] `mapstructure:"stream"`
	// MaxLineBytes is the longest line (or pretty-printed record) read, without its newline.
	// A metrics line holds the whole cumulative state of a process.
	MaxLineBytes int `mapstructure:"max_line_bytes"`
	// Gymattrs bounds the Gym metrics: the gymattrs rules' configuration, the gymattrs
	// processor's keys and defaults.
	Gymattrs bound.Config `mapstructure:"gymattrs"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// FilesConfig is the `files:` block: Gym's log files (follow.FilesConfig, the gym receiver's
// block too). Its storage keeps the read offsets across restarts.
type FilesConfig = follow.FilesConfig

// StreamConfig is the `stream:` block: a TCP or Unix-domain socket server, one stdout per
// connection. The same block as the gym receiver's.
type StreamConfig = transport.StreamConfig

const (
	minMaxLineBytes = 4 << 10
	maxMaxLineBytes = 64 << 20
)

// Validate checks the configuration; each error names the key and says why. The gymattrs
// block validates itself.
func (cfg *Config) Validate() error {
	var errs []error
	if !cfg.Files.HasValue() && !cfg.Stream.HasValue() {
		errs = append(errs, errors.New("no source: configure files, stream or both"))
	}
	if cfg.MaxLineBytes < minMaxLineBytes || cfg.MaxLineBytes > maxMaxLineBytes {
		errs = append(errs, fmt.Errorf("max_line_bytes: must be within %d..%d, got %d", minMaxLineBytes, maxMaxLineBytes, cfg.MaxLineBytes))
	}
	if fc := cfg.Files.Get(); fc != nil {
		errs = append(errs, fc.Check())
	}
	if sc := cfg.Stream.Get(); sc != nil {
		errs = append(errs, sc.Check())
	}
	return errors.Join(errs...)
}
