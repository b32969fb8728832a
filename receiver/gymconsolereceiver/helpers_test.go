package gymconsolereceiver

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gym-telemetry/otelcol-gym/internal/follow"
	"github.com/gym-telemetry/otelcol-gym/internal/pdatatest"
)

// The tests' helpers: a receiver started on sinks, the sample, in-memory storage, counters.

var update = flag.Bool("update", false, "rewrite the golden files")

const sample = "../../testdata/console/gym-server-stdout.log"

type sinks struct {
	metrics *consumertest.MetricsSink
	traces  *consumertest.TracesSink
	logs    *consumertest.LogsSink
}

// start runs a receiver with all three signals on cfg.
func start(t *testing.T, cfg *Config, set receiver.Settings) (sinks, func()) {
	return startOn(t, cfg, set, componenttest.NewNopHost())
}
func startOn(t *testing.T, cfg *Config, set receiver.Settings, host component.Host) (sinks, func()) {
	t.Helper()
	s := sinks{new(consumertest.MetricsSink), new(consumertest.TracesSink), new(consumertest.LogsSink)}
	f := NewFactory()
	ctx := context.Background()
	m, err := f.CreateMetrics(ctx, set, cfg, s.metrics)
	require.NoError(t, err)
	tr, err := f.CreateTraces(ctx, set, cfg, s.traces)
	require.NoError(t, err)
	l, err := f.CreateLogs(ctx, set, cfg, s.logs)
	require.NoError(t, err)
	require.Same(t, m, tr, "one receiver serves the three signals")
	require.Same(t, m, l)
	for _, c := range []component.Component{m, tr, l} {
		require.NoError(t, c.Start(ctx, host))
	}
	return s, func() {
		for _, c := range []component.Component{m, tr, l} {
			require.NoError(t, c.Shutdown(ctx))
		}
	}
}

// registered returns the receiver registered in the shared map for cfg, nil when there is none.
func registered(t *testing.T, cfg *Config) *consoleReceiver {
	t.Helper()
	c, ok := receivers.Load(cfg)
	if !ok {
		return nil
	}
	return c.Unwrap()
}

func filesConfig(include string) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Files = configoptional.Some(FilesConfig{Config: follow.Config{Include: []string{include}, StartAt: follow.StartAtBeginning, PollInterval: 20 * time.Millisecond}, MaxFiles: 8})
	return cfg
}

func copySample(t *testing.T, dir string) string {
	b, err := os.ReadFile(sample)
	require.NoError(t, err)
	p := filepath.Join(dir, "math_with_judge.log")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}
func sampleLines(t *testing.T) [][]byte {
	b, err := os.ReadFile(sample)
	require.NoError(t, err)
	var out [][]byte
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, b[start:i])
			start = i + 1
		}
	}
	if start < len(b) {
		out = append(out, b[start:])
	}
	return out
}
func find(t *testing.T, md pmetric.Metrics, name string) pmetric.Metric {
	t.Helper()
	return pdatatest.Metric(t, md, name)
}
func point(t *testing.T, md pmetric.Metrics, name, key, value string) pmetric.NumberDataPoint {
	t.Helper()
	dps := find(t, md, name).Sum().DataPoints()
	for i := 0; i < dps.Len(); i++ {
		if v, ok := dps.At(i).Attributes().Get(key); ok && v.Str() == value {
			return dps.At(i)
		}
	}
	t.Fatalf("no %s point with %s=%s", name, key, value)
	return pmetric.NumberDataPoint{}
}

// newTelemetry is a test telemetry, shut down when the test ends.
func newTelemetry(t *testing.T) *componenttest.Telemetry {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	return tt
}

// counter is the total of a receiver metric's points (0 before it has any).
func counter(tt *componenttest.Telemetry, name string) int64 {
	m, err := tt.GetMetric(name)
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		n += dp.Value
	}
	return n
}
