package gymbearertokenauth

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/bearertokenauthextension"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/extension/gymbearertokenauth/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/extension/gymbearertokenauth/internal/metadatatest"
	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

// TestRefusalsCountedAndLogged: contrib's authenticator from a token file; a request with the
// token passes, uncounted; one without it, with another or with another scheme is refused as
// contrib refuses it, counted, and logged with the peer the server put in the context, 5 lines
// a minute, then one with the count of those held back. The client side is contrib's.
func TestRefusalsCountedAndLogged(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	cfg := NewFactory().CreateDefaultConfig().(*bearertokenauthextension.Config)
	cfg.Filename = tokenFile
	cfg.WaitForTokenFile = true // read at Start, as the recipes do

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	core, logs := observer.New(zapcore.InfoLevel)
	set := extensiontest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Logger = zap.New(core)
	ext, err := NewFactory().Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	auth := ext.(extensionauth.Server)
	now := time.Now()
	ext.(*countedAuth).logs.Now = func() time.Time { return now }

	peer := client.NewContext(context.Background(), client.Info{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 4242}})
	_, err = auth.Authenticate(peer, map[string][]string{"Authorization": {"Bearer s3cret"}})
	require.NoError(t, err)
	for _, h := range []map[string][]string{{}, {"Authorization": {"Bearer other"}}, {"Authorization": {"s3cret"}}} {
		_, err = auth.Authenticate(peer, h)
		require.Error(t, err, "%v", h)
	}
	for range 4 {
		_, err = auth.Authenticate(peer, nil)
		require.Error(t, err)
	}
	metadatatest.AssertEqualBearertokenauthRefused(t, tel, []metricdata.DataPoint[int64]{{Value: 7}},
		metricdatatest.IgnoreTimestamp())
	entries := logs.FilterMessage("bearertokenauth: a request was refused").All()
	require.Len(t, entries, 5, "5 a minute")
	assert.Equal(t, "127.0.0.9:4242", entries[0].ContextMap()["peer"])
	now = now.Add(time.Minute)
	_, _ = auth.Authenticate(peer, nil)
	entries = logs.FilterMessage("bearertokenauth: a request was refused").All()
	require.Len(t, entries, 6)
	assert.EqualValues(t, 2, entries[5].ContextMap()[ratelog.HeldField])

	// The client side: contrib's, adding the token to a request.
	rt, err := ext.(extensionauth.HTTPClient).RoundTripper(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		assert.Equal(t, "Bearer s3cret", r.Header.Get("Authorization"))
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	}))
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	_, err = ext.(extensionauth.GRPCClient).PerRPCCredentials()
	require.NoError(t, err)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
