package sharedcomponent

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
)

type counting struct {
	starts, stops int
	startErr      error
}

func (c *counting) Start(context.Context, component.Host) error { c.starts++; return c.startErr }
func (c *counting) Shutdown(context.Context) error              { c.stops++; return nil }

// One instance per key, started and shut down once whatever the number of signals; once shut
// down it leaves the map, and the key gets a new instance.
func TestOneInstancePerKey(t *testing.T) {
	ctx := context.Background()
	m := NewMap[string, *counting]()
	creates := 0
	create := func() (*counting, error) { creates++; return &counting{}, nil }
	a, err := m.LoadOrStore("a", create)
	require.NoError(t, err)
	a2, err := m.LoadOrStore("a", create)
	require.NoError(t, err)
	b, err := m.LoadOrStore("b", create)
	require.NoError(t, err)
	assert.Same(t, a, a2)
	assert.NotSame(t, a, b)
	assert.Equal(t, 2, creates)

	for _, c := range []*Component[*counting]{a, a2} {
		require.NoError(t, c.Start(ctx, componenttest.NewNopHost()))
	}
	assert.Equal(t, 1, a.Unwrap().starts)
	for _, c := range []*Component[*counting]{a, a2} {
		require.NoError(t, c.Shutdown(ctx))
	}
	assert.Equal(t, 1, a.Unwrap().stops)
	_, ok := m.Load("a")
	assert.False(t, ok, "a shut-down component leaves the map")
	got, ok := m.Load("b")
	assert.True(t, ok)
	assert.Same(t, b, got)

	a3, err := m.LoadOrStore("a", create)
	require.NoError(t, err)
	assert.NotSame(t, a, a3)
	require.NoError(t, a.Shutdown(ctx))
	got, ok = m.Load("a")
	assert.True(t, ok && got == a3, "a stale instance's shutdown does not remove the new one")
}

// A failed create stores nothing; a failed start is reported to every signal.
func TestFailures(t *testing.T) {
	m := NewMap[int, *counting]()
	_, err := m.LoadOrStore(1, func() (*counting, error) { return nil, errors.New("no") })
	require.EqualError(t, err, "no")
	_, ok := m.Load(1)
	assert.False(t, ok)

	c, err := m.LoadOrStore(1, func() (*counting, error) { return &counting{startErr: errors.New("port taken")}, nil })
	require.NoError(t, err)
	require.EqualError(t, c.Start(context.Background(), componenttest.NewNopHost()), "port taken")
	require.EqualError(t, c.Start(context.Background(), componenttest.NewNopHost()), "port taken")
	assert.Equal(t, 1, c.Unwrap().starts)
}
