//go:build linux

package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A real VictoriaMetrics (Debian's victoria-metrics, single node) beside Prometheus: it takes
// Prometheus remote write at /api/v1/write and answers Prometheus' HTTP API (PromQuery,
// PromAPI) with MetricsQL.

// VictoriaMetricsBinary finds Debian's victoria-metrics ($VICTORIA_METRICS_BIN first); without
// it the test fails in CI (.ci/run installs it) and is skipped elsewhere.
func VictoriaMetricsBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("VICTORIA_METRICS_BIN"), "/usr/bin/victoria-metrics"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("victoria-metrics"); err == nil {
		return p
	}
	Missing(t, "victoria-metrics is not installed: `apt-get install victoria-metrics` (.ci/run does it), or set VICTORIA_METRICS_BIN")
	return ""
}

// StartVictoriaMetrics starts a single-node VictoriaMetrics on a free loopback port, its
// storage in a temporary directory, and returns its URL (remote write: URL + "/api/v1/write").
// It starts it again on another port when the one picked was taken in the meantime.
//
// Its only listener is -httpListenAddr: the Graphite, InfluxDB and OpenTSDB listeners are off
// unless their flags name an address, flags are not read from the environment
// (-envflag.enable is off by default), and nothing is scraped without -promscrape.config.
// -search.latencyOffset is 0: by default the newest 30 s of samples are hidden from queries,
// and a test asks about what it has just written. The response cache is off, so no answer
// depends on what an earlier query cached. Staleness (-search.maxStalenessInterval) stays as
// shipped, as a user meets it.
func StartVictoriaMetrics(t *testing.T) string {
	t.Helper()
	bin := VictoriaMetricsBinary(t)
	dir := t.TempDir()
	for attempt := 1; ; attempt++ {
		port := Port(t)
		p := StartProcess(t, "victoria-metrics", bin,
			fmt.Sprintf("-httpListenAddr=127.0.0.1:%d", port),
			"-storageDataPath="+filepath.Join(dir, fmt.Sprintf("data-%d", attempt)),
			"-search.latencyOffset=0s",
			"-search.disableCache",
			"-loggerLevel=WARN",
		)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		// /health answers once the storage is open and the HTTP server serves.
		err := p.WaitReady(base+"/health", 60*time.Second)
		if err == nil {
			t.Cleanup(func() { _ = p.Stop(15 * time.Second) })
			return base
		}
		if attempt < StartAttempts && p.Exited() && AddressInUse(p) {
			t.Logf("victoria-metrics: port %d was taken, starting again on another (attempt %d)", port, attempt+1)
			continue
		}
		t.Fatal(err)
	}
}
