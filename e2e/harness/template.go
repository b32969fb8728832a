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

// ServiceTelemetry is the service::telemetry block of every test configuration: the
// Collector's own metrics on the test's free port (the library default, 8888, would collide
// between tests running in parallel).
// SinkExporterAndService is the exporters block of the configs that export to the test's OTLP
// sink, in collection order (no queue, no retry), and the start of their service block.
const SinkExporterAndService = `exporters:
  otlp_http:
    endpoint: {{.Sink}}
    encoding: proto
    retry_on_failure:
      enabled: false
    sending_queue:
      enabled: false
service:
  extensions: [health_check]
` + ServiceTelemetry

const ServiceTelemetry = `
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: {{.P.Telemetry}}`

// Data is what the configuration templates see: the collector's ports as .P and anything
// else a test adds.
type Data struct {
	P    Ports
	Sink string
	Dir  string
	X    map[string]any
}
