package gymfilestorage

import (
	"context"
	"fmt"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/gym-telemetry/otelcol-gym/extension/gymfilestorage/internal/metadata"
)

// contrib is the extension this one wraps: its configuration, validation and storage are
// used as they are, so every file_storage configuration means what contrib documents.
var contrib = filestorage.NewFactory()

// NewFactory returns the file_storage extension's factory.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, contrib.CreateDefaultConfig, create, metadata.ExtensionStability)
}

func create(ctx context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	c, ok := cfg.(*filestorage.Config)
	if !ok {
		return nil, fmt.Errorf("file_storage: unexpected configuration %T", cfg)
	}
	inner, err := contrib.Create(ctx, set, cfg)
	if err != nil {
		return nil, err
	}
	se, ok := inner.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("file_storage: contrib's extension is not a storage extension (%T)", inner)
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &checkedStorage{inner: se, cfg: c, logger: set.Logger, telemetry: tb}, nil
}
