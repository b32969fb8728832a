//go:build linux

package harness

import (
	"os"
	"testing"
)

// Chromium is headless Chromium's path: CHROMIUM_BIN, else Debian's chromium (.ci/run installs
// it; Tool: required in CI, skipped elsewhere).
func Chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM_BIN"); p != "" {
		return p
	}
	return Tool(t, "chromium", "chromium", "chromium-browser")
}

// Headless are the flags every test's Chromium runs with: headless, in a profile of the test's
// own, without the first-run and background requests a browser makes on its own. A test adds
// how it keeps the page's own requests on the machine (resolver rules, a dead proxy).
func Headless(t *testing.T) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--disable-background-networking", "--disable-component-update", "--disable-sync"}
}
