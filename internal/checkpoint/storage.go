package checkpoint

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Client returns the client named name that the storage extension id gives the receiver
// owner. An error names key: the configuration key that named id (storage, files.storage,
// rollouts.storage), so that an operator knows which line to mend.
func Client(ctx context.Context, host component.Host, key string, id, owner component.ID, name string) (storage.Client, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("%s: no extension %q is configured", key, id)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("%s: extension %q is not a storage extension", key, id)
	}
	return se.GetClient(ctx, component.KindReceiver, owner, name)
}

// KeyStore keeps one value under one key of a storage client: the offsets of a source that
// keeps them alone, outside a checkpoint (gym_console's files; the gym receiver's files
// before checkpoints existed). It is a follow.OffsetStore.
type KeyStore struct {
	Client Store
	Key    string
}

// Load returns the value (nil when there is none).
func (s KeyStore) Load(ctx context.Context) ([]byte, error) { return s.Client.Get(ctx, s.Key) }

// Save replaces the value.
func (s KeyStore) Save(ctx context.Context, b []byte) error { return s.Client.Set(ctx, s.Key, b) }
