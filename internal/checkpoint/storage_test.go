package checkpoint

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
)

type hostWith map[component.ID]component.Component

func (h hostWith) GetExtensions() map[component.ID]component.Component { return h }

// Client names the configuration key of a missing extension, or of one that stores nothing.
func TestClientErrorsNameTheKey(t *testing.T) {
	owner := component.MustNewID("gym")
	ctx := context.Background()
	_, err := Client(ctx, componenttest.NewNopHost(), "rollouts.storage", component.MustNewID("file_storage"), owner, "")
	assert.EqualError(t, err, `rollouts.storage: no extension "file_storage" is configured`)

	host := hostWith{component.MustNewID("zpages"): componenttest.NewNopHost().GetExtensions()[component.ID{}]}
	_, err = Client(ctx, host, "files.storage", component.MustNewID("zpages"), owner, "files")
	assert.EqualError(t, err, `files.storage: extension "zpages" is not a storage extension`)
}

// KeyStore keeps one value under its key, beside the others of the client.
func TestKeyStore(t *testing.T) {
	ctx := context.Background()
	m := storagetest.NewMem(nil)
	ks := KeyStore{Client: m, Key: "file_offsets"}
	b, err := ks.Load(ctx)
	require.NoError(t, err)
	assert.Nil(t, b)
	require.NoError(t, ks.Save(ctx, []byte("x")))
	require.NoError(t, m.Set(ctx, "other", []byte("y")))
	b, err = ks.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, "x", string(b))
}
