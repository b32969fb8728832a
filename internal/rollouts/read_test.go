package rollouts

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/events"
)

// outcomeSink records the outcome and dispatch of each rollout.completed applied.
type outcomeSink struct{ got []string }

func (s *outcomeSink) SetResource([]events.ResourceAttr) error { return nil }
func (s *outcomeSink) DefaultResource()                        {}
func (s *outcomeSink) Apply(ev *events.Event) {
	if ev.Type == events.EventRolloutCompleted {
		s.got = append(s.got, string(ev.Outcome)+"|"+string(ev.DispatchName))
	}
}

// TestReadRows: a finished file's rows are applied in order; a damaged row is handed to
// reject with its line and the rows around it applied; a blank line is skipped; the last row
// needs no newline.
func TestReadRows(t *testing.T) {
	file := `{"_ng_environment_server":"a","reward":1}` + "\n\n" +
		`not json` + "\n" +
		`{"_ng_environment_server":"b","reward":"x"}` + "\n" +
		`{"agent_ref":{"name":"c"}}`
	var sink outcomeSink
	var rejected []string
	n, err := ReadRows(strings.NewReader(file), Main, &sink, func(line int64, re *RowError) {
		rejected = append(rejected, strings.Join([]string{re.Reason, string(rune('0' + line))}, "@"))
	})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	assert.Equal(t, []string{"scored|a", "scored|c"}, sink.got)
	assert.Equal(t, []string{ReasonNotObject + "@3", ReasonWrongType + "@4"}, rejected)
}
