//go:build linux

package harness

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// The repository and the binary under test.

// statInputs stats every file the collector and gymevents are built from. go test caches a
// package's result keyed on the files its test opened or statted (their size and mtime), and
// this package's Go imports do not include the receiver: without this, a changed receiver
// would leave a cached e2e pass. go test only records what happens after m.Run starts, so
// the tests call it (UseCollector), not TestMain.
func statInputs() {
	_, _ = os.Stat(Bin)
	for _, name := range []string{"go.mod", "go.sum", "builder-config.yaml", "metadata.yaml", "tools/go.mod", "tools/go.sum"} {
		_, _ = os.Stat(filepath.Join(Root, name))
	}
	for _, dir := range []string{"receiver", "processor", "internal", "cmd", "config", "testdata"} {
		_ = filepath.WalkDir(filepath.Join(Root, dir), func(path string, d fs.DirEntry, err error) error {
			if err == nil {
				_, _ = os.Stat(path)
			}
			return nil
		})
	}
}

var inputsOnce sync.Once

// UseCollector is called by every test that runs the collector binary.
func UseCollector() { inputsOnce.Do(statInputs) }
