package checkpoint

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// Client returns the client named name that the storage extension id gives the component
// owner (a receiver, or the kind given). An error names key: the configuration key that named
// id (storage, files.storage, rollouts.storage), so that an operator knows which line to mend.
func Client(ctx context.Context, host component.Host, key string, id, owner component.ID, name string, kind ...component.Kind) (storage.Client, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("%s: no extension %q is configured", key, id)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("%s: extension %q is not a storage extension", key, id)
	}
	k := component.KindReceiver
	if len(kind) > 0 {
		k = kind[0]
	}
	return se.GetClient(ctx, k, owner, name)
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

// Legacy is where a source kept its offsets alone before checkpoints: the storage client named
// Client, under Key. Its Section of the checkpoint starts from them once, when there is no
// checkpoint yet.
type Legacy struct {
	Section, Client, Key string
}

// RestoreLegacy gives l's section the offsets kept at l (in the storage extension id, for the
// receiver owner; key names the configuration key of id), when Restore found no checkpoint:
// the migration from before checkpoints, in the one place that owns the record. Offsets that
// cannot be read are left behind (the source follows start_at).
func (c *Checkpointer) RestoreLegacy(ctx context.Context, host component.Host, key string, id, owner component.ID, l Legacy, logger *zap.Logger) error {
	client, err := Client(ctx, host, key, id, owner, l.Client)
	if err != nil {
		return err
	}
	defer func() { _ = client.Close(ctx) }()
	b, err := (KeyStore{Client: client, Key: l.Key}).Load(ctx)
	if err != nil || len(b) == 0 {
		return nil
	}
	c.setLegacy(l.Section, b)
	logger.Info("checkpoint: no checkpoint yet; resuming from the offsets kept before checkpoints", zap.String("section", l.Section), zap.String("key", l.Key))
	return nil
}
