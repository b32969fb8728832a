package schemagen

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func realSchema(t *testing.T) (*Schema, string) {
	t.Helper()
	data, err := os.ReadFile("../../metadata.yaml")
	require.NoError(t, err)
	s, err := Parse(data)
	require.NoError(t, err)
	return s, string(data)
}

// TestPythonIsFresh fails when python/otelcol_gym/_schema.py no longer matches metadata.yaml:
// run `make generate`.
func TestPythonIsFresh(t *testing.T) {
	s, _ := realSchema(t)
	src, err := s.Python()
	require.NoError(t, err)
	onDisk, err := os.ReadFile("../../python/otelcol_gym/_schema.py")
	require.NoError(t, err)
	assert.Equal(t, string(src), string(onDisk), "python/otelcol_gym/_schema.py is stale: run make generate")
	again, err := s.Python()
	require.NoError(t, err)
	assert.Equal(t, src, again, "the output is deterministic")
}

func TestPythonLiterals(t *testing.T) {
	for in, want := range map[string]string{
		"":                            `""`,
		"gym.sandbox":                 `"gym.sandbox"`,
		`a"b\c`:                       `"a\"b\\c"`,
		"tab\tnl\ncr\rnul\x00del\x7f": `"tab\tnl\ncr\x0dnul\x00del\x7f"`,
		"é✓😀":                         `"\xe9\u2713\U0001f600"`,
		"bad\xffbyte":                 `"bad\ufffdbyte"`,
	} {
		assert.Equal(t, want, pyString(in), "%q", in)
	}
	for in, want := range map[float64]string{
		0: "0", 1: "1", 250: "250", 1.8e6: "1800000", -3: "-3", 0.5: "0.5", 0.01: "0.01",
		1e-05: "1e-05", 123456789.125: "1.23456789125e+08", 1 << 53: "9.007199254740992e+15", 1e20: "1e+20",
	} {
		got, err := pyFloat(in)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%v", in)
	}
	_, err := pyFloats([]float64{1, math.Inf(1)})
	assert.ErrorContains(t, err, "not a finite number")
	assert.Equal(t, "()", pyStrings(nil))
	assert.Equal(t, `("a",)`, pyStrings([]string{"a"}))
	assert.Equal(t, "(0, 1, 2)", pyInts([]int64{0, 1, 2}))
}

// Two names of the schema that become one Python name, or a name that is no Python name,
// are refused.
func TestPythonRejectsNames(t *testing.T) {
	_, good := realSchema(t)
	attr := "  cpu.mode:\n    type: string\n    rule: enum\n    values: [user, system, wait]\n    description: The CPU mode (OpenTelemetry process conventions).\n"
	require.Contains(t, good, attr)
	inst := "  process.thread.count:\n    group: Host process stats\n    description: Process threads count.\n    kind: updown\n    unit: \"{thread}\"\n    source: process\n"
	require.Contains(t, good, inst)
	for _, c := range []struct{ name, from, to, want string }{
		{"attribute clash", attr, attr + strings.ReplaceAll(attr, "cpu.mode", "cpu_mode"), "its Python name ATTR_CPU_MODE is attribute cpu.mode's too"},
		{"not a Python name", attr, attr + strings.ReplaceAll(attr, "cpu.mode", "cpu.mode-2"), "ATTR_CPU_MODE-2 is not a Python constant's name"},
		{"the module's own name", inst, strings.ReplaceAll(inst, "process.thread.count", "attributes"), "its Python name ATTRIBUTES is the module's own ATTRIBUTES's too"},
		{"instrument clash", inst, inst + strings.ReplaceAll(inst, "process.thread.count", "process.thread_count"), "its Python name PROCESS_THREAD_COUNT is instrument process.thread.count's too"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(strings.Replace(good, c.from, c.to, 1)))
			require.NoError(t, err)
			_, err = s.Python()
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// The Python module, imported by python3, holds the schema's values exactly: strings with
// quotes, backslashes, control and non-ASCII characters, boundaries that are no ints, and a
// description over several lines (comments that must stay comments). Skipped without python3.
func TestPythonReadsBackAsTheSchema(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH")
	}
	s, good := realSchema(t)
	tricky := good
	for _, r := range [][2]string{
		{"LAG_MS: [0.5, 1,", "LAG_MS: [1e-05, 0.3, 1,"},
		{"2500, 5000]", "2500, 5000, 123456789.125, 1e+20]"},
		{"values: [scored, failed, omitted]", `values: [scored, failed, omitted, "q\"uo\\te", "é✓😀", "a\rb\u0000c"]`},
		{"description: How a rollout ended.", `description: "How a \"rollout\"\nended\r\n\\ print('not code')\r– ✓\u0000."`},
		{"fallback: unmatched", `fallback: "un'matched\\"`},
	} {
		require.Contains(t, tricky, r[0])
		tricky = strings.Replace(tricky, r[0], r[1], 1)
	}
	ts, err := Parse([]byte(tricky))
	require.NoError(t, err)
	for name, sch := range map[string]*Schema{"metadata.yaml": s, "tricky": ts} {
		t.Run(name, func(t *testing.T) {
			src, err := sch.Python()
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "_schema.py"), src, 0o644))
			cmd := exec.Command(python, "-c", pyDump, dir)
			out, err := cmd.Output()
			require.NoError(t, err, "python3: %s", exitStderr(err))
			var got any
			require.NoError(t, json.Unmarshal(out, &got))
			want := goView(t, sch)
			assert.Equal(t, want, got)
		})
	}
}

func exitStderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// pyDump prints the module's values as JSON, in the shape of goView.
const pyDump = `
import json, sys
sys.path.insert(0, sys.argv[1])
import _schema as s
print(json.dumps({
    "limits": [s.DEFAULT_STRING_MAX_BYTES, s.RESOURCE_MAX_ATTRIBUTES, s.RESOURCE_MAX_KEY_BYTES, s.DEFAULT_CARDINALITY_LIMIT, s.DEFAULT_MAX_LINE_BYTES],
    "keys": [s.OVERFLOW_ATTRIBUTE, s.RESOURCE_SOURCE_KEY, s.RESOURCE_FILE_PATH_KEY],
    "buckets": {k[len("BUCKETS_"):]: [[b, type(b).__name__] for b in v] for k, v in vars(s).items() if k.startswith("BUCKETS_")},
    "failure_kinds": list(s.FAILURE_KINDS),
    "health_checks": list(s.HEALTH_CHECKS),
    "attributes": [[a.key, a.type, a.rule, list(a.values), list(a.int_values), a.fallback, a.pattern, a.max_bytes, a.min, a.max] for a in s.ATTRIBUTES.values()],
    "instruments": [[i.name, i.kind, i.unit, i.value_type, i.source, i.snapshot, i.buckets, list(i.bounds), list(i.events),
        [[a.key, None if a.values is None else list(a.values), a.optional, list(i.attribute_values(a.key))] for a in i.attributes]]
        for i in s.INSTRUMENTS.values()],
    "by_name": [k == v.name for k, v in s.INSTRUMENTS.items()] + [k == v.key for k, v in s.ATTRIBUTES.items()],
}))
`

// goView is what pyDump must print, from the Go side.
func goView(t *testing.T, s *Schema) any {
	t.Helper()
	list := func(ss []string) []string {
		if ss == nil {
			return []string{}
		}
		return ss
	}
	buckets := map[string]any{}
	for _, bs := range s.Buckets {
		var vs []any
		for _, b := range bs.Bounds {
			typ := "float" // an integral boundary is an int in Python, as NeMo Gym writes it
			if b == math.Trunc(b) && math.Abs(b) < 1<<53 {
				typ = "int"
			}
			vs = append(vs, []any{b, typ})
		}
		buckets[bs.Name] = vs
	}
	var attrs []any
	var byName []bool
	for _, a := range s.Attrs {
		ints := a.IntValues
		if ints == nil {
			ints = []int64{}
		}
		minV, maxV := int64(0), int64(0)
		if a.Rule == "status_code" {
			minV, maxV = a.Min, a.Max
		}
		attrs = append(attrs, []any{a.Key, a.Type, a.Rule, list(a.Values), ints, a.Fallback, a.Pattern, a.MaxBytes, minV, maxV})
	}
	var insts []any
	for _, in := range s.Instruments {
		var ia []any
		for _, a := range in.Attributes {
			var narrowed any
			if a.Values != nil {
				narrowed = a.Values
			}
			own := a.Values
			if own == nil {
				own = s.Attrs[s.attrIndex[a.Key]].Values
			}
			ia = append(ia, []any{a.Key, narrowed, a.Optional, list(own)})
		}
		if ia == nil {
			ia = []any{}
		}
		bounds := in.Bounds
		if bounds == nil {
			bounds = []float64{}
		}
		insts = append(insts, []any{in.Name, in.Kind, in.Unit, in.ValueType, in.Source, in.Snapshot, in.Buckets, bounds, list(in.Events), ia})
		byName = append(byName, true)
	}
	for range s.Attrs {
		byName = append(byName, true)
	}
	view := map[string]any{
		"limits":        []int{s.Limits.StringMaxBytes, s.Limits.ResourceMaxAttributes, s.Limits.ResourceMaxKeyBytes, s.Limits.DefaultCardinalityLimit, s.Limits.DefaultMaxLineBytes},
		"keys":          []string{s.OverflowAttribute, s.DefaultResource.SourceKey, s.DefaultResource.FilePathKey},
		"buckets":       buckets,
		"failure_kinds": s.Registries.FailureKinds,
		"health_checks": s.Registries.HealthChecks,
		"attributes":    attrs,
		"instruments":   insts,
		"by_name":       byName,
	}
	// Through JSON, so that both sides have the same types.
	b, err := json.Marshal(view)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}
