package gymconsolereceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/configtest"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymconsolereceiver/internal/metadata"
)

// loadConfig is the block metadata.Type/name of testdata/config.yaml over the defaults.
func loadConfig(t *testing.T, name string) (*Config, error) {
	return configtest.Load(t, metadata.Type, name, createDefaultConfig().(*Config))
}

func TestDefaultConfig(t *testing.T) {
	cfg, err := loadConfig(t, "")
	require.NoError(t, err)
	require.True(t, cfg.Files.HasValue())
	fc := cfg.Files.Get()
	assert.Equal(t, []string{"/var/log/gym/*.log"}, fc.Include)
	assert.Equal(t, "end", fc.StartAt)
	assert.Equal(t, 200*time.Millisecond, fc.PollInterval)
	assert.Equal(t, 1024, fc.MaxFiles)
	assert.Nil(t, fc.Storage)
	assert.False(t, cfg.Stream.HasValue(), "a source is on only when its block is present")
	assert.Equal(t, 1<<20, cfg.MaxLineBytes)
	assert.Equal(t, 2000, cfg.Gymattrs.CardinalityLimit, "gymattrs' own defaults")
	assert.Equal(t, "bound", cfg.Gymattrs.UnknownMetrics)
	assert.Equal(t, 10*time.Minute, cfg.Gymattrs.SeriesIdleTimeout)
}

func TestCustomConfig(t *testing.T) {
	cfg, err := loadConfig(t, "custom")
	require.NoError(t, err)
	fc := cfg.Files.Get()
	assert.Equal(t, []string{"/var/log/gym/*/stdout.log", "/var/log/gym/*.out"}, fc.Include)
	assert.Equal(t, []string{"/var/log/gym/old/*"}, fc.Exclude)
	assert.Equal(t, "beginning", fc.StartAt)
	assert.Equal(t, time.Second, fc.PollInterval)
	assert.Equal(t, 64, fc.MaxFiles)
	assert.Equal(t, "file_storage", fc.Storage.String())
	sc := cfg.Stream.Get()
	require.NotNil(t, sc)
	assert.Equal(t, "tcp", string(sc.Transport))
	assert.Equal(t, "127.0.0.1:4391", sc.Endpoint)
	assert.Equal(t, 1<<20, cfg.MaxLineBytes)
	assert.Equal(t, 500, cfg.Gymattrs.CardinalityLimit)
	assert.Equal(t, []string{"lab_quirk"}, cfg.Gymattrs.FailureKinds)
	assert.Equal(t, "drop", cfg.Gymattrs.UnknownMetrics)
}

func TestDefaultSocket(t *testing.T) {
	cfg, err := loadConfig(t, "socket")
	require.NoError(t, err)
	assert.False(t, cfg.Files.HasValue())
	assert.Equal(t, "unix", string(cfg.Stream.Get().Transport))
	assert.Equal(t, defaultSocketPath, cfg.Stream.Get().Endpoint, "the stream's defaults, once the block is present")
	assert.Equal(t, "0600", cfg.Stream.Get().SocketMode)
	assert.Equal(t, 1024, cfg.Stream.Get().MaxConnections, "the stream is bounded like the gym receiver's")
	assert.Equal(t, 5*time.Minute, cfg.Stream.Get().IdleTimeout)
}

func TestInvalidConfigs(t *testing.T) {
	for name, want := range map[string][]string{
		"no_source":    {"no source: configure files, stream or both"},
		"bad_line":     {"max_line_bytes: must be within 4096..67108864, got 10"},
		"bad_files":    {`files.include: bad glob "[bad"`, `files.start_at: "middle" is not end or beginning`},
		"bad_gymattrs": {"cardinality_limit: must be at least 2"},
		"bad_stream":   {"stream.max_connections: must be at least 1, got 0"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(t, name)
			require.Error(t, err)
			for _, w := range want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
