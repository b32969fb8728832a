//go:build linux

package e2e

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// apacheLicenseSHA256 is the SHA-256 of https://www.apache.org/licenses/LICENSE-2.0.txt, the
// text every Apache-2.0 project ships unchanged (the collector's modules carry the same bytes).
const apacheLicenseSHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// TestLicenseAndNotice: LICENSE is the Apache License 2.0, whole and unchanged; NOTICE names the
// licences of what the binary links and every vendored asset; it carries the NOTICE of every
// module linked into the binary under test that has one (Apache-2.0 section 4(d)), so a new
// dependency with a NOTICE fails here until NOTICE carries it; the Python package's metadata
// points at the same LICENSE.
func TestLicenseAndNotice(t *testing.T) {
	license, err := os.ReadFile(filepath.Join(harness.Root, "LICENSE"))
	require.NoError(t, err)
	sum := sha256.Sum256(license)
	assert.Equal(t, apacheLicenseSHA256, hex.EncodeToString(sum[:]), "LICENSE is not the Apache License 2.0 text, unchanged")

	noticeBytes, err := os.ReadFile(filepath.Join(harness.Root, "NOTICE"))
	require.NoError(t, err)
	notice := string(noticeBytes)
	require.True(t, strings.HasPrefix(notice, "otelcol-gym\nCopyright "), "NOTICE starts with the product and its copyright")
	for _, want := range []string{
		"Apache License, Version 2.0 (LICENSE)",
		"Apache-2.0", "BSD-3-Clause", "BSD-2-Clause", "MIT", "ISC", "MPL-2.0",
		"golang.org/x/crypto/x509roots/fallback",
		"deploy/testdata/charts/opentelemetry-collector/", "deploy/testdata/compose-spec/compose-spec.json",
		"testdata/gym-examples/example_rollouts.tar.gz",
	} {
		assert.True(t, strings.Contains(notice, want), "NOTICE does not name %q", want)
	}

	info, err := buildinfo.ReadFile(harness.Bin)
	require.NoError(t, err)
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	modcache := strings.TrimSpace(string(out))
	withNotice := 0
	for _, dep := range info.Deps {
		m := dep
		if dep.Replace != nil {
			m = dep.Replace
		}
		if m.Version == "" || m.Version == "(devel)" {
			continue // this repository's own module, from the working tree
		}
		dir := filepath.Join(modcache, escapeModulePath(m.Path)+"@"+m.Version)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("%s@%s linked into %s is not in the module cache %s: %v", m.Path, m.Version, harness.Bin, modcache, err)
		}
		for _, e := range entries {
			if name := strings.ToUpper(e.Name()); name == "NOTICE" || strings.HasPrefix(name, "NOTICE.") {
				withNotice++
				assert.True(t, strings.Contains(notice, "\n== "+dep.Path+" ==\n"), "NOTICE lacks the NOTICE of %s (%s)", dep.Path, filepath.Join(dir, e.Name()))
			}
		}
	}
	require.NotZero(t, withNotice, "no linked module has a NOTICE: the module cache was not read")

	pyproject, err := os.ReadFile(filepath.Join(harness.Root, "python", "pyproject.toml"))
	require.NoError(t, err)
	assert.Contains(t, string(pyproject), `license-files = ["LICENSE"]`)
	pyLicense, err := os.ReadFile(filepath.Join(harness.Root, "python", "LICENSE"))
	require.NoError(t, err)
	assert.Equal(t, license, pyLicense, "python/LICENSE is the repository's LICENSE")
}

// escapeModulePath is the module cache's case encoding: an upper-case letter is '!' and the
// letter in lower case.
func escapeModulePath(path string) string {
	var b strings.Builder
	for _, r := range path {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
