package normalize

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// The hot functions allocate nothing, on kept values, fallbacks and cut values alike.
func TestNoAllocations(t *testing.T) {
	r := mustNew(t, []string{"my_kind"}, []string{"my_check"}, []string{"noisy"})
	var (
		kind, ns, badKind   = []byte("transport_timeout"), []byte("sandbox:oom"), []byte("free text kind")
		class, badClass     = []byte("agent_request_failed"), []byte("Bad Class")
		typ, badTyp         = []byte("asyncio.TimeoutError"), []byte("a..b")
		check, badCheck     = []byte("model_call_failed"), []byte("whatever")
		rt, badRt           = []byte("/v1/items/{id}"), []byte("/a?b=1")
		st, badSt           = []byte("orchestrator"), []byte("gateway")
		long                = []byte(strings.Repeat("€", 200))
		invalid             = []byte("abc\xffdef")
		outcome, badOutcome = []byte("scored"), []byte("won")
	)
	cases := map[string]func(){
		"FailureKind":        func() { r.FailureKind(kind); r.FailureKind(ns); r.FailureKind(badKind); r.FailureKind(nil) },
		"FailureKind nil":    func() { (*Registry)(nil).FailureKind(kind); (*Registry)(nil).FailureKind(badKind) },
		"HealthCheck":        func() { r.HealthCheck(check); r.HealthCheck(badCheck) },
		"IgnoredHealthCheck": func() { r.IgnoredHealthCheck(check); r.IgnoredHealthCheck(badCheck) },
		"FailureClass":       func() { FailureClass(class); FailureClass(badClass) },
		"FailureType":        func() { FailureType(typ); FailureType(badTyp) },
		"RewardRange": func() {
			RewardRange(0.5)
			RewardRange(math.NaN())
			RewardRange(math.Inf(-1))
			RewardRange(1)
		},
		"Route":        func() { Route(rt); Route(badRt) },
		"Phase":        func() { Phase(true); Phase(false) },
		"StatusCode":   func() { StatusCode(200); StatusCode(42) },
		"ServerType":   func() { ServerType(st); ServerType(badSt) },
		"Cap":          func() { Cap(long, 256); Cap(kind, 256) },
		"GCGeneration": func() { GCGeneration(2); GCGeneration(7) },
		"Int":          func() { Int(schema.AttrHttpResponseStatusCode, 200); Int(schema.AttrNemoGymGcGeneration, 1) },
		"String": func() {
			r.String(schema.AttrNemoGymRolloutDispatchName, long)
			r.String(schema.AttrNemoGymSandboxProvider, invalid)
			r.String(schema.AttrNemoGymRolloutOutcome, outcome)
			r.String(schema.AttrNemoGymRolloutOutcome, badOutcome)
			r.String(schema.AttrNemoGymFailureKind, badKind)
			r.String(schema.AttrNemoGymFailureClass, class)
			r.String(schema.AttrNemoGymFailureType, badTyp)
			r.String(schema.AttrNemoGymHealthCheck, check)
			r.String(schema.AttrHttpRoute, badRt)
			r.String(schema.AttrNemoGymServerType, st)
			r.String(schema.AttrHttpResponseStatusCode, outcome)
		},
	}
	for name, f := range cases {
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, n)
		}
	}
}

// TestNoSchemaLiteralsInCode: no value, fallback, registry entry or pattern of the schema is
// typed again in the package's non-test code (comments aside); they all come from package
// schema.
func TestNoSchemaLiteralsInCode(t *testing.T) {
	forbidden := map[string]bool{}
	for id := range schema.NumAttributes {
		a := schema.Attr(id)
		for _, v := range a.Values {
			forbidden[v] = true
		}
		if a.Fallback != "" {
			forbidden[a.Fallback] = true
		}
		if a.Pattern != "" {
			forbidden[a.Pattern] = true
		}
	}
	for _, v := range schema.FailureKinds {
		forbidden[v] = true
	}
	for _, v := range schema.HealthChecks {
		forbidden[v] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok {
				return true
			}
			switch lit.Kind {
			case token.STRING:
				s, err := strconv.Unquote(lit.Value)
				if err == nil && forbidden[s] {
					t.Errorf("%s: schema value %q typed by hand", fset.Position(lit.Pos()), s)
				}
			case token.INT:
				// The status-code range and the 64/128/256-byte caps come from the schema too.
				switch lit.Value {
				case "64", "100", "128", "256", "599":
					t.Errorf("%s: schema number %s typed by hand", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
	}
}
