//go:build linux

package harness

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Clients of the collector's loopback endpoints, and readers of the Prometheus text format (the
// collector's own metrics, the exporter).

// SendStream writes data on a new connection to a stream endpoint and closes it.
func SendStream(t *testing.T, network, addr, data string) {
	t.Helper()
	c, err := net.DialTimeout(network, addr, 10*time.Second)
	require.NoError(t, err, "dial %s %s", network, addr)
	defer c.Close()
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(30*time.Second)))
	_, err = io.WriteString(c, data)
	require.NoError(t, err)
}

// DialUnix connects to a Unix stream socket.
func DialUnix(path string) (net.Conn, error) {
	return net.DialTimeout("unix", path, 10*time.Second)
}

// Post sends body to url with the given headers (Content-Type application/x-ndjson unless
// they name one) and returns the status and answer.
func Post(t *testing.T, client *http.Client, url, body string, header map[string]string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-ndjson")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

// HTTPGet GETs url and returns its body; a status other than 200 is an error.
func HTTPGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(data), nil
}

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
