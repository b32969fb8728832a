package harness

import (
	"os"
	"os/exec"
)

// FindPrometheus is the prometheus binary to run: path when given and present, else
// $PROMETHEUS_BIN, Debian's /usr/bin/prometheus, or prometheus on PATH ("" when none is).
func FindPrometheus(path string) string {
	for _, p := range []string{path, os.Getenv("PROMETHEUS_BIN"), "/usr/bin/prometheus"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p
	}
	return ""
}
