//go:build linux

package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	// repoRoot is the repository's root directory.
	repoRoot string
	// collectorBin is the otelcol-gym binary under test.
	collectorBin string
	// gymeventsBin is the gymevents CLI, built from cmd/gymevents.
	gymeventsBin string
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
	repoRoot, err = filepath.Abs("..")
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

	if collectorBin = os.Getenv("OTELCOL_GYM_BIN"); collectorBin == "" {
		if err := buildCollector(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: building otelcol-gym:", err)
			return 1
		}
		collectorBin = filepath.Join(repoRoot, "_build", "otelcol-gym")
	}
	gymeventsBin = filepath.Join(tmp, "gymevents")
	if out, err := command(repoRoot, "go", "build", "-o", gymeventsBin, "./cmd/gymevents"); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building gymevents: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// statInputs stats every file the collector and gymevents are built from. go test caches a
// package's result keyed on the files its test opened or statted (their size and mtime), and
// this package's Go imports do not include the receiver: without this, a changed receiver
// would leave a cached e2e pass. go test only records what happens after m.Run starts, so
// the tests call it (useCollector), not TestMain.
func statInputs() {
	_, _ = os.Stat(collectorBin)
	for _, name := range []string{"go.mod", "go.sum", "builder-config.yaml", "metadata.yaml", "tools/go.mod", "tools/go.sum"} {
		_, _ = os.Stat(filepath.Join(repoRoot, name))
	}
	for _, dir := range []string{"receiver", "processor", "internal", "cmd", "config", "testdata"} {
		_ = filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
			if err == nil {
				_, _ = os.Stat(path)
			}
			return nil
		})
	}
}

var inputsOnce sync.Once

// useCollector is called by every test that runs the collector binary.
func useCollector() { inputsOnce.Do(statInputs) }

// buildCollector runs `make build` (ocb, only when a source changed), or ocb itself where
// make is missing.
func buildCollector() error {
	start := time.Now()
	var out []byte
	var err error
	if _, lerr := exec.LookPath("make"); lerr == nil {
		out, err = command(repoRoot, "make", "--no-print-directory", "build")
	} else {
		out, err = command(repoRoot, "go", "tool", "-modfile=tools/go.mod", "builder", "--config", "builder-config.yaml")
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
