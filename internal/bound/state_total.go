package bound

import (
	"context"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/metric"
)

// The rules run in every gymattrs processor and in gym_console, each a Bounder, and their
// telemetry shares one set of series: the counters add up on their own, but a gauge recorded
// by each would show whichever Bounder wrote last. So the state_entries gauge is the sum over
// the Bounders of one collector (one MeterProvider), each counted as of its last batch.

// stateTotal is the state entries of the Bounders sharing one MeterProvider.
type stateTotal struct {
	mp metric.MeterProvider
	mu sync.Mutex
	by map[*Bounder]int64
}

var (
	stateTotalsMu sync.Mutex
	stateTotals   []*stateTotal // one per MeterProvider with a live Bounder: usually one
)

// sameProvider reports whether a and b are one MeterProvider. A provider's type need not be
// comparable (a wrapper may hold a func): such a provider is only itself, its Bounder then
// counted alone, rather than a comparison that panics.
func sameProvider(a, b metric.MeterProvider) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// joinStateTotal adds p, with no entries yet, to the total of its MeterProvider.
func (p *Bounder) joinStateTotal(mp metric.MeterProvider) {
	stateTotalsMu.Lock()
	defer stateTotalsMu.Unlock()
	var t *stateTotal
	for _, o := range stateTotals {
		if sameProvider(o.mp, mp) {
			t = o
			break
		}
	}
	if t == nil {
		t = &stateTotal{mp: mp, by: map[*Bounder]int64{}}
		stateTotals = append(stateTotals, t)
	}
	t.mu.Lock()
	t.by[p] = 0
	t.mu.Unlock()
	p.stateTotal = t
}

// recordStateEntries sets p's entries to n and records the total.
func (p *Bounder) recordStateEntries(ctx context.Context, n int64) {
	t := p.stateTotal
	t.mu.Lock()
	defer t.mu.Unlock() // held while recording: totals are recorded in the order they are made
	t.by[p] = n
	var sum int64
	for _, v := range t.by {
		sum += v
	}
	p.tel.ProcessorGymattrsStateEntries.Record(ctx, sum)
}

// leaveStateTotal records the total without p, whose state goes with it, and forgets the
// MeterProvider's total when p was its last Bounder.
func (p *Bounder) leaveStateTotal(ctx context.Context) {
	p.recordStateEntries(ctx, 0)
	stateTotalsMu.Lock()
	defer stateTotalsMu.Unlock()
	t := p.stateTotal
	t.mu.Lock()
	delete(t.by, p)
	empty := len(t.by) == 0
	t.mu.Unlock()
	if empty {
		stateTotals = slices.DeleteFunc(stateTotals, func(o *stateTotal) bool { return o == t })
	}
}
