//go:build linux

package harness

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
)

// File helpers.

// AppendFile appends data to a file, creating it, as a writer does (the follow engine's tests
// share it).
var AppendFile = followtest.AppendFile

// CopyFile copies a file, made executable (a binary or a script a test runs).
func CopyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
