package harness

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"text/template"
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
