// Package rolloutstest gives tests NeMo Gym's example rollouts (testdata/gym-examples,
// PROVENANCE.md there) as files on disk.
package rolloutstest

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// UnpackExamples writes the example rollout files of examplesDir (the repository's
// testdata/gym-examples, relative to the test's package) into a directory of their own and
// returns it with their paths, sorted.
func UnpackExamples(t testing.TB, examplesDir string) (dir string, paths []string) {
	t.Helper()
	f, err := os.Open(filepath.Join(examplesDir, "example_rollouts.tar.gz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	dir = t.TempDir()
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		require.True(t, strings.HasPrefix(p, dir+string(filepath.Separator)), h.Name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		paths = append(paths, p)
	}
	sort.Strings(paths)
	require.Greater(t, len(paths), 100)
	return dir, paths
}
