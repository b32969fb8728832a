package harness

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/template"

	"github.com/stretchr/testify/require"
)

var (
	// Root is the repository's root directory (e2e's TestMain sets it).
	Root string
	// Bin is the otelcol-gym binary under test (e2e's TestMain sets it).
	Bin string
)

// ConfigDir holds the collector configurations of the e2e tests and the bench programs, as
// text/template files (the ports and paths of a run are fields of the data they are given);
// fragments.tmpl beside them defines the pieces they share ({{template "NAME" .}}).
const ConfigDir = "e2e/testdata/configs"

// LoadConfig fills the configuration template ConfigDir/name with data (a field the data
// lacks is an error, not an empty string).
func LoadConfig(name string, data any) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ConfigDir)
	tmpl, err := template.New(name).Option("missingkey=error").ParseFiles(
		filepath.Join(dir, "fragments.tmpl"), filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, name, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// RepoRoot is Root when e2e's TestMain set it, else the nearest directory at or above the
// working directory whose go.mod is this module's (a bench program runs from the repository).
func RepoRoot() (string, error) {
	if Root != "" {
		return Root, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/gym-telemetry/otelcol-gym\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no otelcol-gym checkout at or above the working directory")
		}
		dir = parent
	}
}

// Render fills a text/template configuration.
func Render(t *testing.T, tmpl string, data any) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, template.Must(template.New("config").Option("missingkey=error").Parse(tmpl)).Execute(&b, data))
	return b.String()
}

// Config is LoadConfig in a test.
func Config(t *testing.T, name string, data any) string {
	t.Helper()
	cfg, err := LoadConfig(name, data)
	require.NoError(t, err, "configuration %s", name)
	return cfg
}

// Data is what the configuration templates see: the collector's ports as .P and anything
// else a test adds.
type Data struct {
	P    Ports
	Sink string
	Dir  string
	X    map[string]any
}

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
