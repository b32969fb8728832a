package gymreceiver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// statusHost records the statuses a component reports.
type statusHost struct{ statuses []componentstatus.Status }

func (*statusHost) GetExtensions() map[component.ID]component.Component { return nil }
func (h *statusHost) Report(ev *componentstatus.Event)                  { h.statuses = append(h.statuses, ev.Status()) }

// TestCheckpointOutage: a disk that fails every save for ten minutes of 10 s collections is
// logged once as an error, then reminded once a minute (not 60 times), every failure is
// counted, the receiver's status is a recoverable error until a save works, and that save is
// logged and reports OK. A clock stepped back during the outage neither floods the log nor
// gives a negative length.
func TestCheckpointOutage(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	failures := 0
	o := newCheckpointOutage(zap.New(core), func(context.Context) { failures++ }, func() time.Time { return now })
	host := &statusHost{}
	o.start(host)

	o.saved()
	assert.Zero(t, logs.Len(), "a save that works in no outage logs nothing")
	assert.Empty(t, host.statuses)

	diskFull := errors.New("write /var/lib/otelcol-gym/receiver_gym_: no space left on device")
	for range 60 {
		now = now.Add(10 * time.Second)
		o.failed(context.Background(), "collection", diskFull)
	}
	assert.Equal(t, 60, failures, "every failed save is counted")
	require.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError}, host.statuses)
	entries := logs.TakeAll()
	require.Len(t, entries, 10, "one error, then a reminder a minute")
	assert.Equal(t, zapcore.ErrorLevel, entries[0].Level)
	assert.Contains(t, entries[0].ContextMap()["error"], "no space left")
	last := entries[len(entries)-1]
	assert.Equal(t, zapcore.WarnLevel, last.Level)
	assert.EqualValues(t, 55, last.ContextMap()["failures"])

	// The clock steps back an hour: one reminder (the step is news), not one per save.
	now = now.Add(-time.Hour)
	for range 5 {
		now = now.Add(10 * time.Second)
		o.failed(context.Background(), "before_answer", diskFull)
	}
	entries = logs.TakeAll()
	require.Len(t, entries, 1)
	assert.Equal(t, time.Duration(0), entries[0].ContextMap()["failing_for"], "no negative length")

	now = now.Add(time.Hour + 10*time.Second)
	o.saved()
	entries = logs.TakeAll()
	require.Len(t, entries, 1)
	assert.Equal(t, "gym receiver: the checkpoint is saved again", entries[0].Message)
	assert.EqualValues(t, 65, entries[0].ContextMap()["failures"])
	assert.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError, componentstatus.StatusOK}, host.statuses)

	// A second outage starts with an error line again.
	o.failed(context.Background(), "collection", diskFull)
	entries = logs.TakeAll()
	require.Len(t, entries, 1)
	assert.Equal(t, zapcore.ErrorLevel, entries[0].Level)
}
