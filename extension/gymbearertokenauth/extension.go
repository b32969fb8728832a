package gymbearertokenauth

import (
	"context"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/extension/gymbearertokenauth/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

// countedAuth is contrib's authenticator, each refusal of its server side counted and logged.
type countedAuth struct {
	inner     authenticator
	telemetry *metadata.TelemetryBuilder
	logs      *ratelog.Logger
}

func (a *countedAuth) Start(ctx context.Context, host component.Host) error {
	return a.inner.Start(ctx, host)
}

func (a *countedAuth) Shutdown(ctx context.Context) error {
	err := a.inner.Shutdown(ctx)
	a.telemetry.Shutdown()
	return err
}

// Authenticate is contrib's; a refusal is counted and logged with the peer that the
// receiver's server put in the context (confighttp and configgrpc do before authenticating).
func (a *countedAuth) Authenticate(ctx context.Context, headers map[string][]string) (context.Context, error) {
	out, err := a.inner.Authenticate(ctx, headers)
	if err == nil {
		return out, nil
	}
	a.telemetry.BearertokenauthRefused.Add(ctx, 1)
	peer := ""
	if addr := client.FromContext(ctx).Addr; addr != nil {
		peer = addr.String()
	}
	a.logs.Warn("bearertokenauth: a request was refused", zap.String("peer", peer), zap.Error(err))
	return out, err
}
