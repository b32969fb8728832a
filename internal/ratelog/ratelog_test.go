package ratelog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
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

func TestLoggerCountsWhatItHeldBack(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	l := NewLogger(zap.New(core), 2, time.Minute)
	now := time.Unix(1000, 0)
	l.Now = func() time.Time { return now }
	for range 5 {
		l.Warn("bad input", zap.String("path", "/f"))
	}
	now = now.Add(time.Minute)
	assert.True(t, l.Warn("bad input"))
	require.Equal(t, 3, logs.Len())
	got := logs.All()
	assert.EqualValues(t, 0, got[0].ContextMap()[HeldField])
	assert.Equal(t, "/f", got[1].ContextMap()["path"])
	assert.EqualValues(t, 3, got[2].ContextMap()[HeldField], "the three held back are counted on the next line")
}

// TestWarnWithBuildsFieldsOnlyWhenWritten: fields of a held-back line, or of a line the logger's
// level drops, are never built.
func TestWarnWithBuildsFieldsOnlyWhenWritten(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	l := NewLogger(zap.New(core), 1, time.Minute)
	built := 0
	fields := func() []zap.Field { built++; return []zap.Field{zap.Int("row", built)} }
	for range 4 {
		l.WarnWith("row rejected", fields)
	}
	assert.Equal(t, 1, built, "three held back, none built")
	require.Equal(t, 1, logs.Len())
	assert.EqualValues(t, 1, logs.All()[0].ContextMap()["row"])

	errorsOnly, _ := observer.New(zap.ErrorLevel)
	quiet := NewLogger(zap.New(errorsOnly), 10, time.Minute)
	assert.True(t, quiet.WarnWith("row rejected", fields), "within the limit")
	assert.Equal(t, 1, built, "a level that drops warnings builds no field")
}
