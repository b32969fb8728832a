package ratelog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestLimiter(t *testing.T) {
	l := Limiter{Burst: 2, Every: time.Minute}
	now := time.Unix(1000, 0)
	assert.True(t, l.Allow(now))
	assert.True(t, l.Allow(now))
	assert.False(t, l.Allow(now.Add(time.Second)))
	assert.False(t, l.Allow(now.Add(time.Second)))
	assert.True(t, l.Allow(now.Add(time.Minute)))
	assert.Equal(t, int64(2), l.TakeSuppressed())
	assert.Zero(t, l.TakeSuppressed())
}

func TestTakeCarriesTheHeldBackCount(t *testing.T) {
	l := Limiter{Burst: 1, Every: time.Minute}
	now := time.Unix(1000, 0)
	ok, held := l.Take(now)
	assert.True(t, ok)
	assert.Zero(t, held)
	ok, _ = l.Take(now.Add(time.Second))
	assert.False(t, ok)
	ok, held = l.Take(now.Add(time.Minute))
	assert.True(t, ok)
	assert.Equal(t, int64(1), held)
}
