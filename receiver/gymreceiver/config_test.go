package gymreceiver

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/configtest"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadata"
)

// loadConfig is the block metadata.Type/name of testdata/config.yaml over the defaults.
func loadConfig(t *testing.T, name string) (*Config, error) {
	return configtest.Load(t, metadata.Type, name, createDefaultConfig().(*Config))
}

func TestDefaultConfig(t *testing.T) {
	cfg, err := loadConfig(t, "")
	require.NoError(t, err)
	require.True(t, cfg.HTTP.HasValue())
	assert.Equal(t, "127.0.0.1:4390", cfg.HTTP.Get().NetAddr.Endpoint, "loopback by default")
	assert.Equal(t, int64(16<<20), cfg.HTTP.Get().MaxRequestBodySize)
	assert.Equal(t, 1024, cfg.HTTP.Get().MaxConnections)
	assert.False(t, cfg.Stream.HasValue(), "a transport is on only when its block is present")
	assert.False(t, cfg.Files.HasValue())
	assert.Equal(t, 10*time.Second, cfg.CollectionInterval)
	assert.Equal(t, 5*time.Minute, cfg.ExpireAfter)
	assert.Equal(t, 65536, cfg.MaxLineBytes)
	assert.Equal(t, 2000, cfg.CardinalityLimit)
	assert.Equal(t, 10000, cfg.MaxResources)
	assert.True(t, cfg.Process.Enabled, "reads the pids that resource lines announce on this host")
	assert.Equal(t, 1000, cfg.Process.MaxProcesses)
}

func TestCustomConfig(t *testing.T) {
	cfg, err := loadConfig(t, "custom")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:4999", cfg.HTTP.Get().NetAddr.Endpoint)
	assert.Equal(t, int64(1<<20), cfg.HTTP.Get().MaxRequestBodySize)
	assert.Equal(t, 64, cfg.HTTP.Get().MaxConnections)
	assert.Equal(t, 30*time.Second, cfg.CollectionInterval)
	assert.Equal(t, 10*time.Minute, cfg.ExpireAfter)
	assert.Equal(t, 4096, cfg.MaxLineBytes)
	assert.Equal(t, 500, cfg.CardinalityLimit)
	assert.Equal(t, 50, cfg.MaxResources)
	assert.Equal(t, []string{"lab_quirk"}, cfg.FailureKinds)
	assert.Equal(t, []string{"lab_check"}, cfg.HealthChecks)
	assert.Equal(t, []string{"agent_turn_hollow"}, cfg.IgnoredHealthChecks)
	assert.Equal(t, 20*time.Second, cfg.Process.CollectionInterval)
}

func TestStreamConfig(t *testing.T) {
	cfg, err := loadConfig(t, "stream_unix")
	require.NoError(t, err)
	require.True(t, cfg.Stream.HasValue())
	assert.False(t, cfg.HTTP.HasValue())
	mode, err := cfg.Stream.Get().Mode()
	require.NoError(t, err)
	assert.Equal(t, 0o660, int(mode))
	assert.Equal(t, 16, cfg.Stream.Get().MaxConnections)
	assert.Equal(t, time.Minute, cfg.Stream.Get().IdleTimeout)
	assert.Equal(t, 2*time.Second, cfg.DrainTimeout)
	def, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.Equal(t, "0600", def.Stream.GetOrInsertDefault().SocketMode, "0600 by default")
	assert.Equal(t, 1024, def.Stream.GetOrInsertDefault().MaxConnections)
	assert.Equal(t, 5*time.Minute, def.Stream.GetOrInsertDefault().IdleTimeout)
	assert.Equal(t, 5*time.Second, def.DrainTimeout)
}

func TestFilesConfig(t *testing.T) {
	cfg, err := loadConfig(t, "files")
	require.NoError(t, err)
	fc := cfg.Files.Get()
	require.NotNil(t, fc)
	assert.Equal(t, []string{"/var/log/gym/*.events.jsonl"}, fc.Include)
	assert.Equal(t, []string{"/var/log/gym/old-*"}, fc.Exclude)
	assert.Equal(t, "beginning", fc.StartAt)
	assert.Equal(t, 200*time.Millisecond, fc.PollInterval)
	assert.Equal(t, 1024, fc.MaxFiles)
	require.NotNil(t, fc.Storage)
	assert.Equal(t, "file_storage", fc.Storage.String())

	_, err = loadConfig(t, "bad_files")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "files.include: bad glob")
}

// storage keeps the checkpoint; files.storage, its older spelling, names the same one.
func TestStorageConfig(t *testing.T) {
	cfg, err := loadConfig(t, "storage")
	require.NoError(t, err)
	require.NotNil(t, cfg.Storage)
	assert.Equal(t, "file_storage", cfg.storageID().String())
	assert.True(t, cfg.CheckpointBeforeAnswer)
	old, err := loadConfig(t, "files")
	require.NoError(t, err)
	assert.Nil(t, old.Storage)
	assert.Equal(t, "file_storage", old.storageID().String(), "files.storage alone: the checkpoint's storage")
	def, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.Nil(t, def.storageID(), "no storage by default")
	assert.False(t, def.CheckpointBeforeAnswer)
}

// Each bad configuration is refused with a message that names the key.
func TestInvalidConfig(t *testing.T) {
	for name, want := range map[string]string{
		"bad_interval":                 "collection_interval",
		"bad_limit":                    "cardinality_limit",
		"bad_line":                     "max_line_bytes",
		"no_transport":                 "no transport",
		"bad_kind":                     "failure_kinds",
		"unknown_key":                  "colection_interval",
		"bad_stream_transport":         "stream.transport",
		"bad_stream_endpoint":          "stream.endpoint",
		"bad_socket_mode":              "stream.socket_mode",
		"bad_max_connections":          "stream.max_connections",
		"bad_http_max_connections":     "http.max_connections",
		"bad_drain_timeout":            "drain_timeout",
		"bad_files":                    "files.start_at",
		"bad_max_resources":            "max_resources",
		"storage_alias_differs":        "files.storage",
		"bad_checkpoint_before_answer": "checkpoint_before_answer: requires storage",
		"bad_prices":                   `prices: testdata/prices-bad.yaml: models: "model-a": input: -1 is not a price`,
		"missing_prices":               "prices: open testdata/no-such-prices.yaml: no such file",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}

func TestRolloutsConfig(t *testing.T) {
	cfg, err := loadConfig(t, "rollouts")
	require.NoError(t, err)
	assert.False(t, cfg.HTTP.HasValue(), "rollouts alone is a transport")
	rc := cfg.Rollouts.Get()
	require.NotNil(t, rc)
	assert.Equal(t, []string{"/results/*.jsonl"}, rc.Include)
	assert.Equal(t, []string{"/results/scratch-*"}, rc.Exclude)
	assert.Equal(t, "end", rc.StartAt)
	assert.Equal(t, time.Second, rc.PollInterval)
	assert.Equal(t, int64(256<<20), rc.MaxLineBytes)
	require.NotNil(t, rc.Storage)
	assert.Equal(t, "file_storage", rc.Storage.String())

	def, err := loadConfig(t, "rollouts_defaults")
	require.NoError(t, err)
	rc = def.Rollouts.Get()
	assert.Equal(t, "beginning", rc.StartAt)
	assert.Equal(t, 200*time.Millisecond, rc.PollInterval)
	assert.Zero(t, rc.MaxLineBytes, "no limit by default: rows are streamed")
	assert.Nil(t, rc.Storage)
	assert.True(t, rc.Traces, "a row with rollout evidence is a trace by default")

	off, err := loadConfig(t, "rollouts_no_traces")
	require.NoError(t, err)
	assert.False(t, off.Rollouts.Get().Traces)
	assert.Equal(t, []string{"/results/*.jsonl"}, off.Rollouts.Get().Include)

	none, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.False(t, none.Rollouts.HasValue(), "on only when the block is present")
}

// Every bad key of the rollouts block is named, with why.
func TestRolloutsConfigInvalid(t *testing.T) {
	_, err := loadConfig(t, "bad_rollouts")
	require.Error(t, err)
	for _, want := range []string{
		`rollouts.include: bad glob "/results/[x"`,
		`rollouts.exclude: bad glob "/results/[y"`,
		`rollouts.start_at: "middle" is not end or beginning`,
		"rollouts.poll_interval: must be positive, got 0s",
		"rollouts.max_line_bytes: must be 0 (no limit) or positive, got -1",
	} {
		// once: the shared block (follow.Config) is checked by its owner only, not a second
		// time by confmap's walk of the squashed field
		assert.Equal(t, 1, strings.Count(err.Error(), want), "%q in %v", want, err)
	}
	_, err = loadConfig(t, "rollouts_no_include")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rollouts.include: at least one glob")
}
