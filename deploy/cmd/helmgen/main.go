// Command helmgen writes the Helm values files that carry the collector configuration
// (deploy/kubernetes/values-*-config.yaml): run it from deploy/ (go generate does).
package main

import (
	"fmt"
	"os"

	"github.com/gym-telemetry/otelcol-gym/deploy"
)

func main() {
	files, err := deploy.HelmConfigFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helmgen:", err)
		os.Exit(1)
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "helmgen:", err)
			os.Exit(1)
		}
	}
}
