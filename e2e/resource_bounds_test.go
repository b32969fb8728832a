//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// Resource attributes are bounded like every other string (docs/processor.md, "Resource
// attributes"): a sender's 1 MiB service.name and nemo.run.id reach neither the live page nor
// the Prometheus endpoint longer than 256 bytes, and a series costs a bounded scrape.

const (
	resourceRuns      = 10
	resourceSeries    = 128 // of the first run
	maxResourceValue  = 256 // schema.DefaultStringMaxBytes
	maxScrapeLineSize = 2048
)

// longValue is a 1 MiB value whose first bytes (tag) tell it apart from another.
func longValue(tag string) string { return tag + strings.Repeat("x", 1<<20-len(tag)) }

// longResourceRun is one OTLP request: a resource of a 1 MiB service.name and nemo.run.id with
// n series of gym.rollout.completed_total.
func longResourceRun(run, n int) pmetric.Metrics {
	return harness.CompletedUnder(map[string]string{
		"service.name": longValue(fmt.Sprintf("svc-%d-", run)),
		"nemo.run.id":  longValue(fmt.Sprintf("run-%d-", run)),
	}, n)
}

// TestResourceLongValues: ten runs of 1 MiB resource strings through the shipped default
// configuration. The live page answers with the ten runs under their cut ids, the Prometheus
// endpoint's labels are cut, its scrape is bounded by its series count, and the collector
// counts every cut.
func TestResourceLongValues(t *testing.T) {
	t.Parallel()
	_, ports := harness.StartDefaultCollector(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", ports.OTLPHTTP)
	want := map[string]bool{}
	for run := range resourceRuns {
		n := 1
		if run == 0 {
			n = resourceSeries
		}
		postOTLP(t, url, longResourceRun(run, n))
		want[longValue(fmt.Sprintf("run-%d-", run))[:maxResourceValue]] = true
	}

	// The live page: the ten runs, each id cut.
	runsURL := fmt.Sprintf("http://127.0.0.1:%d/api/v1/runs", ports.Live)
	var got map[string]bool
	require.NoError(t, harness.Eventually(30*time.Second, 300*time.Millisecond, func() error {
		body, err := harness.HTTPGet(runsURL)
		if err != nil {
			return err
		}
		var v struct {
			Runs []struct {
				ID string `json:"id"`
			} `json:"runs"`
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			return err
		}
		got = map[string]bool{}
		for _, r := range v.Runs {
			got[r.ID] = true
		}
		if len(got) < resourceRuns {
			return fmt.Errorf("%d runs on the page", len(got))
		}
		return nil
	}))
	assert.Equal(t, want, got)

	// The Prometheus endpoint: every series of the ten runs, every label value at most 256
	// bytes, and the scrape within maxScrapeLineSize per line.
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Prometheus)
	var text string
	require.NoError(t, harness.Eventually(30*time.Second, 300*time.Millisecond, func() error {
		var err error
		if text, err = harness.HTTPGet(metricsURL); err != nil {
			return err
		}
		if n := strings.Count(text, "\ngym_rollout_completed_total{"); n < resourceSeries+resourceRuns-1 {
			return fmt.Errorf("%d series of gym_rollout_completed_total", n)
		}
		return nil
	}))
	series, comments := 0, 0
	for _, l := range strings.Split(text, "\n") {
		require.LessOrEqual(t, len(l), maxScrapeLineSize, "a line of the scrape: %.300s", l)
		for _, v := range scrapeLabelValues(l) {
			require.LessOrEqual(t, len(v), maxResourceValue, "a label value of %.300s", l)
		}
		switch {
		case strings.HasPrefix(l, "#"):
			comments++
		case l != "":
			series++
		}
	}
	// Each series a line of at most maxScrapeLineSize, each HELP or TYPE line at most 1 KiB:
	// unbounded, each of the 128 series under the 1 MiB service.name carried 1 MiB.
	assert.LessOrEqual(t, len(text), series*maxScrapeLineSize+comments*1024)
	assert.Less(t, len(text), 1<<20, "%d series", series)
	assert.Contains(t, text, `job="`+longValue("svc-0-")[:maxResourceValue]+`"`)

	// Two values cut per request, each counted.
	assert.Equal(t, float64(2*resourceRuns), harness.TelemetryValue(t, ports, "otelcol_processor_gymattrs_resource_values_cut"))
}

// scrapeLabelValues returns the raw (escaped) label values of a line of the Prometheus text format.
func scrapeLabelValues(line string) []string {
	i := strings.IndexByte(line, '{')
	if i < 0 || strings.HasPrefix(line, "#") {
		return nil
	}
	var out []string
	for i++; i < len(line) && line[i] != '}'; {
		eq := strings.Index(line[i:], `="`)
		if eq < 0 {
			return out
		}
		j := i + eq + 2
		k := j
		for k < len(line) && line[k] != '"' {
			if line[k] == '\\' {
				k++
			}
			k++
		}
		out = append(out, line[j:min(k, len(line))])
		i = k + 1
		if i < len(line) && line[i] == ',' {
			i++
		}
	}
	return out
}
