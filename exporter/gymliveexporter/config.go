package gymliveexporter

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"go.opentelemetry.io/collector/config/confighttp"

	"github.com/gym-telemetry/otelcol-gym/internal/live"
)

// DefaultEndpoint is where the page is served unless configured: loopback only.
const DefaultEndpoint = "127.0.0.1:8890"

// Config is the gymlive exporter's configuration (docs/live.md).
type Config struct {
	// The page's HTTP server: endpoint, TLS, auth (auth: authenticator: ...), timeouts.
	confighttp.ServerConfig `mapstructure:",squash"`
	// MaxConnections bounds the connections served at once; the ones over it wait in the
	// listen backlog.
	MaxConnections int `mapstructure:"max_connections"`
	// MaxConcurrentRequests bounds the requests served at once; the ones over it are answered
	// 503 at once.
	MaxConcurrentRequests int `mapstructure:"max_concurrent_requests"`
	// SelfMetrics is the loopback URL of the collector's own metrics (service.telemetry's
	// Prometheus endpoint) for the health panel; empty: no health panel.
	SelfMetrics string `mapstructure:"self_metrics"`
	// SelfMetricsTimeout bounds one read of SelfMetrics.
	SelfMetricsTimeout time.Duration `mapstructure:"self_metrics_timeout"`
	live.Limits        `mapstructure:",squash"`
}

func createDefaultConfig() *Config {
	srv := confighttp.NewDefaultServerConfig()
	srv.NetAddr.Endpoint = DefaultEndpoint
	srv.ReadHeaderTimeout = 10 * time.Second
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.MaxRequestBodySize = 1 << 10 // the page takes no body
	return &Config{
		ServerConfig: srv, MaxConnections: 64, MaxConcurrentRequests: 16,
		SelfMetrics: "http://127.0.0.1:8888/metrics", SelfMetricsTimeout: 2 * time.Second,
		Limits: live.DefaultLimits(),
	}
}

// Validate names the key of a bad value.
func (c *Config) Validate() error {
	var errs []error
	if c.NetAddr.Endpoint == "" {
		errs = append(errs, errors.New("endpoint must not be empty"))
	}
	if c.MaxConnections < 1 {
		errs = append(errs, fmt.Errorf("max_connections must be at least 1, got %d", c.MaxConnections))
	}
	if c.MaxConcurrentRequests < 1 {
		errs = append(errs, fmt.Errorf("max_concurrent_requests must be at least 1, got %d", c.MaxConcurrentRequests))
	}
	if c.SelfMetrics != "" {
		if err := checkLoopbackURL(c.SelfMetrics); err != nil {
			errs = append(errs, fmt.Errorf("self_metrics: %w", err))
		}
		if c.SelfMetricsTimeout <= 0 {
			errs = append(errs, fmt.Errorf("self_metrics_timeout must be positive, got %s", c.SelfMetricsTimeout))
		}
	}
	return errors.Join(append(errs, c.Check())...)
}

// checkLoopbackURL: the collector's own metrics are its own process's, read on loopback; the
// exporter sends no request anywhere else.
func checkLoopbackURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("want an http(s) URL, got %q", s)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("want a loopback host (127.0.0.1, ::1, localhost), got %q", host)
	}
	return nil
}
