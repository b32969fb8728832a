//go:build linux

package harness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A real Prometheus (Debian's) and its readers.

// DefaultOverride turns config/otelcol-gym.yaml (the shipped default, which `make run`
// starts) into one that runs beside other tests: free loopback ports, a short collection
// interval (default-override.yaml). The collector merges --config files in order.
func DefaultOverride(t *testing.T, p Ports) string {
	t.Helper()
	return Config(t, "default-override.yaml", Data{P: p})
}

// StartDefaultCollector starts otelcol-gym with config/otelcol-gym.yaml on free ports, its
// storage in a directory of its own; more are further configurations merged after them.
func StartDefaultCollector(t *testing.T, more ...string) (*Collector, Ports) {
	t.Helper()
	return StartDefaultCollectorWith(t, func(Ports) []string { return more })
}

// StartDefaultCollectorWith is StartDefaultCollector with overrides that name the ports.
func StartDefaultCollectorWith(t *testing.T, more func(Ports) []string) (*Collector, Ports) {
	t.Helper()
	storage := t.TempDir()
	return StartCollector(t, func(p Ports) []string {
		return append([]string{
			filepath.Join(Root, "config", "otelcol-gym.yaml"),
			DefaultOverride(t, p),
			"extensions:\n  file_storage:\n    directory: " + storage + "\n" +
				"exporters:\n  file/traces:\n    path: " + filepath.Join(storage, "otel-traces.jsonl") +
				"\n  file/logs:\n    path: " + filepath.Join(storage, "otel-logs.jsonl") + "\n",
		}, more(p)...)
	})
}

// PrometheusBinary finds Debian's prometheus; without it the test fails in CI (.ci/run
// installs it) and is skipped elsewhere.
func PrometheusBinary(t *testing.T) string {
	t.Helper()
	if p := FindPrometheus(""); p != "" {
		return p
	}
	Missing(t, "prometheus is not installed: `apt-get install prometheus` (.ci/run does it), or set PROMETHEUS_BIN")
	return ""
}

// Missing ends a test that needs a tool which is not installed: it fails in CI (CI=true, where
// .ci/run installs every tool) and is skipped elsewhere.
func Missing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// StartPrometheus starts a Prometheus that scrapes target every second, on a free loopback
// port with its own configuration and storage in a temporary directory; it returns its URL.
func StartPrometheus(t *testing.T, target string) string {
	t.Helper()
	return StartPrometheusWith(t, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: otelcol-gym
    # keep job and instance as the exporter sets them (service.name, service.instance.id)
    honor_labels: true
    static_configs:
      - targets: [%q]
`, target), nil)
}

// StartPrometheusWith starts a Prometheus on configuration cfg, with files (name -> content,
// e.g. rule files) beside it, on a free loopback port; it returns its URL.
func StartPrometheusWith(t *testing.T, cfg string, files map[string]string) string {
	t.Helper()
	return startPrometheus(t, cfg, files)
}

// startPrometheus starts a Prometheus with flags added to its own, and starts it again on
// another port when the one picked was taken in the meantime.
func startPrometheus(t *testing.T, cfg string, files map[string]string, flags ...string) string {
	t.Helper()
	bin := PrometheusBinary(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	for attempt := 1; ; attempt++ {
		port := Port(t)
		p := StartProcess(t, "prometheus", append([]string{bin,
			"--config.file=" + cfgPath,
			"--storage.tsdb.path=" + filepath.Join(dir, fmt.Sprintf("data-%d", attempt)),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
			"--log.level=warn",
		}, flags...)...)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		err := p.WaitReady(base+"/-/ready", 60*time.Second)
		if err == nil {
			t.Cleanup(func() { _ = p.Stop(15 * time.Second) })
			return base
		}
		if attempt < StartAttempts && p.Exited() && AddressInUse(p) {
			t.Logf("prometheus: port %d was taken, starting again on another (attempt %d)", port, attempt+1)
			continue
		}
		t.Fatal(err)
	}
}

// PromAPI GETs path (with its query) from Prometheus' HTTP API at base and decodes the data of
// a successful answer into data.
func PromAPI(base, path string, data any) error {
	resp, err := http.Get(base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var ans struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return err
	}
	if ans.Status != "success" {
		return fmt.Errorf("%s: %s %s", path, ans.Status, ans.Error)
	}
	return json.Unmarshal(ans.Data, data)
}

// promResult runs query and decodes its result, which must be of type kind (vector, matrix).
func promResult(base, query, kind string, result any) error {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := PromAPI(base, "/api/v1/query?query="+url.QueryEscape(query), &data); err != nil {
		return fmt.Errorf("query %s: %w", query, err)
	}
	if data.ResultType != kind {
		return fmt.Errorf("query %s: result type %s", query, data.ResultType)
	}
	return json.Unmarshal(data.Result, result)
}

// PromQuery runs an instant query and returns its vector as "labels" -> value, labels
// written as {a="x",b="y"} sorted ({} for none).
func PromQuery(base, query string) (map[string]float64, error) {
	var result []struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	if err := promResult(base, query, "vector", &result); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, r := range result {
		keys := make([]string, 0, len(r.Metric))
		for k := range r.Metric {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%q", k, r.Metric[k])
		}
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %v", query, r.Value[1])
		}
		out["{"+strings.Join(parts, ",")+"}"] = v
	}
	return out, nil
}

// StartRemoteWritePrometheus starts a Prometheus that only receives remote writes, with an
// out-of-order window: gateways are interchangeable, so two collections of one agent may
// reach it through two gateways in either order (docs/deployment.md, Backend).
func StartRemoteWritePrometheus(t *testing.T) string {
	t.Helper()
	return startPrometheus(t, `global:
  evaluation_interval: 1s
storage:
  tsdb:
    out_of_order_time_window: 30m
`, nil, "--web.enable-remote-write-receiver")
}

// PromSeries is one series' raw samples as Prometheus holds them.
type PromSeries struct {
	Labels  map[string]string
	Samples []float64 // in time order
}

// PromRaw returns every raw sample of metric in the last 30 minutes, by series.
func PromRaw(base, metric string) ([]PromSeries, error) { return PromMatrix(base, metric+"[30m]") }

// PromMatrix runs a range-vector query (SELECTOR[RANGE]) and returns its raw samples by series.
func PromMatrix(base, query string) ([]PromSeries, error) {
	var result []struct {
		Metric map[string]string `json:"metric"`
		Values [][2]any          `json:"values"`
	}
	if err := promResult(base, query, "matrix", &result); err != nil {
		return nil, err
	}
	var out []PromSeries
	for _, r := range result {
		s := PromSeries{Labels: r.Metric}
		for _, v := range r.Values {
			str, _ := v[1].(string)
			f, err := strconv.ParseFloat(str, 64)
			if err != nil {
				return nil, fmt.Errorf("sample %v", v)
			}
			s.Samples = append(s.Samples, f)
		}
		out = append(out, s)
	}
	return out, nil
}
