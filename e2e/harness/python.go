//go:build linux

package harness

import (
	"os"
	"os/exec"
	"testing"
)

// Python processes.

// Python is python3's path. It is required in CI (.ci/run's machine has it); elsewhere a
// test that needs it is skipped.
func Python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is needed")
		}
		t.Skip("python3 is not installed")
	}
	return p
}
