package live

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// spec names, per instrument the page reads, the data-point attributes it groups by (a
// series' dims, in this order).
type spec struct{ dims []string }

func key(id schema.AttrID) string { return schema.Attr(id).Key }

var specs = func() []*spec {
	s := make([]*spec, len(schema.Instruments))
	set := func(id schema.InstrumentID, dims ...schema.AttrID) {
		sp := &spec{}
		for _, d := range dims {
			sp.dims = append(sp.dims, key(d))
		}
		s[id] = sp
	}
	set(schema.GymRolloutCompletedTotal, schema.AttrNemoGymRolloutOutcome, schema.AttrNemoGymFailureKind, schema.AttrNemoGymRolloutDispatchName)
	set(schema.GymRolloutRewardedTotal, schema.AttrNemoGymRolloutRewardRange, schema.AttrNemoGymRolloutDispatchName)
	set(schema.GymRolloutTokens, schema.AttrGenAiTokenType, schema.AttrGenAiResponseModel)
	set(schema.GymModelCallTokens, schema.AttrNemoGymModelCallTokenType, schema.AttrNemoGymServerName)
	set(schema.GymRolloutInFlight, schema.AttrNemoGymServerName, schema.AttrNemoGymRolloutStage)
	set(schema.GymRolloutStalled, schema.AttrNemoGymServerName, schema.AttrNemoGymRolloutStage)
	set(schema.GymRolloutOldestInFlightAge)
	set(schema.GymEventLoopLagMs)
	set(schema.GymGcPauseDurationMs)
	set(schema.GymServerMemoryUsage, schema.AttrMemoryType)
	set(schema.ProcessMemoryUsage)
	set(schema.GymProcessCpuPercent)
	set(schema.GymProcessTreeCpuPercent)
	set(schema.GymProcessTreeMemoryUsedMib)
	set(schema.GymProcessGpuUtilizationPercent, schema.AttrNemoGymGpuIndex)
	set(schema.GymProcessGpuMemoryUsedMib, schema.AttrNemoGymGpuIndex)
	return s
}()

// APIVersion is the version of the JSON API (/api/v1/...): a field is only ever added to it.
const APIVersion = 1

// RunSummary is one run in the list of runs.
type RunSummary struct {
	ID             string             `json:"id"`
	FirstSeen      time.Time          `json:"first_seen"`
	LastSeen       time.Time          `json:"last_seen"`
	Servers        int                `json:"servers"`
	Completed      map[string]float64 `json:"completed"`
	CompletedTotal float64            `json:"completed_total"`
	PerMinute      *float64           `json:"completed_per_minute"`
	InFlight       float64            `json:"in_flight"`
	Stalled        float64            `json:"stalled"`
}

// RunView is a run's current numbers: one call gives everything but the charts.
type RunView struct {
	RunSummary
	Failures   []Count      `json:"failures_by_kind"`
	Rewards    []RewardRow  `json:"rewards"`
	Tokens     []TokenRow   `json:"tokens"`
	Flight     []FlightRow  `json:"in_flight_by_stage"`
	OldestAge  *float64     `json:"oldest_in_flight_age_s"`
	ServerRows []ServerRow  `json:"server_list"`
	Cost       *CostSection `json:"cost"`
	Series     int          `json:"series"`
}

// Count is a named number.
type Count struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// RewardRow is the scored rollouts of one dispatch (benchmark) by reward range.
type RewardRow struct {
	Dispatch string             `json:"dispatch"`
	ByRange  map[string]float64 `json:"by_range"`
	Total    float64            `json:"total"`
}

// TokenRow is the tokens of one type from one instrument: gym.rollout.tokens (by model) or
// gym.model_call.tokens (by server).
type TokenRow struct {
	Instrument string  `json:"instrument"`
	Type       string  `json:"type"`
	Model      string  `json:"model,omitempty"`
	Server     string  `json:"server,omitempty"`
	Tokens     float64 `json:"tokens"`
	Samples    uint64  `json:"samples"`
}

// FlightRow is the rollouts in flight and stalled of one server and stage.
type FlightRow struct {
	Server   string  `json:"server"`
	Stage    string  `json:"stage"`
	InFlight float64 `json:"in_flight"`
	Stalled  float64 `json:"stalled"`
}

// Dist summarises a histogram: count, mean and p99 (interpolated within its bucket, as
// Prometheus' histogram_quantile does).
type Dist struct {
	Count uint64   `json:"count"`
	Mean  *float64 `json:"mean"`
	P99   *float64 `json:"p99"`
}

// ServerRow is one server (resource) of the run.
type ServerRow struct {
	server
	Lag         *Dist              `json:"event_loop_lag_ms,omitempty"`
	GCPause     *Dist              `json:"gc_pause_ms,omitempty"`
	Memory      *float64           `json:"process_memory_bytes,omitempty"`
	TreeMemory  map[string]float64 `json:"server_memory_bytes,omitempty"`
	CPU         *float64           `json:"cpu_percent,omitempty"`
	TreeCPU     *float64           `json:"process_tree_cpu_percent,omitempty"`
	TreeMemMiB  *float64           `json:"process_tree_memory_mib,omitempty"`
	GPUUtil     *float64           `json:"gpu_utilization_percent,omitempty"`
	GPUMemMiB   *float64           `json:"gpu_memory_used_mib,omitempty"`
	SeriesCount int                `json:"series"`
}

// agg is a run's numbers, computed from its series in one pass: what the view and the charts
// both read (one rule for a number, whichever shows it).
type agg struct {
	completed  map[string]float64
	failures   map[string]float64
	rewards    map[string]map[string]float64
	tokens     map[tokenKey]*TokenRow
	flight     map[[2]string]*FlightRow
	inFlight   float64
	stalled    float64
	oldest     *float64
	perServer  []*serverAgg
	nSeries    int
	tokenTypes map[string]float64 // for the tokens chart: the run's tokens by type and instrument
}

type tokenKey struct{ inst, typ, by string }

type serverAgg struct {
	lag, gc                    histAgg
	mem, cpu, treeCPU, treeMem *float64
	gpuUtil, gpuMem            *float64
	treeMemByType              map[string]float64
	series                     int
}

type histAgg struct {
	count   uint64
	sum     float64
	bounds  []float64
	buckets []uint64
}

func (h *histAgg) add(se *series) {
	if h.buckets == nil || !slices.Equal(h.bounds, se.bounds) {
		if h.buckets != nil { // bounds differ: keep count and sum, drop the buckets
			h.bounds = nil
		} else {
			h.bounds = se.bounds
			h.buckets = make([]uint64, len(se.buckets))
		}
	}
	h.count += se.count
	h.sum += se.sum
	if h.bounds != nil && len(h.buckets) == len(se.buckets) {
		for i, b := range se.buckets {
			h.buckets[i] += b
		}
	}
}

func (h *histAgg) dist() *Dist {
	if h.count == 0 {
		return nil
	}
	d := &Dist{Count: h.count}
	mean := h.sum / float64(h.count)
	d.Mean = finitePtr(&mean)
	if h.bounds != nil {
		q := quantile(0.99, h.bounds, h.buckets)
		d.P99 = finitePtr(&q)
	}
	return d
}

// quantile is Prometheus' histogram_quantile on one histogram: linear within the bucket; in
// the last (+Inf) bucket, the highest finite bound.
func quantile(q float64, bounds []float64, buckets []uint64) float64 {
	var total uint64
	for _, b := range buckets {
		total += b
	}
	if total == 0 || len(bounds) == 0 || len(buckets) != len(bounds)+1 {
		return math.NaN()
	}
	rank := q * float64(total)
	var cum uint64
	for i, b := range buckets {
		prev := cum
		cum += b
		if float64(cum) < rank {
			continue
		}
		if i == len(bounds) {
			return bounds[len(bounds)-1]
		}
		lo := 0.0
		if i > 0 {
			lo = bounds[i-1]
		} else if bounds[0] < 0 {
			return bounds[0]
		}
		return lo + (bounds[i]-lo)*(rank-float64(prev))/float64(b)
	}
	return bounds[len(bounds)-1]
}

func addPtr(p **float64, v float64) {
	if *p == nil {
		*p = new(float64)
	}
	**p += v
}

func maxPtr(p **float64, v float64) {
	if *p == nil || v > **p {
		*p = &v
	}
}

func (r *run) aggregate() *agg {
	a := &agg{completed: map[string]float64{}, failures: map[string]float64{}, rewards: map[string]map[string]float64{},
		tokens: map[tokenKey]*TokenRow{}, flight: map[[2]string]*FlightRow{}, tokenTypes: map[string]float64{},
		perServer: make([]*serverAgg, len(r.servers)), nSeries: len(r.series)}
	for i := range a.perServer {
		a.perServer[i] = &serverAgg{}
	}
	for _, se := range r.series {
		var sv *serverAgg
		if se.server >= 0 {
			sv = a.perServer[se.server]
			sv.series++
		}
		switch se.inst {
		case schema.GymRolloutCompletedTotal:
			a.completed[se.dims[0]] += se.val
			if se.dims[0] != schema.ScoredOutcome {
				a.failures[cmp.Or(se.dims[1], schema.Absent)] += se.val
			}
		case schema.GymRolloutRewardedTotal:
			m := a.rewards[se.dims[1]]
			if m == nil {
				m = map[string]float64{}
				a.rewards[se.dims[1]] = m
			}
			m[se.dims[0]] += se.val
		case schema.GymRolloutTokens, schema.GymModelCallTokens:
			inst := schema.Get(se.inst).Name
			k := tokenKey{inst, se.dims[0], se.dims[1]}
			t := a.tokens[k]
			if t == nil {
				t = &TokenRow{Instrument: inst, Type: se.dims[0]}
				if se.inst == schema.GymRolloutTokens {
					t.Model = se.dims[1]
				} else {
					t.Server = se.dims[1]
				}
				a.tokens[k] = t
			}
			t.Tokens += se.sum
			t.Samples += se.count
			a.tokenTypes[tokenSeriesName(se.inst, se.dims[0])] += se.sum
		case schema.GymRolloutInFlight, schema.GymRolloutStalled:
			k := [2]string{se.dims[0], se.dims[1]}
			f := a.flight[k]
			if f == nil {
				f = &FlightRow{Server: se.dims[0], Stage: se.dims[1]}
				a.flight[k] = f
			}
			if se.inst == schema.GymRolloutInFlight {
				f.InFlight += se.val
				a.inFlight += se.val
			} else {
				f.Stalled += se.val
				a.stalled += se.val
			}
		case schema.GymRolloutOldestInFlightAge:
			maxPtr(&a.oldest, se.val)
		}
		if sv != nil {
			sv.add(se)
		}
	}
	return a
}

func (sv *serverAgg) add(se *series) {
	switch se.inst {
	case schema.GymEventLoopLagMs:
		sv.lag.add(se)
	case schema.GymGcPauseDurationMs:
		sv.gc.add(se)
	case schema.ProcessMemoryUsage:
		addPtr(&sv.mem, se.val)
	case schema.GymServerMemoryUsage:
		if sv.treeMemByType == nil {
			sv.treeMemByType = map[string]float64{}
		}
		sv.treeMemByType[cmp.Or(se.dims[0], "total")] += se.val
	case schema.GymProcessCpuPercent:
		maxPtr(&sv.cpu, se.val)
	case schema.GymProcessTreeCpuPercent:
		maxPtr(&sv.treeCPU, se.val)
	case schema.GymProcessTreeMemoryUsedMib:
		maxPtr(&sv.treeMem, se.val)
	case schema.GymProcessGpuUtilizationPercent:
		maxPtr(&sv.gpuUtil, se.val)
	case schema.GymProcessGpuMemoryUsedMib:
		addPtr(&sv.gpuMem, se.val)
	}
}

func tokenSeriesName(inst schema.InstrumentID, typ string) string {
	if inst == schema.GymModelCallTokens {
		return "model call " + typ
	}
	return "rollout " + typ
}

func summary(r *run, a *agg) RunSummary {
	sum := RunSummary{ID: r.id, FirstSeen: r.first, LastSeen: r.seen, Servers: len(r.servers), Completed: a.completed,
		InFlight: a.inFlight, Stalled: a.stalled}
	for _, v := range a.completed {
		sum.CompletedTotal += v
	}
	sum.PerMinute = finitePtr(r.hist.perMinute(chartRollouts))
	return sum
}

func (s *Store) view(r *run) *RunView {
	a := r.aggregate()
	v := &RunView{RunSummary: summary(r, a), OldestAge: a.oldest, Series: a.nSeries,
		Failures: sortedCounts(a.failures), Rewards: []RewardRow{}, Tokens: []TokenRow{}, Flight: []FlightRow{}}
	for d, m := range a.rewards {
		row := RewardRow{Dispatch: d, ByRange: m}
		for _, n := range m {
			row.Total += n
		}
		v.Rewards = append(v.Rewards, row)
	}
	slices.SortFunc(v.Rewards, func(x, y RewardRow) int { return cmp.Compare(x.Dispatch, y.Dispatch) })
	for _, t := range a.tokens {
		v.Tokens = append(v.Tokens, *t)
	}
	slices.SortFunc(v.Tokens, func(x, y TokenRow) int {
		return cmp.Or(cmp.Compare(x.Instrument, y.Instrument), cmp.Compare(y.Tokens, x.Tokens), cmp.Compare(x.Type, y.Type),
			cmp.Compare(x.Model+x.Server, y.Model+y.Server))
	})
	for _, f := range a.flight {
		v.Flight = append(v.Flight, *f)
	}
	// The slowest first: stalled before merely in flight, then by count.
	slices.SortFunc(v.Flight, func(x, y FlightRow) int {
		return cmp.Or(cmp.Compare(y.Stalled, x.Stalled), cmp.Compare(y.InFlight, x.InFlight),
			cmp.Compare(x.Server, y.Server), cmp.Compare(x.Stage, y.Stage))
	})
	v.ServerRows = make([]ServerRow, len(r.servers))
	for i, sv := range r.servers {
		sa := a.perServer[i]
		v.ServerRows[i] = ServerRow{server: *sv, Lag: sa.lag.dist(), GCPause: sa.gc.dist(), Memory: sa.mem,
			TreeMemory: sa.treeMemByType, CPU: sa.cpu, TreeCPU: sa.treeCPU, TreeMemMiB: sa.treeMem,
			GPUUtil: sa.gpuUtil, GPUMemMiB: sa.gpuMem, SeriesCount: sa.series}
	}
	slices.SortFunc(v.ServerRows, func(x, y ServerRow) int {
		return cmp.Or(cmp.Compare(x.Service, y.Service), cmp.Compare(x.Instance, y.Instance))
	})
	if len(s.prices) > 0 {
		v.Cost = s.cost(a, a.completed[schema.ScoredOutcome])
	}
	return v
}

func sortedCounts(m map[string]float64) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{k, v})
	}
	slices.SortFunc(out, func(x, y Count) int { return cmp.Or(cmp.Compare(y.Value, x.Value), cmp.Compare(x.Name, y.Name)) })
	return out
}

// Runs lists the runs, the most recently updated first.
func (s *Store) Runs() []RunSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RunSummary, 0, len(s.runs))
	for _, r := range s.runs {
		out = append(out, summary(r, r.aggregate()))
	}
	slices.SortFunc(out, func(x, y RunSummary) int { return cmp.Or(y.LastSeen.Compare(x.LastSeen), cmp.Compare(x.ID, y.ID)) })
	return out
}

// Run returns the current numbers of run id, nil when the store has no such run.
func (s *Store) Run(id string) *RunView { return ofRun(s, id, s.view) }

// ofRun is f of run id under the store's lock; nil when the store has no such run.
func ofRun[T any](s *Store, id string, f func(*run) *T) *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[id]
	if r == nil {
		return nil
	}
	return f(r)
}

// Status is the store's own state: what it holds, what its limits kept out, its exports.
type Status struct {
	Runs       int       `json:"runs"`
	Dropped    Dropped   `json:"dropped"`
	Exports    uint64    `json:"exports"`
	LastExport time.Time `json:"last_export"`
	Limits     struct {
		MaxRuns          int     `json:"max_runs"`
		MaxServers       int     `json:"max_servers"`
		MaxSeries        int     `json:"max_series"`
		MaxChartSeries   int     `json:"max_chart_series"`
		ResolutionS      float64 `json:"resolution_s"`
		HorizonS         float64 `json:"horizon_s"`
		SeriesExpiration float64 `json:"series_expiration_s"`
	} `json:"limits"`
}

// Status returns the store's own state.
func (s *Store) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Runs: len(s.runs), Dropped: s.dropped, Exports: s.exports, LastExport: s.last}
	st.Limits.MaxRuns, st.Limits.MaxServers, st.Limits.MaxSeries = s.lim.MaxRuns, s.lim.MaxServers, s.lim.MaxSeries
	st.Limits.MaxChartSeries = s.lim.MaxChartSeries
	st.Limits.ResolutionS, st.Limits.HorizonS = s.lim.Resolution.Seconds(), s.lim.Horizon.Seconds()
	st.Limits.SeriesExpiration = s.lim.SeriesExpiration.Seconds()
	return st
}
