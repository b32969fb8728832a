package follow

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// Config is the block of keys that every source following files shares: the gym receiver's
// `files:` and `rollouts:` and gym_console's `files:` squash it into their own block
// (`mapstructure:",squash"`, as filelog squashes fileconsumer's), beside their own keys.
type Config struct {
	// Include and Exclude are globs (filepath.Match syntax) of the files to follow.
	Include []string `mapstructure:"include"`
	Exclude []string `mapstructure:"exclude"`
	// StartAt is where files found at start-up are read from: end (after their last complete
	// line) or beginning. Files that appear later, or that storage knows, ignore it.
	StartAt string `mapstructure:"start_at"`
	// PollInterval is how often the globs are matched and the files read.
	PollInterval time.Duration `mapstructure:"poll_interval"`
}

// Values of start_at.
const (
	StartAtEnd       = "end"
	StartAtBeginning = "beginning"
)

// Beginning reports whether files found at start-up are read from their beginning.
func (c *Config) Beginning() bool { return c.StartAt == StartAtBeginning }

// Check names each bad key of the block, under the block's own key (files, rollouts), and
// says why. It is not Validate: confmap's walk would call an embedded block's Validate once
// through its owner's method set and again as a field of its own, under a key that is not in
// the configuration; the owner's validation reports it, once.
func (c *Config) Check(block string) error {
	var errs []error
	if len(c.Include) == 0 {
		errs = append(errs, fmt.Errorf("%s.include: at least one glob is required", block))
	}
	for _, list := range []struct {
		key   string
		globs []string
	}{{"include", c.Include}, {"exclude", c.Exclude}} {
		for _, p := range list.globs {
			if _, err := filepath.Match(p, ""); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: bad glob %q: %w", block, list.key, p, err))
			}
		}
	}
	if c.StartAt != StartAtEnd && c.StartAt != StartAtBeginning {
		errs = append(errs, fmt.Errorf("%s.start_at: %q is not %s or %s", block, c.StartAt, StartAtEnd, StartAtBeginning))
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("%s.poll_interval: must be positive, got %s", block, c.PollInterval))
	}
	return errors.Join(errs...)
}
