//go:build linux

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// Reliability and security through the real binary: an exporter outage, Gym
// process restarts (OTLP and Prometheus), bearer-token authentication and TLS on the gym
// receiver's HTTP transport.

// noQueue: the exporter sends each collection synchronously and never retries, so exports
// reach the sink in the order of the collections.
const noQueue = `    retry_on_failure:
      enabled: false
    sending_queue:
      enabled: false`

func startReliability(t *testing.T, sink *harness.OTLPSink, x map[string]any) (*harness.Collector, harness.Ports) {
	t.Helper()
	for _, k := range []string{"extensions", "http", "exporter", "service_extensions"} {
		if _, ok := x[k]; !ok {
			x[k] = ""
		}
	}
	return harness.StartCollector(t, func(p harness.Ports) []string {
		return []string{harness.Config(t, "reliability.yaml", harness.Data{P: p, Sink: sink.URL(), X: x})}
	})
}

// newestCompleted sums gym.rollout.completed_total of the matching resources over the newest
// point (by timestamp) of each series in any export: what a backend that orders points by
// time holds.
func newestCompleted(exports []pmetric.Metrics, match func(pcommon.Map) bool) float64 {
	type pt struct {
		ts pcommon.Timestamp
		v  float64
	}
	newest := map[string]pt{}
	for _, md := range exports {
		for resource, m := range metricsNamed(md, match, "gym.rollout.completed_total") {
			res := formatAttrs(resource)
			for _, dp := range m.Sum().DataPoints().All() {
				k := res + formatAttrs(dp.Attributes())
				if p, ok := newest[k]; !ok || dp.Timestamp() >= p.ts {
					newest[k] = pt{dp.Timestamp(), numberOf(dp)}
				}
			}
		}
	}
	var total float64
	for _, p := range newest {
		total += p.v
	}
	return total
}

// TestExporterOutage: the backend answers 503 for several collection intervals, then is down
// (its listener closed) for several more, while events keep arriving; then it comes back.
// Every event is accepted meanwhile, the collector's RSS stays bounded, and the backend then
// receives complete cumulative totals: in the first export after the outage (exporter
// without queue or retries), or, with the exporter's default queue and retries (which
// deliver the queued stale collections too, after the outage, out of order), in the newest
// point of each series.
func TestExporterOutage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		exporter string
		first    bool // the first export after the outage is complete
	}{
		{"no queue no retry", noQueue, true},
		{"exporter defaults", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sink := harness.NewOTLPSink(t)
			col, _ := startReliability(t, sink, map[string]any{"exporter": c.exporter})
			pid := col.Cmd.Process.Pid
			match := service("outage")

			// A sender that keeps posting: 100 lines over 500 dispatch names each time.
			var sent atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					status, ans := col.PostEvents(t, outageBody(i))
					if !assert.Equal(t, http.StatusOK, status, "the receiver keeps accepting during the outage") {
						return
					}
					sent.Add(int64(ans.Accepted - 1)) // the resource line
					time.Sleep(10 * time.Millisecond)
				}
			})
			stopSender := sync.OnceFunc(func() { close(stop); wg.Wait() })
			defer stopSender()

			waitFor(t, "exports before the outage", func() bool { return sink.Count() >= 3 })
			rssBefore, err := vmRSS(pid)
			require.NoError(t, err)

			// 503 for at least six export attempts (retries included), then down for six
			// collection intervals' worth of time.
			sink.Failing.Store(true)
			waitFor(t, "six exports answered 503", func() bool { return sink.Refused.Load() >= 6 })
			sink.Down()
			time.Sleep(6 * 300 * time.Millisecond)
			stopSender()
			time.Sleep(3 * 300 * time.Millisecond) // collections after the last event fail too
			rssDuring, err := vmRSS(pid)
			require.NoError(t, err)
			total := float64(sent.Load())
			require.Positive(t, total)

			// Back.
			received := sink.Count()
			sink.Failing.Store(false)
			sink.Up()
			if c.first {
				waitFor(t, "an export after the outage", func() bool { return sink.Count() > received })
				first, ok := completed(sink.Exports()[received], match)
				assert.True(t, ok)
				assert.Equal(t, total, first, "the first export after the outage holds everything accepted")
			}
			var newest float64
			err = harness.Eventually(90*time.Second, 200*time.Millisecond, func() error {
				if newest = newestCompleted(sink.Exports(), match); newest != total {
					return harness.ErrNotYet
				}
				return nil
			})
			require.NoError(t, err, "the newest points after the outage sum to %v, want %v", newest, total)
			// No export ever holds more than was sent.
			for i, md := range sink.Exports() {
				v, _ := completed(md, match)
				assert.LessOrEqual(t, v, total, "export %d", i)
			}
			stale, newestTS := 0, pcommon.Timestamp(0)
			for _, md := range sink.Exports()[received:] {
				ts := exportTime(md)
				if ts < newestTS {
					stale++
				}
				newestTS = max(newestTS, ts)
			}
			t.Logf("%d events; RSS %d MiB before the outage, %d MiB during it; %d exports after the outage, %d of them older than one received before them",
				int(total), rssBefore>>20, rssDuring>>20, sink.Count()-received, stale)
			assert.Less(t, rssDuring, rssBefore+256<<20, "RSS during the outage")
			require.Empty(t, sink.Errors())
			require.NoError(t, col.Stop(30*time.Second))
		})
	}
}

func outageBody(i int) string {
	var b strings.Builder
	b.WriteString(`{"event":"resource","attributes":{"service.name":"outage"}}` + "\n")
	for j := range 100 {
		fmt.Fprintf(&b, `{"event":"rollout.completed","outcome":"scored","dispatch_name":"d%d"}`+"\n", (i*100+j)%500)
	}
	return b.String()
}

// exportTime is the newest point time of an export.
func exportTime(md pmetric.Metrics) pcommon.Timestamp {
	var ts pcommon.Timestamp
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Type() == pmetric.MetricTypeSum {
					for _, dp := range m.Sum().DataPoints().All() {
						ts = max(ts, dp.Timestamp())
					}
				}
			}
		}
	}
	return ts
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.NoError(t, harness.Eventually(60*time.Second, 50*time.Millisecond, func() error {
		if !cond() {
			return harness.ErrNotYet
		}
		return nil
	}), "waiting for %s", what)
}

// restartBody is one report of a Gym process: its resource line, a connection-pool snapshot
// (a total the process keeps itself) and some rollouts (counted by the receiver).
func restartBody(instance string, pid, connects, rollouts int) string {
	var b strings.Builder
	if pid > 0 {
		fmt.Fprintf(&b, `{"event":"resource","attributes":{"service.name":"nemo-gym/restart","service.instance.id":%q,"nemo.run.id":"e2e-restart","process.pid":%d}}`+"\n", instance, pid)
	} else {
		fmt.Fprintf(&b, `{"event":"resource","attributes":{"service.name":"nemo-gym/restart","service.instance.id":%q,"nemo.run.id":"e2e-restart"}}`+"\n", instance)
	}
	fmt.Fprintf(&b, `{"event":"http.pool.connects","counts":{"policy_model":%d}}`+"\n", connects)
	for range rollouts {
		b.WriteString(`{"event":"rollout.completed","outcome":"omitted","dispatch_name":"math"}` + "\n")
	}
	return b.String()
}

// seriesPoint is the point of one metric of the resources that match, in one export.
func seriesPoint(md pmetric.Metrics, name string, match func(pcommon.Map) bool) (pmetric.NumberDataPoint, bool) {
	for _, rm := range md.ResourceMetrics().All() {
		if !match(rm.Resource().Attributes()) {
			continue
		}
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() == name && m.Type() == pmetric.MetricTypeSum && m.Sum().DataPoints().Len() == 1 {
					return m.Sum().DataPoints().At(0), true
				}
			}
		}
	}
	return pmetric.NumberDataPoint{}, false
}

func pidIs(pid int) func(pcommon.Map) bool {
	return func(m pcommon.Map) bool {
		v, ok := m.Get("process.pid")
		return ok && v.Int() == int64(pid)
	}
}

// TestGymRestartOTLP: a Gym process restarts. With a new pid, its new resource's series
// start afresh, with start times after the old ones' last point, while the old resource keeps
// its final totals. Without a pid (the same resource), a snapshot total that drops restarts
// its series with a new start time.
func TestGymRestartOTLP(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	col, _ := startReliability(t, sink, map[string]any{"exporter": noQueue})
	post := func(body string) {
		status, ans := col.PostEvents(t, body)
		require.Equal(t, http.StatusOK, status)
		require.Zero(t, ans.Rejected, "%+v", ans)
	}
	const connects = "gym.http.connection_pool.connect_total"
	latest := func(name string, match func(pcommon.Map) bool) (pmetric.NumberDataPoint, int) {
		exports := sink.Exports()
		for i := len(exports) - 1; i >= 0; i-- {
			if dp, ok := seriesPoint(exports[i], name, match); ok {
				return dp, i
			}
		}
		return pmetric.NumberDataPoint{}, -1
	}
	waitValue := func(what, name string, match func(pcommon.Map) bool, want float64) pmetric.NumberDataPoint {
		t.Helper()
		var dp pmetric.NumberDataPoint
		err := harness.Eventually(30*time.Second, 100*time.Millisecond, func() error {
			var i int
			if dp, i = latest(name, match); i < 0 || numberOf(dp) != want {
				return harness.ErrNotYet
			}
			return nil
		})
		require.NoError(t, err, "%s: %s", what, name)
		return dp
	}

	// A new pid: a new resource.
	post(restartBody("restart-pid", 1002, 10, 4))
	post(restartBody("restart-pid", 1002, 30, 2))
	old := waitValue("before the restart", connects, pidIs(1002), 30)
	oldRollouts := waitValue("before the restart", "gym.rollout.completed_total", pidIs(1002), 6)
	post(restartBody("restart-pid", 4242, 5, 1))
	fresh := waitValue("after the restart", connects, pidIs(4242), 5)
	freshRollouts := waitValue("after the restart", "gym.rollout.completed_total", pidIs(4242), 1)
	assert.Greater(t, uint64(fresh.StartTimestamp()), uint64(old.Timestamp())-uint64(300*time.Millisecond),
		"the new process's snapshot series starts after the old one's last collection")
	assert.Greater(t, uint64(freshRollouts.StartTimestamp()), uint64(oldRollouts.StartTimestamp()))
	post(restartBody("restart-pid", 4242, 12, 2))
	waitValue("after the restart", connects, pidIs(4242), 12)
	waitValue("after the restart", "gym.rollout.completed_total", pidIs(4242), 3)
	stillOld, _ := latest(connects, pidIs(1002))
	assert.Equal(t, 30.0, numberOf(stillOld), "the old resource keeps its final total until it expires")

	// The same resource (no pid): the snapshot total drops, its series restarts.
	same := attrIs("service.instance.id", "restart-nopid")
	post(restartBody("restart-nopid", 0, 10, 0))
	post(restartBody("restart-nopid", 0, 30, 0))
	before := waitValue("before the drop", connects, same, 30)
	post(restartBody("restart-nopid", 0, 5, 0))
	after := waitValue("after the drop", connects, same, 5)
	assert.Greater(t, uint64(after.StartTimestamp()), uint64(before.StartTimestamp()), "a new start time after the drop")
	assert.LessOrEqual(t, uint64(after.StartTimestamp()), uint64(after.Timestamp()))
	post(restartBody("restart-nopid", 0, 12, 0))
	again := waitValue("after the drop", connects, same, 12)
	assert.Equal(t, after.StartTimestamp(), again.StartTimestamp(), "the restarted series keeps its start time")
	require.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))
}

// TestGymRestartPrometheus: two Gym processes restart with a new pid each, through the
// shipped default configuration and Debian's Prometheus scraping its prometheus exporter.
// process.pid is not a Prometheus label (job and instance come from service.name and
// service.instance.id), so the old and the new resource of a process are one Prometheus
// series: it must show the new process's totals once it reports, and increase() over the
// restart must count what both processes counted in the window. Process a's new pid sorts
// after its old one in the receiver's resource order, process b's before.
func TestGymRestartPrometheus(t *testing.T) {
	t.Parallel()
	harness.PrometheusBinary(t)
	// Gym's ids as sent: with instance_per_process (the default) a new pid is a new instance.
	col, ports := harness.StartDefaultCollector(t, idsAsSent)
	prom := harness.StartPrometheus(t, fmt.Sprintf("127.0.0.1:%d", ports.Prometheus))
	post := func(body string) {
		status, ans := col.PostEvents(t, body)
		require.Equal(t, http.StatusOK, status)
		require.Zero(t, ans.Rejected, "%+v", ans)
	}
	for _, p := range []struct {
		instance       string
		oldPID, newPID int
	}{
		{"restart-a", 1001, 1002}, // the new resource sorts after the old one
		{"restart-b", 1002, 4242}, // and before it
	} {
		t.Run(p.instance, func(t *testing.T) {
			connects := fmt.Sprintf(`gym_http_connection_pool_connect_total{instance=%q}`, p.instance)
			rollouts := fmt.Sprintf(`gym_rollout_completed_total{instance=%q}`, p.instance)
			for _, r := range []struct {
				pid, connects, rollouts int     // the report: the process's connects total, its rollouts since the last
				rolloutsTotal           float64 // what Prometheus has then
			}{
				{p.oldPID, 10, 4, 4},
				{p.oldPID, 30, 2, 6},
				{p.newPID, 5, 1, 1}, // the process restarts: a new pid, low totals
				{p.newPID, 12, 2, 3},
			} {
				post(restartBody(p.instance, r.pid, r.connects, r.rollouts))
				waitVector(t, prom, "sum("+connects+")", map[string]float64{"{}": float64(r.connects)})
				waitVector(t, prom, "sum("+rollouts+")", map[string]float64{"{}": r.rolloutsTotal})
			}

			// Prometheus saw 10, 30, then 5, 12: one reset, and an increase of 20 + 12 from
			// the first sample (rollouts: 4, 6, then 1, 3: 2 + 3), give or take the
			// extrapolation to the window's edges.
			for _, q := range []struct {
				metric         string
				resets         float64
				increase, slop float64
			}{
				{connects, 1, 32, 0.5},
				{rollouts, 1, 5, 0.5},
			} {
				got, err := harness.PromQuery(prom, "sum(resets("+q.metric+"[10m]))")
				require.NoError(t, err)
				assert.Equal(t, map[string]float64{"{}": q.resets}, got, "resets(%s)", q.metric)
				got, err = harness.PromQuery(prom, "sum(increase("+q.metric+"[10m]))")
				require.NoError(t, err)
				if assert.Contains(t, got, "{}") {
					assert.GreaterOrEqual(t, got["{}"], q.increase*0.99, "increase(%s) over the restart", q.metric)
					assert.LessOrEqual(t, got["{}"], q.increase*(1+q.slop), "increase(%s) over the restart", q.metric)
				}
			}
		})
	}
}

// TestHTTPAuth: the gym receiver's HTTP transport with a bearertokenauth authenticator: a
// request without the token, or with another, is answered 401 and nothing of it is counted;
// with the token it is accepted and counted.
func TestHTTPAuth(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	const token = "e2e-0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	col, ports := startReliability(t, sink, map[string]any{
		"exporter": noQueue,
		"extensions": `  bearertokenauth:
    filename: ` + tokenFile,
		"service_extensions": ", bearertokenauth",
		"http": `      auth:
        authenticator: bearertokenauth`,
	})
	url := col.GymURL + "/v1/events"
	body := lines("auth", 0, 10, true)
	for _, c := range []struct {
		name   string
		header map[string]string
	}{
		{"no token", nil},
		{"another token", map[string]string{"Authorization": "Bearer not-the-token"}},
		{"no scheme", map[string]string{"Authorization": token}},
	} {
		status, answer := harness.Post(t, http.DefaultClient, url, body, c.header)
		assert.Equal(t, http.StatusUnauthorized, status, "%s: %s", c.name, answer)
	}
	status, answer := harness.Post(t, http.DefaultClient, url, body, map[string]string{"Authorization": "Bearer " + token})
	require.Equal(t, http.StatusOK, status, answer)
	assert.Contains(t, answer, `"accepted":11`)

	waitCompleted(t, sink, "only the authorised body", service("auth"), 10)
	assert.Equal(t, 11.0, harness.TelemetryValue(t, ports, "otelcol_receiver_gym_lines_accepted"),
		"lines accepted: the resource line and 10 events of the one authorised body")
	require.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))
}

// TestHTTPTLS: the gym receiver's HTTP transport with a certificate generated by the test
// (self-signed, IP SAN 127.0.0.1): a client that trusts it sends over HTTPS and is counted; a
// client that does not, a plain-HTTP request and a TLS 1.1 client are refused, and nothing of
// them is counted.
func TestHTTPTLS(t *testing.T) {
	t.Parallel()
	sink := harness.NewOTLPSink(t)
	dir := t.TempDir()
	certFile, keyFile, pool := selfSignedCert(t, dir)
	col, ports := startReliability(t, sink, map[string]any{
		"exporter": noQueue,
		"http": `      tls:
        cert_file: ` + certFile + `
        key_file: ` + keyFile,
	})
	httpsURL := strings.Replace(col.GymURL, "http://", "https://", 1) + "/v1/events"
	body := lines("tls", 0, 10, true)

	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	status, answer := harness.Post(t, trusting, httpsURL, body, map[string]string{"Content-Type": "application/x-ndjson"})
	require.Equal(t, http.StatusOK, status, answer)
	assert.Contains(t, answer, `"accepted":11`)

	// A client that does not trust the certificate.
	resp, err := http.Post(httpsURL, "application/x-ndjson", strings.NewReader(body))
	if err == nil {
		resp.Body.Close()
	}
	var unknownAuthority x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknownAuthority, "a client without the CA")
	// TLS 1.1 (the server's minimum is TLS 1.2).
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}}} //nolint:gosec // the point of the test
	resp, err = old.Post(httpsURL, "application/x-ndjson", strings.NewReader(body))
	if err == nil {
		resp.Body.Close()
	}
	assert.Error(t, err, "a TLS 1.1 client")
	// Plain HTTP to the TLS port: the connection is closed (or answered 400).
	if resp, err := http.Post(col.GymURL+"/v1/events", "application/x-ndjson", strings.NewReader(body)); err == nil {
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP to the TLS endpoint")
	}

	waitCompleted(t, sink, "only the HTTPS body", service("tls"), 10)
	assert.Equal(t, 11.0, harness.TelemetryValue(t, ports, "otelcol_receiver_gym_lines_accepted"))
	require.Empty(t, sink.Errors())
	require.NoError(t, col.Stop(30*time.Second))
}

// selfSignedCert writes a self-signed ECDSA certificate for 127.0.0.1 and its key, and
// returns their paths and a pool that trusts it.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	c, keyFile := writeCert(t, dir, "server", &x509.Certificate{
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
	pool = x509.NewCertPool()
	pool.AddCert(c.cert)
	return c.file, keyFile, pool
}
