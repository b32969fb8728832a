//go:build linux

package harness

import (
	"bytes"
	"testing"
	"text/template"

	"github.com/stretchr/testify/require"
)

// Configurations from text/template: the collector's ports and what a test adds.

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
