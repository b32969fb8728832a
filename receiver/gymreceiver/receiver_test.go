package gymreceiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/gym-telemetry/otelcol-gym/internal/transport"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadata"
)

var update = flag.Bool("update", false, "rewrite the golden files (then check them by hand against the spec)")

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startReceiver starts a gym receiver on a free loopback port; cfgFn may change its config.
func startReceiver(t *testing.T, cfgFn func(*Config)) (string, *consumertest.MetricsSink, func()) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	addr := freeAddr(t)
	cfg.HTTP.GetOrInsertDefault().NetAddr.Endpoint = addr
	cfg.CollectionInterval = time.Hour // collections in these tests come from Shutdown
	cfg.ExpireAfter = 2 * time.Hour
	if cfgFn != nil {
		cfgFn(cfg)
	}
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.MetricsSink)
	stop := started(t, receivertest.NewNopSettings(metadata.Type), cfg, sink)
	return "http://" + addr + transport.EventsPath, sink, stop
}

// started creates the receiver with set and cfg and starts it; stop shuts it down, once,
// and at the latest when the test ends.
func started(t *testing.T, set receiver.Settings, cfg *Config, next consumer.Metrics) (stop func()) {
	t.Helper()
	r, err := NewFactory().CreateMetrics(context.Background(), set, cfg, next)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			require.NoError(t, r.Shutdown(context.Background()))
		}
	}
	t.Cleanup(stop)
	return stop
}

// assertJSONError checks an HTTP error answer: the status, and a JSON body that says why.
func assertJSONError(t *testing.T, resp *http.Response, status int) {
	t.Helper()
	defer resp.Body.Close()
	assert.Equal(t, status, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var e map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	assert.NotEmpty(t, e["error"])
}

// matchesGolden compares got with the golden file expected (writes it instead under -update);
// timestamps, and the order of points and resources, aside.
func matchesGolden(t *testing.T, expected string, got pmetric.Metrics, more ...pmetrictest.CompareMetricsOption) {
	t.Helper()
	if *update {
		require.NoError(t, golden.WriteMetrics(t, expected, got))
		return
	}
	want, err := golden.ReadMetrics(expected)
	require.NoError(t, err)
	opts := append([]pmetrictest.CompareMetricsOption{pmetrictest.IgnoreTimestamp(), pmetrictest.IgnoreStartTimestamp(),
		pmetrictest.IgnoreMetricDataPointsOrder(), pmetrictest.IgnoreResourceMetricsOrder()}, more...)
	require.NoError(t, pmetrictest.CompareMetrics(want, got, opts...))
}

func post(t *testing.T, url string, body []byte, header map[string]string) (int, transport.Answer, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-ndjson")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var ans transport.Answer
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusBadRequest {
		_ = json.Unmarshal(raw, &ans)
	}
	return resp.StatusCode, ans, resp.Header
}

func lastMetrics(t *testing.T, sink *consumertest.MetricsSink) pmetric.Metrics {
	t.Helper()
	all := sink.AllMetrics()
	require.NotEmpty(t, all, "nothing was exported")
	return all[len(all)-1]
}

// TestGolden feeds each testdata/*.jsonl through the receiver's HTTP endpoint and compares
// what the receiver exports at shutdown with testdata/<name>.expected.yaml.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(f)
			require.NoError(t, err)
			url, sink, stop := startReceiver(t, nil)
			status, ans, _ := post(t, url, body, nil)
			require.Equal(t, http.StatusOK, status, "%+v", ans)
			assert.Zero(t, ans.Rejected, "%+v", ans.Errors)
			stop()
			matchesGolden(t, filepath.Join("testdata", name+".expected.yaml"), lastMetrics(t, sink))
		})
	}
}

func TestHTTPAnswers(t *testing.T) {
	url, _, _ := startReceiver(t, nil)
	good := `{"event":"sandbox.create_retry","provider":"docker"}`
	bad := `{"event":"sandbox.create_retry"}`
	unknown := `{"event":"sandbox.teleport","provider":"docker"}`

	t.Run("mixed body is 200 with line numbers over every line", func(t *testing.T) {
		body := strings.Join([]string{good, "", bad, unknown, "   ", good}, "\n")
		status, ans, _ := post(t, url, []byte(body), nil)
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, int64(2), ans.Accepted)
		assert.Equal(t, int64(1), ans.Rejected)
		assert.Equal(t, int64(1), ans.Unknown)
		require.Len(t, ans.Errors, 1)
		assert.Equal(t, 3, ans.Errors[0].Line)
		assert.Contains(t, ans.Errors[0].Error, "provider")
	})
	t.Run("only bad lines is 400", func(t *testing.T) {
		status, ans, _ := post(t, url, []byte(bad+"\n"+bad+"\n"), nil)
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Equal(t, int64(2), ans.Rejected)
		assert.Len(t, ans.Errors, 2)
	})
	t.Run("only unknown lines is 200", func(t *testing.T) {
		status, ans, _ := post(t, url, []byte(unknown), nil)
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, int64(1), ans.Unknown)
	})
	t.Run("errors list the first ten", func(t *testing.T) {
		body := strings.Repeat(bad+"\n", 25) + good
		status, ans, _ := post(t, url, []byte(body), nil)
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, int64(25), ans.Rejected)
		require.Len(t, ans.Errors, 10)
		assert.Equal(t, 10, ans.Errors[9].Line)
	})
	t.Run("gzip", func(t *testing.T) {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write([]byte(good + "\n" + good))
		require.NoError(t, zw.Close())
		status, ans, _ := post(t, url, b.Bytes(), map[string]string{"Content-Encoding": "gzip"})
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, int64(2), ans.Accepted)
	})
	t.Run("zstd", func(t *testing.T) {
		enc, err := zstd.NewWriter(nil)
		require.NoError(t, err)
		body := enc.EncodeAll([]byte(good+"\n"+good+"\n"+good), nil)
		require.NoError(t, enc.Close())
		status, ans, _ := post(t, url, body, map[string]string{"Content-Encoding": "zstd"})
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, int64(3), ans.Accepted)
	})
	t.Run("a broken gzip body is a JSON 400", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("not gzip"))
		require.NoError(t, err)
		req.Header.Set("Content-Encoding", "gzip")
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		assertJSONError(t, resp, http.StatusBadRequest)
	})
	t.Run("GET is 405", func(t *testing.T) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	})
	t.Run("text/plain from a foreign origin is a JSON 415", func(t *testing.T) {
		// What a web page can send to 127.0.0.1 without a CORS preflight.
		status, _, h := post(t, url, []byte(good), map[string]string{"Content-Type": "text/plain;charset=UTF-8", "Origin": "https://evil.example"})
		assert.Equal(t, http.StatusUnsupportedMediaType, status)
		assert.Equal(t, "application/json", h.Get("Content-Type"))
	})
	t.Run("an unknown path is a JSON 404", func(t *testing.T) {
		resp, err := http.Post(strings.TrimSuffix(url, transport.EventsPath)+"/v1/metrics", "application/x-ndjson", strings.NewReader(good))
		require.NoError(t, err)
		assertJSONError(t, resp, http.StatusNotFound)
	})
}

// A body over the limit is refused whole: 413, and none of its lines count.
func TestHTTPBodyLimit(t *testing.T) {
	url, sink, stop := startReceiver(t, func(c *Config) { c.HTTP.Get().MaxRequestBodySize = 4096 })
	line := `{"event":"sandbox.create_retry","provider":"docker"}` + "\n"
	status, _, _ := post(t, url, []byte(strings.Repeat(line, 200)), nil)
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	// A gzip body small on the wire but over the limit once decoded is refused too.
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(strings.Repeat(line, 200)))
	require.NoError(t, zw.Close())
	require.Less(t, b.Len(), 4096)
	status, _, _ = post(t, url, b.Bytes(), map[string]string{"Content-Encoding": "gzip"})
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	status, ans, _ := post(t, url, []byte(line), nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, int64(1), ans.Accepted)
	stop()
	md := lastMetrics(t, sink)
	require.Equal(t, 1, md.ResourceMetrics().Len())
	m := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0)
	assert.Equal(t, "gym.sandbox.create_retry_total", m.Name())
	assert.Equal(t, int64(1), m.Sum().DataPoints().At(0).IntValue(), "only the line of the accepted body counts")
}

// Lines with equal resource attributes aggregate into one series across requests; the default
// resource of every request is one resource too.
func TestResourceIdentityAcrossRequests(t *testing.T) {
	url, sink, stop := startReceiver(t, nil)
	res := `{"event":"resource","attributes":{"service.name":"gym","process.pid":7}}`
	resStr := `{"event":"resource","attributes":{"service.name":"gym","process.pid":"7"}}`
	ev := `{"event":"sandbox.create_retry","provider":"p"}`
	for range 3 {
		post(t, url, []byte(res+"\n"+ev), nil)
	}
	post(t, url, []byte(resStr+"\n"+ev), nil)
	post(t, url, []byte(ev), nil)
	post(t, url, []byte(ev), nil)
	stop()
	md := lastMetrics(t, sink)
	got := map[string]int64{}
	for i := range md.ResourceMetrics().Len() {
		rm := md.ResourceMetrics().At(i)
		var parts []string
		rm.Resource().Attributes().Range(func(k string, v pcommon.Value) bool {
			parts = append(parts, fmt.Sprintf("%s=%s(%s)", k, v.AsString(), v.Type()))
			return true
		})
		sort.Strings(parts)
		got[strings.Join(parts, ",")] = rm.ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0).IntValue()
	}
	assert.Equal(t, map[string]int64{
		"process.pid=7(Int),service.name=gym(Str)": 3,
		"process.pid=7(Str),service.name=gym(Str)": 1,
		"gym.source=http(Str)":                     2,
	}, got)
}
