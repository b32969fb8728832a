package gymfilestorage

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"

	"github.com/gym-telemetry/otelcol-gym/extension/gymfilestorage/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/internal/storagerepair"
)

// checkedStorage checks the directory's databases, then starts contrib's extension on them.
type checkedStorage struct {
	inner     storage.Extension
	cfg       *filestorage.Config
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
}

var _ storage.Extension = (*checkedStorage)(nil)

// Start checks every database of the directory before contrib's extension opens any: the
// components' GetClient, which opens them, comes after every extension started.
func (s *checkedStorage) Start(ctx context.Context, host component.Host) error {
	reports, err := storagerepair.Directory(s.cfg.Directory, s.cfg.Timeout)
	for _, r := range reports {
		s.report(ctx, r)
	}
	if err != nil {
		// The database is left as it was: contrib opens it as it would have without the check.
		s.logger.Error("file_storage: a database could not be checked and rebuilt; it is opened as it is",
			zap.String("directory", s.cfg.Directory), zap.Error(err))
	}
	return s.inner.Start(ctx, host)
}

func (s *checkedStorage) report(ctx context.Context, r storagerepair.Report) {
	switch {
	case r.InUse:
		s.logger.Warn("file_storage: a database is held by another process; not checked", zap.String("file", r.File))
	case r.Damaged():
		s.telemetry.FileStorageRepairs.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", r.Reason)))
		s.telemetry.FileStorageKeysKept.Add(ctx, int64(r.Kept))
		s.logger.Error("file_storage: a damaged database was rebuilt from what reads back; what it held beyond that is lost",
			zap.String("file", r.File), zap.String("reason", r.Reason), zap.String("detail", r.Detail),
			zap.Int("keys_kept", r.Kept), zap.String("original_kept_at", r.Aside))
	default:
		s.logger.Debug("file_storage: database checked", zap.String("file", r.File), zap.Int("keys", r.Kept))
	}
}

// Shutdown stops contrib's extension.
func (s *checkedStorage) Shutdown(ctx context.Context) error {
	err := s.inner.Shutdown(ctx)
	s.telemetry.Shutdown()
	return err
}

// GetClient returns contrib's client, whose panics are returned as errors.
func (s *checkedStorage) GetClient(ctx context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	c, err := s.inner.GetClient(ctx, kind, id, name)
	if err != nil {
		return nil, err
	}
	return &safeClient{inner: c, owner: id, s: s}, nil
}

// safeClient turns a panic of the database under an operation into the operation's error: a
// page damaged while the collector runs fails that operation (counted and logged), not the
// collector. bbolt rolls the transaction back as the panic unwinds.
type safeClient struct {
	inner storage.Client
	owner component.ID
	s     *checkedStorage
}

func (c *safeClient) guard(ctx context.Context, op string, err *error) {
	if p := recover(); p != nil {
		c.s.telemetry.FileStoragePanics.Add(ctx, 1)
		c.s.logger.Error("file_storage: the database panicked; the operation failed (the database is checked at the next start)",
			zap.String("component", c.owner.String()), zap.String("operation", op), zap.Any("panic", p))
		*err = fmt.Errorf("file_storage: %s: the database panicked: %v", op, p)
	}
}

func (c *safeClient) Get(ctx context.Context, key string) (v []byte, err error) {
	defer c.guard(ctx, "get", &err)
	return c.inner.Get(ctx, key)
}

func (c *safeClient) Set(ctx context.Context, key string, value []byte) (err error) {
	defer c.guard(ctx, "set", &err)
	return c.inner.Set(ctx, key, value)
}

func (c *safeClient) Delete(ctx context.Context, key string) (err error) {
	defer c.guard(ctx, "delete", &err)
	return c.inner.Delete(ctx, key)
}

func (c *safeClient) Batch(ctx context.Context, ops ...*storage.Operation) (err error) {
	defer c.guard(ctx, "batch", &err)
	return c.inner.Batch(ctx, ops...)
}

func (c *safeClient) Close(ctx context.Context) (err error) {
	defer c.guard(ctx, "close", &err)
	return c.inner.Close(ctx)
}
