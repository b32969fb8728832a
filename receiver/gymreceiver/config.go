package gymreceiver

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/gym-telemetry/otelcol-gym/internal/follow"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/prices"
	"github.com/gym-telemetry/otelcol-gym/internal/procstats"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
	"github.com/gym-telemetry/otelcol-gym/internal/transport"
)

// Config is the gym receiver's configuration: exactly the keys of docs/receiver.md.
type Config struct {
	// HTTP serves POST /v1/events; on only when the block is present.
	HTTP configoptional.Optional[HTTPConfig] `mapstructure:"http"`
	// Stream reads lines from TCP or Unix-domain socket connections.
	Stream configoptional.Optional[StreamConfig] `mapstructure:"stream"`
	// Files tails files of events.
	Files configoptional.Optional[FilesConfig] `mapstructure:"files"`
	// Rollouts follows the files a Gym rollout collection writes (no instrumentation needed).
	Rollouts configoptional.Optional[RolloutsConfig] `mapstructure:"rollouts"`

	// CollectionInterval is how often the aggregated metrics are sent on.
	CollectionInterval time.Duration `mapstructure:"collection_interval"`
	// ExpireAfter: a resource idle this long is exported once more, then dropped.
	ExpireAfter time.Duration `mapstructure:"expire_after"`
	// MaxLineBytes is the longest line accepted, without its newline.
	MaxLineBytes int `mapstructure:"max_line_bytes"`
	// CardinalityLimit is the most series per instrument per resource, overflow included.
	CardinalityLimit int `mapstructure:"cardinality_limit"`
	// MaxResources is the most resources (Gym processes) held at once.
	MaxResources int `mapstructure:"max_resources"`
	// DrainTimeout bounds how long Shutdown reads what senders still have in flight (HTTP
	// bodies, stream connections) before it closes them and sends the last export.
	DrainTimeout time.Duration `mapstructure:"drain_timeout"`

	FailureKinds        []string `mapstructure:"failure_kinds"`
	HealthChecks        []string `mapstructure:"health_checks"`
	IgnoredHealthChecks []string `mapstructure:"ignored_health_checks"`

	// Process reads host process stats of the Gym processes the stream names.
	Process ProcessConfig `mapstructure:"process"`

	// Prices is the path of the user's price table (internal/prices: USD per million tokens by
	// model), exported as gym.token.price_per_million every collection; "": no prices, no
	// price series. Read at start: a table that cannot be read stops the collector.
	Prices string `mapstructure:"prices"`

	// Storage names a storage extension (e.g. file_storage) that keeps the aggregation state
	// and the files' offsets across restarts: one checkpoint per collection, saved before its
	// export, and one at shutdown.
	Storage *component.ID `mapstructure:"storage"`
	// CheckpointBeforeAnswer answers an HTTP body only once a checkpoint that holds it is
	// saved (per-request durability, at the cost of a checkpoint per answer; requires storage).
	CheckpointBeforeAnswer bool `mapstructure:"checkpoint_before_answer"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// HTTPConfig is the `http:` block: confighttp's server settings and a bound on connections.
type HTTPConfig struct {
	confighttp.ServerConfig `mapstructure:",squash"`
	// MaxConnections bounds the connections served at once; the ones over it wait in the
	// listen backlog until one closes, and are counted.
	MaxConnections int `mapstructure:"max_connections"`
}

// StreamConfig is the `stream:` block: a TCP or Unix-domain socket server.
type StreamConfig = transport.StreamConfig

// FilesConfig is the `files:` block: files of events lines (follow.FilesConfig, the block
// gym_console has too). Its storage is the older spelling of the receiver's `storage`.
type FilesConfig = follow.FilesConfig

// RolloutsConfig is the `rollouts:` block: the main outputs of Gym rollout collections
// (`gym eval run --output DIR/STEM.jsonl`), their failures sidecars and health reports. Its
// include and exclude globs name main output files: the sidecar STEM_failures.jsonl and the
// report rollout_verdicts.jsonl beside each are found by the receiver, and Gym's other files
// are never read as main outputs.
type RolloutsConfig struct {
	follow.Config `mapstructure:",squash"`
	// MaxLineBytes is the longest row accepted, without its newline; 0: no limit (rows are
	// streamed, never held whole, so a long row costs no memory).
	MaxLineBytes int64 `mapstructure:"max_line_bytes"`
	// Storage is a spelling of the receiver's `storage` in this block: the same checkpoint,
	// which holds the aggregated state and the offsets of every source, these files' included.
	Storage *component.ID `mapstructure:"storage"`
	// Traces makes each main-output row with rollout evidence one trace, for the receiver's
	// traces pipelines (on by default; nothing is made when no traces pipeline has the
	// receiver).
	Traces bool `mapstructure:"traces"`
}

func (rc *RolloutsConfig) validate() error {
	errs := []error{rc.Check("rollouts")}
	if rc.MaxLineBytes < 0 {
		errs = append(errs, fmt.Errorf("rollouts.max_line_bytes: must be 0 (no limit) or positive, got %d", rc.MaxLineBytes))
	}
	return errors.Join(errs...)
}

// ProcessConfig is the `process:` block: host process stats of Gym processes.
type ProcessConfig struct {
	// Enabled reads each process.pid that a resource line announces on this host.
	Enabled bool `mapstructure:"enabled"`
	// CollectionInterval is how often the processes are read.
	CollectionInterval time.Duration `mapstructure:"collection_interval"`
	// Include reads, besides the announced pids, processes matching any rule (by executable
	// name, or by a regular expression over the command line), each under a resource of its own.
	Include []procstats.IncludeRule `mapstructure:"include"`
	// IncludeSelf reads the collector's own process too.
	IncludeSelf bool `mapstructure:"include_self"`
	// MaxProcesses bounds the processes one scrape reads.
	MaxProcesses int `mapstructure:"max_processes"`
}

func (pc *ProcessConfig) validate() error {
	if !pc.Enabled {
		return nil
	}
	var errs []error
	if pc.CollectionInterval <= 0 {
		errs = append(errs, fmt.Errorf("process.collection_interval: must be positive, got %s", pc.CollectionInterval))
	}
	if pc.MaxProcesses < 1 {
		errs = append(errs, fmt.Errorf("process.max_processes: must be at least 1, got %d", pc.MaxProcesses))
	}
	for i, r := range pc.Include {
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("process.include[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

const (
	minMaxLineBytes = 256
	maxMaxLineBytes = 16 << 20
)

// Validate checks the configuration; each error names the key and says why.
func (cfg *Config) Validate() error {
	var errs []error
	if !cfg.HTTP.HasValue() && !cfg.Stream.HasValue() && !cfg.Files.HasValue() && !cfg.Rollouts.HasValue() && cfg.Prices == "" {
		errs = append(errs, errors.New("no transport: configure at least one of http, stream, files or rollouts (or prices alone)"))
	}
	if cfg.Prices != "" {
		if _, err := prices.Load(cfg.Prices); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.CollectionInterval <= 0 {
		errs = append(errs, fmt.Errorf("collection_interval: must be positive, got %s", cfg.CollectionInterval))
	}
	if cfg.ExpireAfter <= 0 {
		errs = append(errs, fmt.Errorf("expire_after: must be positive, got %s", cfg.ExpireAfter))
	} else if cfg.CollectionInterval > 0 && cfg.ExpireAfter < cfg.CollectionInterval {
		errs = append(errs, fmt.Errorf("expire_after: %s is shorter than collection_interval %s: every resource would be dropped at each collection", cfg.ExpireAfter, cfg.CollectionInterval))
	}
	if cfg.MaxLineBytes < minMaxLineBytes || cfg.MaxLineBytes > maxMaxLineBytes {
		errs = append(errs, fmt.Errorf("max_line_bytes: must be within %d..%d, got %d", minMaxLineBytes, maxMaxLineBytes, cfg.MaxLineBytes))
	}
	if err := schema.CheckCardinalityLimit(cfg.CardinalityLimit); err != nil {
		errs = append(errs, err)
	}
	if cfg.DrainTimeout <= 0 {
		errs = append(errs, fmt.Errorf("drain_timeout: must be positive, got %s", cfg.DrainTimeout))
	}
	if cfg.MaxResources < 1 {
		errs = append(errs, fmt.Errorf("max_resources: must be at least 1, got %d", cfg.MaxResources))
	}
	if _, err := normalize.NewRegistry(cfg.FailureKinds, cfg.HealthChecks, cfg.IgnoredHealthChecks); err != nil {
		errs = append(errs, err)
	}
	if h := cfg.HTTP.Get(); h != nil {
		if h.MaxRequestBodySize <= 0 {
			errs = append(errs, fmt.Errorf("http.max_request_body_size: must be positive, got %d", h.MaxRequestBodySize))
		}
		if h.MaxConnections < 1 {
			errs = append(errs, fmt.Errorf("http.max_connections: must be at least 1, got %d", h.MaxConnections))
		}
	}
	if sc := cfg.Stream.Get(); sc != nil {
		if err := sc.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	if fc := cfg.Files.Get(); fc != nil {
		if err := fc.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	if rc := cfg.Rollouts.Get(); rc != nil {
		if err := rc.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := cfg.Process.validate(); err != nil {
		errs = append(errs, err)
	}
	if fc := cfg.Files.Get(); fc != nil && fc.Storage != nil && cfg.Storage != nil && *fc.Storage != *cfg.Storage {
		errs = append(errs, fmt.Errorf("files.storage: %q differs from storage %q; files.storage is the older spelling of storage: set only storage", fc.Storage, cfg.Storage))
	}
	// One checkpoint holds the state and every source's offsets: the spellings name one extension.
	if rc := cfg.Rollouts.Get(); rc != nil && rc.Storage != nil {
		if id := cfg.storageID(); *id != *rc.Storage {
			errs = append(errs, fmt.Errorf("rollouts.storage: %q differs from %q; the receiver keeps one checkpoint (its state and every source's offsets): set only storage", rc.Storage, id))
		}
	}
	if cfg.CheckpointBeforeAnswer && cfg.storageID() == nil {
		errs = append(errs, errors.New("checkpoint_before_answer: requires storage (a storage extension to save the checkpoints in)"))
	}
	return errors.Join(errs...)
}

// storageID is the storage extension of the checkpoints: storage, or its block spellings
// files.storage and rollouts.storage; nil for none.
func (cfg *Config) storageID() *component.ID {
	id, _ := cfg.storageKey()
	return id
}

// storageKey is storageID and the key that names it, for errors.
func (cfg *Config) storageKey() (*component.ID, string) {
	if cfg.Storage != nil {
		return cfg.Storage, "storage"
	}
	if fc := cfg.Files.Get(); fc != nil && fc.Storage != nil {
		return fc.Storage, "files.storage"
	}
	if rc := cfg.Rollouts.Get(); rc != nil && rc.Storage != nil {
		return rc.Storage, "rollouts.storage"
	}
	return nil, ""
}
