package follow

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/component"
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

// DefaultPollInterval is every source's poll_interval by default: a line is read a fifth of a
// second after it is written, at the cost of a stat per file per poll.
const DefaultPollInterval = 200 * time.Millisecond

// Beginning reports whether files found at start-up are read from their beginning.
func (c *Config) Beginning() bool { return c.StartAt == StartAtBeginning }

// Options are the follower's options the block sets: the globs, where to start, how often.
func (c *Config) Options() Options {
	return Options{Include: c.Include, Exclude: c.Exclude, StartAtBeginning: c.Beginning(), PollInterval: c.PollInterval}
}

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

// FilesConfig is the `files:` block of a source that follows files of lines (the gym
// receiver's, gym_console's): the shared keys (Config: include, exclude, start_at,
// poll_interval) and its own.
type FilesConfig struct {
	Config `mapstructure:",squash"`
	// MaxFiles bounds the files followed at once.
	MaxFiles int `mapstructure:"max_files"`
	// Storage names a storage extension (file_storage) that keeps the read offsets across
	// restarts (in the gym receiver, the older spelling of its `storage`: the same checkpoint).
	Storage *component.ID `mapstructure:"storage"`
}

// DefaultMaxFiles bounds the files followed at once by default: a node's Gym processes each
// write one or two.
const DefaultMaxFiles = 1024

// DefaultFilesConfig is the block's defaults: new files from their end, every 200ms, at most
// DefaultMaxFiles.
func DefaultFilesConfig() FilesConfig {
	return FilesConfig{Config: Config{StartAt: StartAtEnd, PollInterval: DefaultPollInterval}, MaxFiles: DefaultMaxFiles}
}

// Options are Config.Options with the bound on files followed at once.
func (c *FilesConfig) Options() Options {
	o := c.Config.Options()
	o.MaxFiles = c.MaxFiles
	return o
}

// Check is Config.Check with the block's own keys, under the key `files`. (Not Validate: see
// Config.Check.)
func (fc *FilesConfig) Check() error {
	errs := []error{fc.Config.Check("files")}
	if fc.MaxFiles < 1 {
		errs = append(errs, fmt.Errorf("files.max_files: must be at least 1, got %d", fc.MaxFiles))
	}
	return errors.Join(errs...)
}
