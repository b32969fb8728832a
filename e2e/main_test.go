//go:build linux

package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

var (
	// gymeventsBin is the gymevents CLI, built from cmd/gymevents.
	gymeventsBin string
	// gymrunBin is the gymrun CLI, built from cmd/gymrun: the recipes write a job's summary
	// with it.
	gymrunBin string
)

// TestMain builds the collector once per run, before m.Run starts go test's -timeout clock
// (a cold ocb build takes minutes).
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "e2e: skipped in -short mode")
		os.Exit(0)
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	harness.Root, err = filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "otelcol-gym-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	if harness.Bin = os.Getenv("OTELCOL_GYM_BIN"); harness.Bin == "" {
		if err := buildCollector(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: building otelcol-gym:", err)
			return 1
		}
		harness.Bin = filepath.Join(harness.Root, "_build", "otelcol-gym")
	}
	gymeventsBin, gymrunBin = filepath.Join(tmp, "gymevents"), filepath.Join(tmp, "gymrun")
	for _, bin := range []string{gymeventsBin, gymrunBin} {
		name := filepath.Base(bin)
		if out, err := command(harness.Root, "go", "build", "-o", bin, "./cmd/"+name); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: building %s: %v\n%s", name, err, out)
			return 1
		}
	}
	return m.Run()
}

// buildCollector runs `make build` (ocb, only when a source changed), or ocb itself where
// make is missing.
func buildCollector() error {
	start := time.Now()
	var out []byte
	var err error
	if _, lerr := exec.LookPath("make"); lerr == nil {
		out, err = command(harness.Root, "make", "--no-print-directory", "build")
	} else {
		out, err = command(harness.Root, "go", "tool", "-modfile=tools/go.mod", "builder", "--config", "builder-config.yaml")
	}
	if err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "e2e: otelcol-gym ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

func command(dir, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.Bytes(), err
}
