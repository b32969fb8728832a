package follow

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigCheck(t *testing.T) {
	ok := Config{Include: []string{"/logs/*.jsonl"}, StartAt: StartAtEnd, PollInterval: time.Second}
	require.NoError(t, ok.Check("files"))
	assert.False(t, ok.Beginning())

	bad := Config{Include: []string{"[x"}, Exclude: []string{"[y"}, StartAt: "middle"}
	err := bad.Check("rollouts")
	require.Error(t, err)
	for _, want := range []string{
		`rollouts.include: bad glob "[x"`,
		`rollouts.exclude: bad glob "[y"`,
		`rollouts.start_at: "middle" is not end or beginning`,
		"rollouts.poll_interval: must be positive, got 0s",
	} {
		assert.ErrorContains(t, err, want)
	}
	assert.EqualError(t, (&Config{StartAt: StartAtBeginning, PollInterval: time.Second}).Check("files"), "files.include: at least one glob is required")
	assert.True(t, (&Config{StartAt: StartAtBeginning}).Beginning())
}

// The files block's defaults pass its check; its own key is checked beside the shared ones.
func TestFilesConfigCheck(t *testing.T) {
	def := DefaultFilesConfig()
	assert.EqualError(t, def.Check(), "files.include: at least one glob is required")
	def.Include = []string{"/logs/*.log"}
	require.NoError(t, def.Check())
	assert.False(t, def.Beginning())

	def.MaxFiles = 0
	def.PollInterval = 0
	err := def.Check()
	assert.ErrorContains(t, err, "files.max_files: must be at least 1, got 0")
	assert.ErrorContains(t, err, "files.poll_interval: must be positive, got 0s")
}
