//go:build linux

package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBinaryHostileInput: the real binary on what any Gym process may write. Rewards of 1e308
// and -1.7e308 and token counts that sum past int64 are written as null or saturated, named,
// exit 0; a price of 1.7e308 is refused with the model, the key and the line, exit 2; --help of
// the command and of each subcommand prints its usage once, exit 0.
func TestBinaryHostileInput(t *testing.T) {
	bin := buildGymrun(t)
	var rows []string
	for range 20 {
		rows = append(rows, costRow(t, "t", "m", 1, map[string]any{"input_tokens": int64(9e18), "output_tokens": int64(math.MaxInt64)}))
	}
	stem := writeRun(t, append(rewardRows("b", 1e308, -1.7e308), rows...), nil)

	code, out, stderr := exitStatus(t, bin, "summary", "--json", stem)
	require.Equal(t, 0, code, stderr)
	var r Report
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Nil(t, r.Benchmarks["b"].Reward.Mean)
	assert.Equal(t, int64(math.MaxInt64), r.Benchmarks["t"].Tokens["input"]["m"], "saturated, never wrapped")
	assert.Equal(t, int64(math.MaxInt64), r.Benchmarks["t"].Tokens["output"]["m"])
	assert.Contains(t, r.Overflow, "/benchmarks/b/reward/mean")
	assert.Contains(t, r.Overflow, "/benchmarks/t/tokens/input/m")
	assert.Contains(t, stderr, stem+`: benchmark "b": its rewards`)
	assert.Contains(t, stderr, stem+`: benchmark "t": sums pass 9223372036854775807`)

	code, out, stderr = exitStatus(t, bin, "compare", "--json", stem, stem)
	require.Equal(t, 0, code, stderr)
	var cr CompareReport
	require.NoError(t, json.Unmarshal([]byte(out), &cr))
	assert.Equal(t, reasonNotFinite, cr.Benchmarks["b"].Reason)
	assert.Contains(t, stderr, stem+`: benchmark "b": its rewards`)

	table := filepath.Join(t.TempDir(), "prices.yaml")
	require.NoError(t, os.WriteFile(table, []byte("models:\n  m:\n    input: 1.7e308\n    output: cheap\n"), 0o600))
	code, out, stderr = exitStatus(t, bin, "summary", "--prices", table, stem)
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, stderr, table+`: models: "m": input: 1.7e+308 is not a price at line 3`)
	assert.Contains(t, stderr, `models: "m": output: "cheap" is not a price at line 4`)
	assert.NotContains(t, stderr, "cached_input")

	for _, args := range [][]string{{"--help"}, {"summary", "--help"}, {"compare", "--help"}, {"top", "--help"}, {"top", "-h"}} {
		code, out, stderr = exitStatus(t, bin, args...)
		assert.Equal(t, 0, code, "%q", args)
		assert.Equal(t, 1, strings.Count(out, "usage: gymrun "), "%q: %s", args, out)
		assert.Empty(t, stderr, "%q", args)
	}
}
