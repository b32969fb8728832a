//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.yaml.in/yaml/v3"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// exposition reads the prometheus exporter's text exposition.
func exposition(t *testing.T, port int) string {
	t.Helper()
	text, err := harness.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	require.NoError(t, err)
	return text
}

// seriesOf returns the label sets of metric's samples in an exposition, as name -> value.
func seriesOf(text, metric string) []map[string]string {
	var out []map[string]string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, metric+"{") {
			labels, _ := harness.ParseSample(line[len(metric):])
			out = append(out, labels)
		}
	}
	return out
}

// startupStageOTLP is one Gym SDK export: a process whose resource is server `head` records
// the startup stage of server `math`.
func startupStageOTLP() pmetric.Metrics {
	md := pmetric.NewMetrics()
	m := sdkScope(md, "", map[string]any{
		"service.name": "nemo-gym/head-sdk", "service.instance.id": "e2e-labels-head-sdk", "nemo.run.id": "e2e-labels",
		"nemo.gym.server.name": "head", "nemo.gym.server.type": "orchestrator",
	}).Metrics().AppendEmpty()
	m.SetName("gym.server.startup_stage_duration_ms")
	m.SetUnit("ms")
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := h.DataPoints().AppendEmpty()
	now := pcommon.NewTimestampFromTime(time.Now())
	dp.SetStartTimestamp(now - pcommon.Timestamp(time.Minute))
	dp.SetTimestamp(now)
	dp.Attributes().PutStr("nemo.gym.startup.stage", "warmup")
	dp.Attributes().PutStr("nemo.gym.server.name", "math")
	dp.Attributes().PutStr("nemo.gym.server.type", "resources_servers")
	dp.Attributes().PutBool("nemo.gym.server.worker", false)
	bounds := []float64{100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000}
	dp.ExplicitBounds().FromRaw(bounds)
	counts := make([]uint64, len(bounds)+1)
	counts[3] = 1
	dp.BucketCounts().FromRaw(counts)
	dp.SetCount(1)
	dp.SetSum(800)
	return md
}

// TestDefaultConfigKeepsDataPointAttributes: in the shipped configuration a resource attribute
// never overwrites a data-point attribute of the same name. A process whose resource is
// server `head` records the startup stage of server `math`, as events and over OTLP; the
// exporter must say `math` (a config that copies nemo.gym.server.name from the resource into
// every series, as resource_constant_labels did, says `head`). The run and host stay
// selectable as labels; the resource's own server name is on target_info.
func TestDefaultConfigKeepsDataPointAttributes(t *testing.T) {
	t.Parallel()
	col, ports := harness.StartDefaultCollector(t)
	body := `{"event":"resource","attributes":{"service.name":"nemo-gym/head","service.instance.id":"e2e-labels-head","nemo.run.id":"e2e-labels","nemo.gym.server.name":"head","nemo.gym.server.type":"orchestrator","host.name":"node1"}}
{"event":"server.startup_stage","stage":"warmup","server_name":"math","server_type":"resources_servers","duration_ms":812.5}
`
	status, ans := col.PostEvents(t, body)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 2, ans.Accepted, "%+v", ans)
	postOTLP(t, fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP), startupStageOTLP())

	const metric = "gym_server_startup_stage_duration_ms_count"
	var got []map[string]string
	err := harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		got = seriesOf(exposition(t, ports.Prometheus), metric)
		if len(got) < 2 {
			return harness.ErrNotYet
		}
		return nil
	})
	require.NoError(t, err, "%s: %v", metric, got)
	jobs := map[string]bool{}
	for _, s := range got {
		jobs[s["job"]] = true
		require.Equal(t, "math", s["nemo_gym_server_name"], "the data point's server, not the resource's: %v", s)
		require.Equal(t, "resources_servers", s["nemo_gym_server_type"], "%v", s)
		require.Equal(t, "warmup", s["nemo_gym_startup_stage"], "%v", s)
		require.Equal(t, "e2e-labels", s["nemo_run_id"], "the run stays a label: %v", s)
	}
	require.True(t, jobs["nemo-gym/head"] && jobs["nemo-gym/head-sdk"], "events and OTLP: %v", got)

	// The resource's own server name and type are on target_info, for joins on job/instance.
	text := exposition(t, ports.Prometheus)
	var heads int
	for _, s := range seriesOf(text, "target_info") {
		if strings.HasPrefix(s["job"], "nemo-gym/head") {
			heads++
			require.Equal(t, "head", s["nemo_gym_server_name"], "%v", s)
			require.Equal(t, "orchestrator", s["nemo_gym_server_type"], "%v", s)
		}
	}
	require.Equal(t, 2, heads, "target_info of both processes")
}

// TestTwoGymReceiversStayApart: the collector's telemetry endpoint keeps the line counters and
// the standard receiver metrics of two gym receivers apart by their receiver attribute.
func TestTwoGymReceiversStayApart(t *testing.T) {
	t.Parallel()
	var portB int
	col, ports := harness.StartCollector(t, func(p harness.Ports) []string {
		portB = p.OTLPHTTP // a free port of this attempt
		return []string{harness.Config(t, "two-receivers.yaml", harness.Data{P: p, X: map[string]any{"gymB": portB}})}
	})
	colB := &harness.Collector{GymURL: fmt.Sprintf("http://127.0.0.1:%d", portB)}
	res := `{"event":"resource","attributes":{"service.name":"nemo-gym/math","service.instance.id":"e2e-two-0"}}` + "\n"
	lag := `{"event":"event_loop.lag","loop":"main","lag_ms":1.5}` + "\n"
	status, _ := col.PostEvents(t, res+lag+lag+lag) // gym/a: 4 lines
	require.Equal(t, http.StatusOK, status)
	status, _ = colB.PostEvents(t, res+lag+`{"event":"event_loop.lag","loop":"main"}`+"\n") // gym/b: 2 lines, 1 rejected
	require.Equal(t, http.StatusOK, status)

	value := func(text, metric string, want map[string]string) (float64, bool) {
		for _, line := range strings.Split(text, "\n") {
			if !strings.HasPrefix(line, metric+"{") {
				continue
			}
			labels := seriesOf(line, metric)[0]
			match := true
			for k, v := range want {
				match = match && labels[k] == v
			}
			if match {
				var f float64
				_, err := fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &f)
				return f, err == nil
			}
		}
		return 0, false
	}
	err := harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		text := exposition(t, ports.Telemetry)
		checks := []struct {
			metric string
			labels map[string]string
			want   float64
		}{
			{"otelcol_receiver_gym_lines_accepted", map[string]string{"receiver": "gym/a"}, 4},
			{"otelcol_receiver_gym_lines_accepted", map[string]string{"receiver": "gym/b"}, 2},
			{"otelcol_receiver_gym_lines_rejected", map[string]string{"receiver": "gym/b", "reason": "missing_field"}, 1},
		}
		for _, c := range checks {
			if v, ok := value(text, c.metric, c.labels); !ok || v != c.want {
				return fmt.Errorf("%s%v = %v (found %v), want %v", c.metric, c.labels, v, ok, c.want)
			}
		}
		for _, r := range []string{"gym/a", "gym/b"} {
			if v, ok := value(text, "otelcol_receiver_accepted_metric_points", map[string]string{"receiver": r, "transport": "http"}); !ok || v <= 0 {
				return fmt.Errorf("otelcol_receiver_accepted_metric_points{receiver=%s,transport=http} = %v (found %v)", r, v, ok)
			}
		}
		// Every reason's series exists from the start, at 0 for gym/a, which rejected nothing.
		if v, ok := value(text, "otelcol_receiver_gym_lines_rejected", map[string]string{"receiver": "gym/a"}); !ok || v != 0 {
			return fmt.Errorf("gym/a rejected nothing, but otelcol_receiver_gym_lines_rejected is %v (found %v)", v, ok)
		}
		return nil
	})
	require.NoError(t, err)
}

// TestShippedConstantLabelsAreNoPointAttributes: every resource attribute a shipped
// configuration copies onto every series (resource_constant_labels of the prometheus exporter
// or of remote write, in config/ and deploy/) is a data-point attribute of no schema
// instrument, so the exporter can never overwrite one with it (two series of
// gym.server.startup_stage_duration_ms that differ by nemo.gym.server.name would become one).
func TestShippedConstantLabelsAreNoPointAttributes(t *testing.T) {
	t.Parallel()
	type exporters map[string]struct {
		ResourceConstantLabels struct {
			Included []string `yaml:"included"`
		} `yaml:"resource_constant_labels"`
		ResourceToTelemetry struct {
			Enabled bool `yaml:"enabled"`
		} `yaml:"resource_to_telemetry_conversion"`
	}
	pointAttrs := map[string]string{}
	for _, in := range schema.Instruments {
		for _, a := range in.Attrs {
			pointAttrs[schema.Attr(a.ID).Key] = in.Name
		}
	}
	checked := map[string]bool{}
	for _, dir := range []string{"config", "deploy"} {
		err := filepath.WalkDir(filepath.Join(harness.Root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var cfg struct {
				Exporters exporters `yaml:"exporters"`
				Config    struct {
					Exporters exporters `yaml:"exporters"`
				} `yaml:"config"` // Helm values
			}
			if yaml.Unmarshal(data, &cfg) != nil { // not a collector configuration
				return nil
			}
			rel, _ := filepath.Rel(harness.Root, path)
			for _, exps := range []exporters{cfg.Exporters, cfg.Config.Exporters} {
				for name, e := range exps {
					require.False(t, e.ResourceToTelemetry.Enabled, "%s: %s: resource_to_telemetry_conversion copies every resource attribute", rel, name)
					for _, key := range e.ResourceConstantLabels.Included {
						require.NotContains(t, key, "*", "%s: %s: a pattern may match a data-point attribute", rel, name)
						in, used := pointAttrs[key]
						require.False(t, used, "%s: %s: resource_constant_labels %s is a data-point attribute of %s", rel, name, key, in)
					}
					if len(e.ResourceConstantLabels.Included) > 0 {
						checked[rel+" "+name] = true
					}
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	for _, want := range []string{
		"config/otelcol-gym.yaml prometheus",
		"deploy/gateway.yaml prometheus_remote_write",
		"deploy/slurm/direct-remote-write.yaml prometheus_remote_write",
	} {
		require.True(t, checked[want], "%s not checked (checked: %v)", want, checked)
	}
}
