//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// Two workers of one Gym server share service.name and service.instance.id (<run>-rank0) and
// differ only by process.pid. gymattrs' instance_per_process makes each one's instance
// <run>-rank0-pid<pid>: without it, their series got the same labels and one overwrote the
// other (a scrape showed one worker's total, the other's rollouts were lost).

// idsAsSent is an override of the default configuration that keeps Gym's ids as sent.
const idsAsSent = "processors:\n  gymattrs:\n    instance_per_process: false\n"

// runWorkers runs two real Python processes at once, each a Gym worker posting OTLP/HTTP JSON
// to url (testdata/gym_worker_otlp.py) with the cumulative totals given, and returns their
// pids in the same order.
func runWorkers(t *testing.T, url, run string, totals ...int) []int {
	t.Helper()
	python := harness.Python(t)
	type worker struct {
		cmd         *exec.Cmd
		out, stderr bytes.Buffer
	}
	ws := make([]*worker, len(totals))
	for i, total := range totals {
		w := &worker{cmd: exec.Command(python, filepath.Join("testdata", "gym_worker_otlp.py"), url, run, strconv.Itoa(total), "3")}
		w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.stderr
		require.NoError(t, w.cmd.Start())
		ws[i] = w
	}
	pids := make([]int, len(ws))
	for i, w := range ws {
		require.NoError(t, w.cmd.Wait(), "worker %d: %s", i, w.stderr.String())
		pid, err := strconv.Atoi(strings.TrimSpace(w.out.String()))
		require.NoError(t, err, "worker %d printed %q", i, w.out.String())
		require.Equal(t, w.cmd.Process.Pid, pid)
		pids[i] = pid
	}
	require.NotEqual(t, pids[0], pids[1], "two processes alive at once")
	return pids
}

// checkWorkers asserts what Prometheus holds of the two workers: one series each, under
// job nemo-gym/math_with_judge and instance <run>-rank0-pid<pid>, with its own total (5 + 7),
// their memory series keeping the data point's process.pid (the process tree's root, the
// workers' parent: this test), and target_info joining on job and instance.
func checkWorkers(t *testing.T, prom, run string, pids []int, totals ...int) {
	t.Helper()
	inst := func(i int) string { return fmt.Sprintf("%s-rank0-pid%d", run, pids[i]) }
	want := map[string]float64{}
	sum := 0
	for i, total := range totals {
		want[fmt.Sprintf(`{instance=%q,job="nemo-gym/math_with_judge"}`, inst(i))] = float64(total)
		sum += total
	}
	sel := fmt.Sprintf(`{nemo_run_id=%q}`, run)
	waitVector(t, prom, `sum by (job, instance) (gym_rollout_completed_total`+sel+`)`, want)
	waitVector(t, prom, `sum(gym_rollout_completed_total`+sel+`)`, map[string]float64{"{}": float64(sum)})
	waitVector(t, prom, `count(gym_rollout_completed_total`+sel+`)`, map[string]float64{"{}": float64(len(totals))})

	mem := map[string]float64{}
	for i, total := range totals {
		mem[fmt.Sprintf(`{instance=%q,process_pid="%d"}`, inst(i), os.Getpid())] = float64(total << 20)
	}
	waitVector(t, prom, `sum by (instance, process_pid) (gym_server_memory_usage`+sel+`)`, mem)

	// Dashboards select a server by the resource's type with a join on job and instance:
	// target_info comes from the same resource, so it names the same instances.
	joined := map[string]float64{}
	for i, total := range totals {
		joined[fmt.Sprintf(`{instance=%q,nemo_gym_server_type="resources_servers"}`, inst(i))] = float64(total)
	}
	waitVector(t, prom, `sum by (instance, nemo_gym_server_type) (gym_rollout_completed_total`+sel+
		` * on (job, instance) group_left (nemo_gym_server_type) target_info)`, joined)
}

// TestInstancePerProcessScrape: the two workers through the shipped default configuration,
// scraped by Debian's Prometheus from its prometheus exporter. With instance_per_process
// turned off, the same run shows the data loss the rule prevents: one series, one worker's
// total.
func TestInstancePerProcessScrape(t *testing.T) {
	t.Parallel()
	harness.PrometheusBinary(t)
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		_, ports := harness.StartDefaultCollector(t)
		prom := harness.StartPrometheus(t, fmt.Sprintf("127.0.0.1:%d", ports.Prometheus))
		const run = "e2e-pid-scrape"
		pids := runWorkers(t, fmt.Sprintf("http://127.0.0.1:%d/v1/metrics", ports.OTLPHTTP), run, 5, 7)
		checkWorkers(t, prom, run, pids, 5, 7)
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		_, ports := harness.StartDefaultCollector(t, idsAsSent)
		prom := harness.StartPrometheus(t, fmt.Sprintf("127.0.0.1:%d", ports.Prometheus))
		const run = "e2e-pid-off"
		runWorkers(t, fmt.Sprintf("http://127.0.0.1:%d/v1/metrics", ports.OTLPHTTP), run, 5, 7)
		sel := fmt.Sprintf(`gym_rollout_completed_total{nemo_run_id=%q}`, run)
		waitVector(t, prom, "count("+sel+")", nil)
		time.Sleep(3 * time.Second) // scrapes after both workers' last export
		got, err := harness.PromQuery(prom, "sum by (job, instance) ("+sel+")")
		require.NoError(t, err)
		require.Len(t, got, 1, "both workers' series have the same labels: %v", got)
		for _, v := range got {
			assert.Contains(t, []float64{5, 7}, v, "one worker's total, the other's lost")
		}
	})
}

// TestInstancePerProcessRemoteWrite: the two workers through an agent (deploy/agent.yaml,
// whose gymattrs gives each its instance) and a gateway (deploy/gateway.yaml, which runs no
// gymattrs) into Debian's Prometheus by remote write.
func TestInstancePerProcessRemoteWrite(t *testing.T) {
	t.Parallel()
	prom, gwPort := startGatewayToPrometheus(t)
	dir := filepath.Join(t.TempDir(), "node-w")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "gym"), 0o700))
	otlpHTTP := fmt.Sprintf("127.0.0.1:%d", harness.Port(t))
	startDeployed(t, "agent", "agent.yaml", agentEnv(t, dir, fmt.Sprintf("127.0.0.1:%d", gwPort), harness.Port(t), otlpHTTP))
	const run = "e2e-pid-remote-write"
	pids := runWorkers(t, "http://"+otlpHTTP+"/v1/metrics", run, 5, 7)
	checkWorkers(t, prom, run, pids, 5, 7)
}
