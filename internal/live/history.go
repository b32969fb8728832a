package live

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
)

// The charts of a run, each a few series over the horizon at one point per resolution.
const (
	chartRollouts = iota // completed rollouts (cumulative) by outcome
	chartTokens          // tokens (cumulative) by instrument and type
	chartFlight          // rollouts in flight and stalled
	nCharts
)

var chartNames = [nCharts]string{"completed", "tokens", "in_flight"}

// otherSeries is the series a chart folds its series beyond MaxChartSeries into.
const otherSeries = "other"

// history is a run's charts: a ring of slots (one per resolution) shared by every series, each
// series a ring of float32 (NaN: no point). Its memory is bounded by
// slots x (nCharts x (MaxChartSeries+1)) x 4 bytes.
type history struct {
	res    time.Duration
	slots  int
	last   int64   // the slot number last written; -1 before the first
	times  []int64 // ring: the slot number each index holds
	charts [nCharts]chart
	max    int // series per chart before "other"
}

type chart struct {
	names []string
	vals  [][]float32
}

func newHistory(lim Limits) *history {
	n := max(int(lim.Horizon/lim.Resolution), 1)
	return &history{res: lim.Resolution, slots: n, last: -1, times: make([]int64, n), max: max(lim.MaxChartSeries, 1)}
}

func (h *history) slotOf(t time.Time) int64 { return t.UnixNano() / int64(h.res) }

// record writes the charts' values as the point of now's slot (a second call in one slot
// replaces it); the slots skipped since the last are left without points.
func (h *history) record(now time.Time, values [nCharts]map[string]float64) {
	slot := h.slotOf(now)
	if slot < h.last {
		return // the clock stepped back: keep the points in order
	}
	// Every slot from the last one written through now's starts without points (now's again
	// when it is written twice).
	if slot >= h.last {
		from := max(h.last+1, slot-int64(h.slots)+1, 0)
		if slot == h.last || h.last < 0 {
			from = slot
		}
		for s := from; s <= slot; s++ {
			i := int(s % int64(h.slots))
			h.times[i] = s
			for c := range h.charts {
				for _, v := range h.charts[c].vals {
					v[i] = float32(math.NaN())
				}
			}
		}
		h.last = slot
	}
	i := int(slot % int64(h.slots))
	for c := range h.charts {
		ch := &h.charts[c]
		// In name order: which series a chart admits before "other" does not depend on the
		// order of a map.
		for _, name := range slices.Sorted(maps.Keys(values[c])) {
			ch.series(name, h).add(i, values[c][name])
		}
	}
}

type ring []float32

func (r ring) add(i int, v float64) {
	if math.IsNaN(float64(r[i])) {
		r[i] = 0
	}
	r[i] += float32(v)
}

// series returns the ring of name, admitting it while the chart has room and folding it into
// "other" after.
func (c *chart) series(name string, h *history) ring {
	if i := slices.Index(c.names, name); i >= 0 {
		return c.vals[i]
	}
	if len(c.names) >= h.max {
		name = otherSeries
		if i := slices.Index(c.names, name); i >= 0 {
			return c.vals[i]
		}
	}
	v := make([]float32, h.slots)
	for i := range v {
		v[i] = float32(math.NaN())
	}
	c.names = append(c.names, name)
	c.vals = append(c.vals, v)
	return v
}

// perMinute is the rate of a chart's total (its series summed) over the last minute of its
// points: from the newest point back to the newest one a minute or more before it; nil
// without such points.
func (h *history) perMinute(c int) *float64 {
	if h.last < 0 {
		return nil
	}
	now, ok := h.total(c, h.last)
	if !ok {
		return nil
	}
	back := int64(time.Minute / h.res)
	for s := h.last - back; s > h.last-int64(h.slots) && s >= 0; s-- {
		then, ok := h.total(c, s)
		if !ok {
			continue
		}
		r := (now - then) / (time.Duration(h.last-s) * h.res).Minutes()
		return &r
	}
	return nil
}

// total is the sum of chart c's series at slot s; false when the ring does not hold s or no
// series has a point there.
func (h *history) total(c int, s int64) (float64, bool) {
	i := int(s % int64(h.slots))
	if h.times[i] != s {
		return 0, false
	}
	var t float64
	seen := false
	for _, v := range h.charts[c].vals {
		if !math.IsNaN(float64(v[i])) {
			t += float64(v[i])
			seen = true
		}
	}
	return t, seen
}

// History is a run's charts as the API gives them: T the time of each point (Unix seconds),
// every series' values in the same order (null: no point).
type History struct {
	ResolutionS float64          `json:"resolution_s"`
	HorizonS    float64          `json:"horizon_s"`
	T           []int64          `json:"t"`
	Charts      map[string]Chart `json:"charts"`
}

// Chart is one chart's series.
type Chart struct {
	Series []ChartSeries `json:"series"`
}

// ChartSeries is one series of a chart.
type ChartSeries struct {
	Name   string     `json:"name"`
	Values jsonFloats `json:"values"`
}

type jsonFloats []float32

// MarshalJSON writes NaN as null (no point).
func (f jsonFloats) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(f)*8)
	b = append(b, '[')
	for i, v := range f {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
		}
	}
	return append(b, ']'), nil
}

func (h *history) export() *History {
	out := &History{ResolutionS: h.res.Seconds(), HorizonS: (time.Duration(h.slots) * h.res).Seconds(), T: []int64{},
		Charts: map[string]Chart{}}
	var idx []int
	if h.last >= 0 {
		for s := max(h.last-int64(h.slots)+1, 0); s <= h.last; s++ {
			i := int(s % int64(h.slots))
			if h.times[i] == s {
				idx = append(idx, i)
				out.T = append(out.T, time.Unix(0, s*int64(h.res)).Unix())
			}
		}
	}
	for c := range h.charts {
		ch := Chart{Series: []ChartSeries{}}
		for k, name := range h.charts[c].names {
			vals := make(jsonFloats, len(idx))
			for j, i := range idx {
				vals[j] = h.charts[c].vals[k][i]
			}
			ch.Series = append(ch.Series, ChartSeries{Name: name, Values: vals})
		}
		out.Charts[chartNames[c]] = ch
	}
	return out
}

// chartValues are the run's numbers the charts plot, from the aggregation the view reads.
func (r *run) chartValues() [nCharts]map[string]float64 {
	a := r.aggregate()
	return [nCharts]map[string]float64{
		chartRollouts: a.completed,
		chartTokens:   a.tokenTypes,
		chartFlight:   {"in flight": a.inFlight, "stalled": a.stalled},
	}
}

// History returns the charts of run id, nil when the store has no such run.
func (s *Store) History(id string) *History {
	return ofRun(s, id, func(r *run) *History { return r.hist.export() })
}
