//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
	"github.com/gym-telemetry/otelcol-gym/internal/live"
)

// hostileRunID is a run id that is hard on a page: a dot segment between slashes (a path
// would be cleaned of it), markup, a malformed percent-encoding.
const hostileRunID = `x/../y <img src=x onerror=alert(1)> %E0%A4%A`

// hostileRuns is an export of runs through OTLP: r-good, hostileRunID and, with nonFinite,
// r-bad, whose rollouts in flight are NaN, +Inf and -Inf in three stages and 2 in a fourth.
func hostileRuns(nonFinite bool) pmetric.Metrics {
	md := pmetric.NewMetrics()
	type runPoints struct {
		id        string
		completed int64
		inFlight  []float64
	}
	runs := []runPoints{{"r-good", 5, []float64{3}}, {hostileRunID, 6, []float64{1}}}
	if nonFinite {
		runs = append(runs, runPoints{"r-bad", 4, []float64{math.NaN(), math.Inf(1), math.Inf(-1), 2}})
	}
	for i, run := range runs {
		ms := sdkScope(md, "e2e", map[string]any{"service.name": "nemo-gym/agent", "service.instance.id": fmt.Sprint("e2e-", i),
			"nemo.run.id": run.id}).Metrics()
		m := ms.AppendEmpty()
		m.SetName("gym.rollout.completed_total")
		m.SetUnit("1")
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dp := s.DataPoints().AppendEmpty()
		dp.SetIntValue(run.completed)
		dp.Attributes().PutStr("nemo.gym.rollout.outcome", "scored")
		dp.Attributes().PutStr("nemo.gym.rollout.dispatch.name", "math")
		m = ms.AppendEmpty()
		m.SetName("gym.rollout.in_flight")
		m.SetUnit("{rollout}")
		dps := m.SetEmptyGauge().DataPoints()
		for j, v := range run.inFlight {
			dp := dps.AppendEmpty()
			dp.SetDoubleValue(v)
			dp.Attributes().PutStr("nemo.gym.server.name", "agent")
			dp.Attributes().PutStr("nemo.gym.rollout.stage", []string{"sandbox", "model_call", "verify", "agent"}[len(run.inFlight)-1-j])
		}
	}
	return md
}

// startLiveRuns starts the default collector, sends hostileRuns and waits until the page's API
// lists them all; it returns the page's URL, the collector's ports and the API's answer.
func startLiveRuns(t *testing.T, nonFinite bool) (string, harness.Ports, liveRuns) {
	t.Helper()
	_, ports := harness.StartDefaultCollector(t, "exporters:\n  gymlive:\n    resolution: 1s\n    horizon: 1h\n")
	base := fmt.Sprintf("http://127.0.0.1:%d/", ports.Live)
	md := hostileRuns(nonFinite)
	n := md.ResourceMetrics().Len()
	postOTLP(t, fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP), md)
	var runs liveRuns
	require.NoError(t, harness.Eventually(30*time.Second, 300*time.Millisecond, func() error {
		resp, err := http.Get(base + "api/v1/runs")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/api/v1/runs: %s: %s", resp.Status, body)
		}
		if err := json.Unmarshal(body, &runs); err != nil {
			return err
		}
		if len(runs.Runs) < n {
			return harness.ErrNotYet
		}
		return nil
	}))
	return base, ports, runs
}

type liveRuns struct {
	Runs   []live.RunSummary `json:"runs"`
	Status live.Status       `json:"status"`
}

// TestLiveNonFinitePoints: a NaN, +Inf and -Inf among the points of one run (as any process
// that reaches the OTLP port can send) leave every run and every other number on the API and
// the page, and are counted.
func TestLiveNonFinitePoints(t *testing.T) {
	t.Parallel()
	base, ports, runs := startLiveRuns(t, true)
	byID := map[string]live.RunSummary{}
	for _, r := range runs.Runs {
		byID[r.ID] = r
	}
	assert.Equal(t, 5.0, byID["r-good"].CompletedTotal)
	assert.Equal(t, 3.0, byID["r-good"].InFlight)
	assert.Equal(t, 4.0, byID["r-bad"].CompletedTotal, "the run's other numbers stay")
	assert.Equal(t, 2.0, byID["r-bad"].InFlight, "the finite point only")
	assert.Equal(t, 6.0, byID[hostileRunID].CompletedTotal)
	assert.Equal(t, uint64(3), runs.Status.Dropped.NonFinite+runs.Status.Dropped.OutOfRange)
	rejected := harness.TelemetryValue(t, ports, "otelcol_exporter_gymlive_points_rejected")
	assert.Equal(t, 3.0, rejected, "counted in the exporter's telemetry")
	t.Logf("rejected: non_finite %v, out_of_range %v", harness.TelemetryValue(t, ports, "otelcol_exporter_gymlive_points_rejected", "reason", "non_finite"),
		harness.TelemetryValue(t, ports, "otelcol_exporter_gymlive_points_rejected", "reason", "out_of_range"))

	var bad struct {
		Run struct {
			Flight []live.FlightRow `json:"in_flight_by_stage"`
		} `json:"run"`
	}
	liveGet(t, base+"api/v1/runs/r-bad", &bad)
	assert.Equal(t, []live.FlightRow{{Server: "agent", Stage: "sandbox", InFlight: 2}}, bad.Run.Flight)
	var hostile struct {
		Run live.RunView `json:"run"`
	}
	liveGet(t, base+"api/v1/run?id="+url.QueryEscape(hostileRunID), &hostile)
	assert.Equal(t, hostileRunID, hostile.Run.ID)
	for _, path := range []string{"api/v1/runs/r-bad/history", "api/v1/health"} {
		var v map[string]any
		liveGet(t, base+path, &v)
	}

	dom, console := dumpDOM(t, harness.Chromium(t), base+"#r-bad")
	shown := shownValues(dom)
	assert.Regexp(t, `<ul id="page-errors" class="errors">\s*</ul>`, dom, "errors the page collected")
	assert.Empty(t, console)
	assert.Equal(t, 3, strings.Count(dom, "<option"), "every run in the list")
	assert.Equal(t, "4", shown["completed_total"])
	assert.Equal(t, "2", shown["in_flight"])
	assert.Contains(t, dom, "3 points not finite or out of range", "the status line counts them")
}

// TestLivePageHostileFragments: the page survives any fragment and any run id in headless
// Chromium: at fragments that select a run (one whose id has a dot segment, markup and a
// malformed percent-encoding), and at fragments that name no run or cannot be decoded (the newest run is
// shown): no exception, every run in the list, the run's numbers drawn.
func TestLivePageHostileFragments(t *testing.T) {
	t.Parallel()
	base, _, _ := startLiveRuns(t, false)
	chromium := harness.Chromium(t)
	for _, c := range []struct {
		fragment  string
		completed string // completed_total on the page; "" when the fragment names no run
		inFlight  string
	}{
		{"r-good", "5", "3"},
		{url.PathEscape(hostileRunID), "6", "1"},
		{"%E0%A4%A", "", ""},
		{"%", "", ""},
		{"%ZZ%", "", ""},
		{"%ED%A0%80", "", ""}, // a lone surrogate, encoded
		{"__proto__", "", ""},
		{"constructor", "", ""},
		{"..%2F..%2Fapi%2Fv1%2Fhealth", "", ""},
		{"%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E", "", ""},
		{strings.Repeat("a", 8000), "", ""},
	} {
		name := c.fragment
		if len(name) > 24 {
			name = name[:24]
		}
		t.Run(name, func(t *testing.T) {
			dom, console := dumpDOM(t, chromium, base+"#"+c.fragment)
			shown := shownValues(dom)
			assert.Regexp(t, `<ul id="page-errors" class="errors">\s*</ul>`, dom, "errors the page collected")
			for _, line := range console {
				t.Errorf("chromium console: %s", line)
			}
			assert.NotRegexp(t, `<section id="run" hidden`, dom, "a run is shown")
			assert.Equal(t, 2, strings.Count(dom, "<option"), "every run in the list")
			if c.completed != "" {
				assert.Equal(t, c.completed, shown["completed_total"])
				assert.Equal(t, c.inFlight, shown["in_flight"])
			} else {
				assert.Regexp(t, `^\d+$`, shown["completed_total"], "the newest run's numbers")
			}
		})
	}
}

// dumpDOM renders url in headless Chromium (every host but 127.0.0.1 unresolvable) and returns
// the DOM and the console lines that report an error.
func dumpDOM(t *testing.T, chromium, url string) (dom string, console []string) {
	t.Helper()
	cmd := exec.Command(chromium, append(harness.Headless(t), "--virtual-time-budget=5000",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--enable-logging=stderr", "--v=0", "--dump-dom", url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "chromium:\n%s", stderr.String())
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			console = append(console, line)
		}
	}
	return stdout.String(), console
}

// shownValues are the page's numbers by their data-k key.
func shownValues(dom string) map[string]string {
	shown := map[string]string{}
	for _, m := range regexp.MustCompile(`data-k="([^"]+)"[^>]*>([^<]*)<`).FindAllStringSubmatch(dom, -1) {
		shown[m[1]] = m[2]
	}
	return shown
}

// TestLiveSelfMetricsElsewhere: when self_metrics does not point at the collector's own
// telemetry (service.telemetry moved, another program on the port), the health panel says
// which setting to change, on the API and on the page.
func TestLiveSelfMetricsElsewhere(t *testing.T) {
	t.Parallel()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "# HELP jupyter_kernels Kernels.\njupyter_kernels 2\n")
	}))
	defer other.Close()
	_, ports := harness.StartDefaultCollector(t, "exporters:\n  gymlive:\n    self_metrics: "+other.URL+"/metrics\n")
	base := fmt.Sprintf("http://127.0.0.1:%d/", ports.Live)
	var health struct {
		Collector live.CollectorHealth `json:"collector"`
	}
	liveGet(t, base+"api/v1/health", &health)
	assert.Equal(t, "exporters::gymlive::self_metrics", health.Collector.Setting)
	assert.Contains(t, health.Collector.Error, "not the collector's own telemetry")
	assert.Contains(t, health.Collector.Error, "set exporters::gymlive::self_metrics")

	dom, console := dumpDOM(t, harness.Chromium(t), base)
	assert.Contains(t, dom, "set exporters::gymlive::self_metrics", "the page names the setting")
	assert.Empty(t, console)
}

// TestLiveSlowClients: clients that send their headers a byte at a time cannot starve the page.
// With every one of max_connections held by them, a normal request is served (it evicts the
// slow client that has waited longest, counted), and the others are cut off by
// read_header_timeout (counted); under a flood of reconnecting slow clients, every normal
// request is answered and the metrics pipeline goes on. Nothing here is a wall-clock limit: the
// latencies are logged (docs/live.md has them).
func TestLiveSlowClients(t *testing.T) {
	t.Parallel()
	const maxConns = 8
	_, ports := harness.StartDefaultCollector(t, fmt.Sprintf("exporters:\n  gymlive:\n    max_connections: %d\n    read_header_timeout: 5s\n", maxConns))
	addr := fmt.Sprintf("127.0.0.1:%d", ports.Live)
	base := "http://" + addr + "/"
	telemetry := func(name string, labels ...string) float64 { return harness.TelemetryValue(t, ports, name, labels...) }
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) (time.Duration, error) {
		start := time.Now()
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%s: %s", path, resp.Status)
		}
		return time.Since(start), nil
	}

	// Every slot held by a slow client.
	var slow []*slowConn
	for range maxConns {
		slow = append(slow, dialSlow(t, addr))
	}
	require.NoError(t, harness.Eventually(10*time.Second, 50*time.Millisecond, func() error {
		if telemetry("otelcol_exporter_gymlive_connections") != maxConns {
			return harness.ErrNotYet
		}
		return nil
	}))
	_, err := get("api/v1/runs")
	require.NoError(t, err, "a normal request while every slot is held")
	assert.Equal(t, 1.0, telemetry("otelcol_exporter_gymlive_connections_closed", "reason", "evicted"), "the oldest slow client evicted")
	for _, c := range slow {
		assert.True(t, c.closedByServer(15*time.Second), "every slow client is cut off")
	}
	require.NoError(t, harness.Eventually(10*time.Second, 50*time.Millisecond, func() error {
		if telemetry("otelcol_exporter_gymlive_connections") != 0 {
			return harness.ErrNotYet
		}
		return nil
	}))
	assert.Equal(t, float64(maxConns-1), telemetry("otelcol_exporter_gymlive_connections_closed", "reason", "header_timeout"),
		"the others cut off by read_header_timeout")

	// A flood: 4 x max_connections slow clients, each reconnecting 50 ms after it is closed,
	// for as long as the normal requests below go on.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var opened atomic.Int64
	for range 4 * maxConns {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.Dial("tcp", addr)
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				opened.Add(1)
				s := &slowConn{c: c}
				s.trickle(stop)
				c.Close()
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	require.NoError(t, harness.Eventually(10*time.Second, 50*time.Millisecond, func() error {
		if telemetry("otelcol_exporter_gymlive_connections") < maxConns {
			return harness.ErrNotYet
		}
		return nil
	}))
	evictedBefore := telemetry("otelcol_exporter_gymlive_connections_closed", "reason", "evicted")
	postOTLP(t, fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP), hostileRuns(true))
	// Normal requests one after another for 3 s (at least 30, at most 1,000): the flood's
	// duration, not a limit on them.
	var took []time.Duration
	for i, start := 0, time.Now(); i < 1000 && (i < 30 || time.Since(start) < 3*time.Second); i++ {
		d, err := get([]string{"", "app.js", "api/v1/runs", "api/v1/health", "api/v1/runs/r-good"}[i%5])
		if i%5 == 4 && err != nil {
			continue // r-good may not be exported yet
		}
		require.NoError(t, err, "request %d during the flood", i)
		took = append(took, d)
	}
	var runs struct {
		Runs []live.RunSummary `json:"runs"`
	}
	require.NoError(t, harness.Eventually(30*time.Second, 200*time.Millisecond, func() error {
		body, err := harness.HTTPGet(base + "api/v1/runs")
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(body), &runs); err != nil {
			return err
		}
		if len(runs.Runs) < 3 {
			return harness.ErrNotYet
		}
		return nil
	}), "the metrics pipeline goes on during the flood")
	close(stop)
	wg.Wait()
	assert.Greater(t, telemetry("otelcol_exporter_gymlive_connections_closed", "reason", "evicted"), evictedBefore,
		"slow clients evicted for the normal ones")
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("flood: %d slow connections opened; %d normal requests: median %v, max %v", opened.Load(), len(took),
		took[len(took)/2], took[len(took)-1])
}

// slowConn is a client that sends the start of a request and then a header byte every 200 ms,
// never ending its headers.
type slowConn struct{ c net.Conn }

func dialSlow(t *testing.T, addr string) *slowConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	s := &slowConn{c: c}
	go s.trickle(nil)
	return s
}

// trickle sends a byte every 200 ms until the server closes the connection (or stop closes).
func (s *slowConn) trickle(stop <-chan struct{}) {
	if _, err := io.WriteString(s.c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "); err != nil {
		return
	}
	for {
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := s.c.Write([]byte("a")); err != nil {
			return
		}
	}
}

// closedByServer reports whether the server closes the connection within d.
func (s *slowConn) closedByServer(d time.Duration) bool {
	_ = s.c.SetReadDeadline(time.Now().Add(d))
	_, err := s.c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && (!errors.As(err, &ne) || !ne.Timeout())
}
