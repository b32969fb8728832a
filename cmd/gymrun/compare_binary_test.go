//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// buildGymrun builds the gymrun binary into a temporary directory.
func buildGymrun(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gymrun")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// exitStatus runs the binary and returns its exit status, standard output and error.
func exitStatus(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errOut.String()
}

// TestCompareBinary: the real binary's exit status is the CI gate (1 on a regression, 0
// without, 2 on bad input), and its HTML report renders in headless Chromium with every
// benchmark, its change and its charts, and benchmark names escaped.
func TestCompareBinary(t *testing.T) {
	bin := buildGymrun(t)
	example := filepath.Join("..", "..", exampleDir)
	a, b := filepath.Join(example, "a"), filepath.Join(example, "b")

	code, out, _ := exitStatus(t, bin, "compare", a, b)
	assert.Equal(t, 1, code, out)
	code, out, _ = exitStatus(t, bin, "compare", a, a)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "verdict: no_change")
	code, _, stderr := exitStatus(t, bin, "compare", a, filepath.Join(example, "nope"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, filepath.Join(example, "nope"))

	// A benchmark whose name is markup, with a change to draw.
	odd := `<script>alert(1)</script>&"x"`
	oddA := writeRun(t, mainRows(odd, binary(40, 30), true), nil)
	oddB := writeRun(t, mainRows(odd, binary(40, 15), true), nil)
	dir := t.TempDir()
	for _, c := range []struct{ name, a, b string }{{"example", a, b}, {"odd", oddA, oddB}} {
		report := filepath.Join(dir, c.name+".html")
		code, _, stderr = exitStatus(t, bin, "compare", "--html", report, c.a, c.b)
		require.Equal(t, 1, code, stderr)
		html, err := os.ReadFile(report)
		require.NoError(t, err)
		assert.NotContains(t, string(html), "<script", "no script, and names escaped")
		assert.NotRegexp(t, `(?i)\bsrc=|url\(|@import|href="[^#]`, string(html), "nothing fetched")
	}

	_, out, _ = exitStatus(t, bin, "compare", "--json", a, b)
	var r CompareReport
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	chromium := harness.Chromium(t)
	dom := dumpDOM(t, chromium, filepath.Join(dir, "example.html"))
	require.Len(t, r.Benchmarks, 3)
	for name, c := range r.Benchmarks {
		assert.Contains(t, dom, `<h2 id="b-`+name+`">`+name)
		assert.Contains(t, dom, fmt.Sprintf("%+.4f", *c.Delta), name)
		assert.Contains(t, dom, fmt.Sprintf("[%+.4f, %+.4f]", c.CI95[0], c.CI95[1]), name)
		assert.Contains(t, dom, fmt.Sprintf("%.4f", *c.A.Mean), name)
		assert.Contains(t, dom, fmt.Sprintf("%.4f", *c.B.Mean), name)
		assert.Contains(t, dom, `<span class="verdict `+c.Verdict+`">`, name)
		assert.Contains(t, dom, fmt.Sprintf("%.2g (%.2g)", *c.PValue, *c.PAdj), name)
		if c.MDE80 != nil {
			assert.Contains(t, dom, fmt.Sprintf("±%.4f", *c.MDE80), name)
		}
	}
	assert.Contains(t, dom, "holm over 3 benchmarks at level 0.05")
	assert.Equal(t, 3, strings.Count(dom, `<svg class="interval"`), "an interval per benchmark")
	assert.Equal(t, 3, strings.Count(dom, `<svg class="hist"`), "a histogram per benchmark")
	assert.Equal(t, 3, strings.Count(dom, "<circle"))
	assert.Regexp(t, regexp.MustCompile(`<rect class="a"[^>]*height="[1-9]`), dom)
	assert.Regexp(t, regexp.MustCompile(`<rect class="b"[^>]*height="[1-9]`), dom)

	dom = dumpDOM(t, chromium, filepath.Join(dir, "odd.html"))
	assert.Contains(t, dom, `&lt;script&gt;alert(1)&lt;/script&gt;&amp;"x"`)
	assert.NotContains(t, dom, "<script")
}

// dumpDOM is the DOM headless Chromium builds from the file. Every request it might make goes to
// a closed loopback port and no name resolves: the report must need none.
func dumpDOM(t *testing.T, chromium, file string) string {
	t.Helper()
	abs, err := filepath.Abs(file)
	require.NoError(t, err)
	out, err := exec.Command(chromium, append(chromiumFlags(t), "--dump-dom", "file://"+abs)...).Output()
	require.NoError(t, err)
	return string(out)
}

func chromiumFlags(t *testing.T) []string {
	return append(harness.Headless(t),
		"--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", "--host-resolver-rules=MAP * ~NOTFOUND")
}
