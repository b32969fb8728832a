package rollouts

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
)

// TestIndices: _ng_task_index and _ng_rollout_index of main and failures rows are read by the
// integer rule; any other value, however long or odd, gives no index and never rejects the row
// (the receiver maps neither, so it counts the same rows as before it read them).
func TestIndices(t *testing.T) {
	long := strings.Repeat("7", 200)
	rows := []struct {
		row           string
		task, rollout int64 // -1: none
	}{
		{`{"_ng_task_index":3,"_ng_rollout_index":0}`, 3, 0},
		{`{"_ng_task_index":3.0,"_ng_rollout_index":2e1}`, 3, 20},
		{`{"_ng_task_index":9223372036854775807}`, 9223372036854775807, -1},
		{`{"_ng_task_index":9223372036854775808,"_ng_rollout_index":-1}`, -1, -1},
		{`{"_ng_task_index":1.5,"_ng_rollout_index":NaN}`, -1, -1},
		{`{"_ng_task_index":"3","_ng_rollout_index":[1]}`, -1, -1},
		{`{"_ng_task_index":null,"_ng_rollout_index":{"a":1}}`, -1, -1},
		{`{"_ng_task_index":01,"_ng_rollout_index":1e}`, -1, -1},
		{`{"_ng_task_index":` + long + `,"_ng_rollout_index":-Infinity}`, -1, -1},
		{`{"_ng_task_index":1,"_ng_task_index":true}`, -1, -1}, // the last value wins
	}
	for _, kind := range []Kind{Main, Failures} {
		for _, c := range rows {
			for _, bufBytes := range []int{0, 1, 5} {
				n := 0
				_, end := eachRow(kind, iotest.OneByteReader(strings.NewReader(c.row+"\n")), 0, bufBytes, func(_ *RowDecoder, row *Row, re *RowError) {
					n++
					if !assert.Nil(t, re, "%s %s", kind, c.row) {
						return
					}
					var evs [MaxRowEvents]events.Event
					row.Events(kind, &evs)
					ev := evs[0]
					assert.Equal(t, c.task >= 0, ev.HasTaskIndex, c.row)
					assert.Equal(t, c.rollout >= 0, ev.HasRolloutIndex, c.row)
					if c.task >= 0 {
						assert.Equal(t, c.task, ev.TaskIndex, c.row)
					}
					if c.rollout >= 0 {
						assert.Equal(t, c.rollout, ev.RolloutIndex, c.row)
					}
				})
				assert.Equal(t, 1, n, c.row)
				assert.ErrorIs(t, end, io.EOF)
			}
		}
	}
}

// TestIndicesAllocateNothing: reading the indices, long tokens included, and mapping them costs
// no allocation per row.
func TestIndicesAllocateNothing(t *testing.T) {
	data := []byte(strings.Repeat(`{"_ng_task_index":12,"_ng_rollout_index":3,"reward":1,"_ng_environment_server":"m"}`+"\n", 32) +
		strings.Repeat(`{"_ng_task_index":`+strings.Repeat("9", 300)+`,"_ng_rollout_index":"x"}`+"\n", 32))
	rd := NewRowDecoder(0)
	src := bytes.NewReader(data)
	var row Row
	var evs [MaxRowEvents]events.Event
	rows := 0
	allocs := testing.AllocsPerRun(20, func() {
		src.Reset(data)
		rd.Reset(src, 0, 0, 0)
		for rows = 0; rd.Next(Main, &row) == nil; rows++ {
			row.Events(Main, &evs)
		}
	})
	assert.Equal(t, 64, rows)
	assert.Zero(t, allocs)
}
