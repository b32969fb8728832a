package gymbearertokenauth

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/bearertokenauthextension"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"google.golang.org/grpc/credentials"

	"github.com/gym-telemetry/otelcol-gym/extension/gymbearertokenauth/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

// contrib is the extension this one wraps: its configuration, validation, token file watch and
// client side are used as they are, so every bearertokenauth configuration means what contrib
// documents.
var contrib = bearertokenauthextension.NewFactory()

// NewFactory returns the bearertokenauth extension's factory.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, contrib.CreateDefaultConfig, create, metadata.ExtensionStability)
}

// authenticator is what contrib's extension is: a server authenticator and both client ones.
type authenticator interface {
	extension.Extension
	extensionauth.Server
	extensionauth.HTTPClient
	extensionauth.GRPCClient
}

func create(ctx context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	inner, err := contrib.Create(ctx, set, cfg)
	if err != nil {
		return nil, err
	}
	a, ok := inner.(authenticator)
	if !ok {
		return nil, fmt.Errorf("bearertokenauth: contrib's extension is not an authenticator (%T)", inner)
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &countedAuth{
		inner: a, telemetry: tb, logs: ratelog.NewLogger(set.Logger, 5, time.Minute),
	}, nil
}

var (
	_ extensionauth.Server     = (*countedAuth)(nil)
	_ extensionauth.HTTPClient = (*countedAuth)(nil)
	_ extensionauth.GRPCClient = (*countedAuth)(nil)
)

// The client side is contrib's, unchanged.

func (a *countedAuth) RoundTripper(base http.RoundTripper) (http.RoundTripper, error) {
	return a.inner.RoundTripper(base)
}

func (a *countedAuth) PerRPCCredentials() (credentials.PerRPCCredentials, error) {
	return a.inner.PerRPCCredentials()
}
