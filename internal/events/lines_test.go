package events

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// sinkCalls records what a LineDecoder hands its sink: the decoder's contract, whatever
// applies the events.
type sinkCalls struct {
	calls  []string
	refuse bool
}

func (s *sinkCalls) SetResource(attrs []ResourceAttr) error {
	if s.refuse {
		s.calls = append(s.calls, "refused")
		return NewDecodeError("too_many_resources", "refused")
	}
	s.calls = append(s.calls, "resource "+string(attrs[0].Str))
	return nil
}
func (s *sinkCalls) DefaultResource() { s.calls = append(s.calls, "default") }
func (s *sinkCalls) Apply(ev *Event)  { s.calls = append(s.calls, "apply "+ev.Type.String()) }

func newTestLines(t *testing.T) (*LineDecoder, *sinkCalls) {
	t.Helper()
	sink := &sinkCalls{}
	l := NewLineDecoder(0, func(attrs []ResourceAttr, stats *ingest.Stats) Sink {
		assert.Equal(t, "file", string(attrs[0].Str))
		require.NotNil(t, stats)
		return sink
	}, DefaultResource("file", "/f"))
	return l, sink
}

func TestLineDecoderHandsEventsToItsSink(t *testing.T) {
	l, sink := newTestLines(t)
	l.KeepResourceLine()
	res := `{"event":"resource","attributes":{"service.name":"a"}}`
	for _, line := range []string{res, `{"event":"sandbox.active","provider":"docker","delta":1}`, "  ", `{"event":"sandbox.active","delta":"x"}`, `{"event":"no.such"}`} {
		_, _ = l.Line([]byte(line))
	}
	assert.Equal(t, []string{"resource a", "apply sandbox.active"}, sink.calls)
	assert.Equal(t, res, string(l.ResourceLine()))
	st := l.Flush()
	assert.Equal(t, int64(2), st.Accepted)
	assert.Equal(t, int64(1), st.Unknown)
	assert.Equal(t, int64(1), sum(st.Rejected), "%v", st.Rejected)

	// A rejected resource line: the default resource is current again, no line kept.
	out, err := l.Line([]byte(`{"event":"resource","attributes":{"service.name":null}}`))
	require.Error(t, err)
	assert.Equal(t, ingest.Rejected, out)
	assert.Equal(t, "default", sink.calls[len(sink.calls)-1])
	assert.Nil(t, l.ResourceLine())

	// Restore makes a kept resource line current without counting it.
	require.NoError(t, l.Restore([]byte(res)))
	assert.Equal(t, res, string(l.ResourceLine()))
	assert.Equal(t, int64(2), l.Flush().Accepted)
	require.Error(t, l.Restore([]byte(`{"event":"sandbox.active","provider":"docker","delta":1}`)))
}

func TestLineDecoderRefusedResource(t *testing.T) {
	l, sink := newTestLines(t)
	l.KeepResourceLine()
	sink.refuse = true
	out, err := l.Line([]byte(`{"event":"resource","attributes":{"service.name":"a"}}`))
	require.Error(t, err)
	assert.Equal(t, ingest.Rejected, out)
	assert.Equal(t, int64(1), l.Flush().Rejected["too_many_resources"])
	assert.Nil(t, l.ResourceLine(), "a refused resource is not kept")
	l.Reset()
	assert.Zero(t, l.Flush().Rejected["too_many_resources"])
	assert.Equal(t, "default", sink.calls[len(sink.calls)-1])
}

func sum(m map[string]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

// A resource line's values over their bound are cut by the resource rule, and each cut is
// counted in the decoder's stats; a line within the bounds counts none.
func TestLineDecoderCountsResourceCuts(t *testing.T) {
	l, sink := newTestLines(t)
	long := strings.Repeat("é", 300) // 600 bytes
	_, err := l.Line([]byte(`{"event":"resource","attributes":{"service.name":"` + long + `","nemo.run.id":"` + long + `","host.name":"h"}}`))
	require.NoError(t, err)
	assert.Equal(t, "resource "+strings.Repeat("é", 128), sink.calls[len(sink.calls)-1], "cut at 256 bytes, a rune boundary")
	assert.Equal(t, int64(2), l.Flush().ResourceValuesCut)
	_, err = l.Line([]byte(`{"event":"resource","attributes":{"service.name":"a"}}`))
	require.NoError(t, err)
	assert.Equal(t, int64(2), l.Flush().ResourceValuesCut, "none more")
}
