package gymgen

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every generated line is one JSON object with an event; the same seed gives the same stream.
func TestGeneratedLinesAreEvents(t *testing.T) {
	a := New(Options{Seed: 7, Processes: 3}).Batch(nil, 5000)
	b := New(Options{Seed: 7, Processes: 3}).Batch(nil, 5000)
	assert.Equal(t, a, b, "seeded")
	events := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSuffix(a, []byte("\n")), []byte("\n")) {
		var m map[string]any
		// Python's tokens never appear in generated lines, so encoding/json reads them all.
		require.NoError(t, json.Unmarshal(line, &m), string(line))
		events[m["event"].(string)]++
	}
	assert.GreaterOrEqual(t, len(events), 20, "the mix covers (nearly) every event: %v", events)
}

// A stream of batches is cut back into the same batches.
func TestBodies(t *testing.T) {
	g := New(Options{Seed: 3, Processes: 2})
	var stream []byte
	var want []string
	for range 3 {
		b := g.Batch(nil, 50)
		want = append(want, string(b))
		stream = append(stream, b...)
	}
	assert.Equal(t, want, Bodies(stream))
	assert.Empty(t, Bodies(nil))
}
