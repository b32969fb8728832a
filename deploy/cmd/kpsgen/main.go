// Command kpsgen writes the generated files of the kube-prometheus-stack overlay
// (deploy/kube-prometheus-stack/): run it from deploy/ (go generate does).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gym-telemetry/otelcol-gym/deploy"
)

func main() {
	files, err := deploy.KubePrometheusStackFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kpsgen:", err)
		os.Exit(1)
	}
	// Dashboards removed from grafana/dashboards go from the overlay too.
	old, _ := filepath.Glob(filepath.Join(deploy.KubePrometheusStackDir, "dashboards", "*.json"))
	for _, f := range old {
		if _, ok := files[f]; !ok && strings.HasSuffix(f, ".json") {
			_ = os.Remove(f)
		}
	}
	for path, data := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kpsgen:", err)
			os.Exit(1)
		}
	}
}
