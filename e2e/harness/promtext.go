//go:build linux

package harness

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Readers of the Prometheus text format (the collector's own metrics, the exporter).

// TelemetryValue reads one of the collector's own metrics (Prometheus text) summed over its
// label sets that contain every label=value pair of labels.
func TelemetryValue(t *testing.T, p Ports, metric string, labels ...string) float64 {
	t.Helper()
	return MetricsValue(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", p.Telemetry), metric, labels...)
}

// MetricsValue is TelemetryValue of any Prometheus text endpoint (Prometheus' own /metrics).
func MetricsValue(t *testing.T, url, metric string, labels ...string) float64 {
	t.Helper()
	text, err := HTTPGet(url)
	require.NoError(t, err)
	return TextValue(text, metric, labels...)
}

// TextValue is MetricsValue of a Prometheus text already read (several values of one scrape).
func TextValue(text, metric string, labels ...string) float64 {
	var total float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		ls, value := ParseSample(line[len(metric):])
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if ls[labels[i]] != labels[i+1] {
				ok = false
			}
		}
		if v, err := strconv.ParseFloat(value, 64); ok && err == nil {
			total += v
		}
	}
	return total
}

// ParseSample reads `{a="x",b="y\"z"} 12.5` (optionally followed by a timestamp).
func ParseSample(s string) (map[string]string, string) {
	labels := map[string]string{}
	if strings.HasPrefix(s, "{") {
		s = s[1:]
		for len(s) > 0 && s[0] != '}' {
			eq := strings.Index(s, "=\"")
			if eq < 0 {
				break
			}
			name := s[:eq]
			s = s[eq+2:]
			var val strings.Builder
			for len(s) > 0 && s[0] != '"' {
				if s[0] == '\\' && len(s) > 1 {
					switch s[1] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(s[1])
					}
					s = s[2:]
					continue
				}
				val.WriteByte(s[0])
				s = s[1:]
			}
			labels[name] = val.String()
			s = strings.TrimPrefix(s, "\"")
			s = strings.TrimPrefix(s, ",")
		}
		s = strings.TrimPrefix(s, "}")
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return labels, ""
	}
	return labels, fields[0]
}
