package gymreceiver

import (
	"context"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/gym-telemetry/otelcol-gym/internal/rollouts"
)

// tracedKey is the storage key of the rollouts source's traced offsets (how far each main
// output's spans were handed on), beside the checkpoint: they are saved after each hand-off,
// not with the checkpoint.
const tracedKey = "rollouts_traced"

// tracesOptions turns the rollouts source's traces on when rollouts.traces is and a traces
// pipeline has the receiver.
func (r *gymReceiver) tracesOptions(rc *RolloutsConfig) *rollouts.TracesOptions {
	if !rc.Traces || r.traces == nil {
		return nil
	}
	opts := &rollouts.TracesOptions{
		Consume:      func(ctx context.Context, td ptrace.Traces) error { return r.traces.ConsumeTraces(ctx, td) },
		ScopeVersion: r.set.BuildInfo.Version,
		Record:       func(sent, dropped int64) { r.self.spans(context.Background(), sent, dropped) },
	}
	if r.store != nil {
		opts.Store = tracedStore{r.store}
	}
	r.self.tb.ReceiverGymRolloutSpansSent.Add(context.Background(), 0, r.self.set)
	r.self.tb.ReceiverGymRolloutSpansDropped.Add(context.Background(), 0, r.self.set)
	return opts
}

// tracedStore keeps the traced offsets under tracedKey in the receiver's storage.
type tracedStore struct{ c storage.Client }

func (s tracedStore) Load(ctx context.Context) ([]byte, error) { return s.c.Get(ctx, tracedKey) }

func (s tracedStore) Save(ctx context.Context, data []byte) error {
	return s.c.Set(ctx, tracedKey, data)
}
