//go:build linux

package harness

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Clients of the collector's loopback endpoints.

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
