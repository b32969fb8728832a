package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gym-telemetry/otelcol-gym/"

// componentKinds are the folders whose children are collector components.
var componentKinds = []string{"receiver", "processor", "exporter", "extension", "connector"}

// engine are the packages of the engine that the rules below name.
var engine = []string{
	"internal/events", "internal/aggregate", "internal/rollouts", "internal/console",
	"internal/bound", "internal/transport", "internal/follow", "internal/procstats",
	"internal/checkpoint", "internal/gymjson", "internal/ingest", "internal/normalize",
	"internal/schema", "internal/clock", "internal/ratelog", "internal/storagerepair",
	"internal/flight", "internal/prices", "internal/live",
}

// tooling are the packages under internal/ that are not the engine: what builds it, tests it
// or shares a component's lifecycle. With engine, they are every package under internal/.
var tooling = []string{
	"internal/schemagen", "internal/gymgen", "internal/sharedcomponent", "internal/layout",
	"internal/follow/followtest", "internal/procstats/procstatstest", "internal/rollouts/rolloutstest", "internal/storagetest",
	"internal/configtest", "internal/pdatatest",
}

// forbidden lists, for a package (and the packages under it), the packages (and those under
// them) that its non-test code must not import, with the reason.
var forbidden = []struct {
	pkg, reason string
	not         []string
}{
	{"internal/transport", "transports move lines: the decoder behind them is injected", []string{"internal/events", "internal/aggregate", "internal/rollouts", "internal/console"}},
	{"internal/follow", "the follower moves lines and rows: the consumer is injected", []string{"internal/events", "internal/aggregate", "internal/rollouts", "internal/console", "internal/transport"}},
	{"internal/aggregate", "the aggregator applies events: it decodes no line and follows no file", []string{"internal/gymjson", "internal/rollouts", "internal/console", "internal/transport", "internal/follow", "internal/checkpoint", "internal/bound"}},
	{"internal/rollouts", "the run files hand their events to a sink: they know no aggregator", []string{"internal/aggregate", "internal/transport", "internal/console", "internal/bound"}},
	{"internal/checkpoint", "the checkpoint owns the record; each source registers its own state", without(engine, "internal/checkpoint")},
	{"internal/events", "the events decoder knows nothing of what applies its events", without(engine, "internal/events", "internal/gymjson", "internal/ingest", "internal/schema", "internal/ratelog", "internal/clock")},
	{"internal/console", "the console decoders hand pdata to a sink; they know no aggregator or rules", without(engine, "internal/console", "internal/gymjson", "internal/ingest", "internal/ratelog", "internal/clock")},
	{"internal/bound", "the bounding rules are pdata in, pdata out", without(engine, "internal/bound", "internal/normalize", "internal/schema", "internal/ratelog", "internal/clock")},
	{"internal/flight", "the flight recorder reads spans: it knows no decoder, aggregator or bounding rule", without(engine, "internal/flight", "internal/normalize", "internal/schema", "internal/clock")},
	{"internal/prices", "the price table and the cost formula stand on the schema and its value rules alone", without(engine, "internal/prices", "internal/normalize", "internal/schema")},
	{"internal/live", "the live page reads the exported pdata (and prices it by the one cost formula): it knows no decoder, aggregator, bounding rule or transport", without(engine, "internal/live", "internal/schema", "internal/clock", "internal/prices")},
	{"internal/gymjson", "the one JSON scanner is a leaf that every decoder stands on", without(engine, "internal/gymjson")},
	{"internal/ingest", "the vocabulary of transports and decoders is a leaf", without(engine, "internal/ingest")},
	{"internal/schema", "the schema is the leaf everything derives from", without(engine, "internal/schema")},
	{"internal/clock", "the clock is a leaf", without(engine, "internal/clock")},
	{"internal/ratelog", "the one rate limit of log lines is a leaf", without(engine, "internal/ratelog")},
	{"internal/storagerepair", "the storage repair is a leaf of the storage extension", without(engine, "internal/storagerepair")},
}

func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
}

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// packages lists the module's packages with their imports (go list: the go command the test
// runs with).
func packages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module)
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages of the module: not the module's tree", len(pkgs))
	}
	return pkgs
}

// component returns the component a package belongs to ("receiver/gymreceiver"), or "".
func component(path string) string {
	parts := strings.SplitN(path, "/", 3)
	if len(parts) >= 2 && slices.Contains(componentKinds, parts[0]) {
		return parts[0] + "/" + parts[1]
	}
	return ""
}

// under reports whether path is pkg or a package under it.
func under(path, pkg string) bool { return path == pkg || strings.HasPrefix(path, pkg+"/") }

// own returns the module's packages that imports name, without the module prefix.
func own(imports []string) []string {
	var out []string
	for _, imp := range imports {
		if rel, ok := strings.CutPrefix(imp, module); ok {
			out = append(out, rel)
		}
	}
	return out
}

func violations(pkgs []pkg) []string {
	var bad []string
	for _, p := range pkgs {
		all := own(slices.Concat(p.Imports, p.TestImports, p.XTestImports))
		for _, imp := range all {
			c := component(imp)
			switch {
			case c == "":
			case under(p.ImportPath, "internal"):
				bad = append(bad, p.ImportPath+" imports the component package "+imp+": internal/ imports no component")
			case component(p.ImportPath) != "" && component(p.ImportPath) != c:
				bad = append(bad, p.ImportPath+" imports "+imp+": no component imports another component; share through internal/")
			}
		}
		for _, rule := range forbidden {
			if !under(p.ImportPath, rule.pkg) {
				continue
			}
			for _, imp := range own(p.Imports) {
				for _, not := range rule.not {
					if under(imp, not) {
						bad = append(bad, p.ImportPath+" imports "+imp+": "+rule.reason)
					}
				}
			}
		}
	}
	return bad
}

// TestImportRules keeps the house's walls: docs/architecture.md draws them.
func TestImportRules(t *testing.T) {
	for _, v := range violations(packages(t)) {
		t.Error(v)
	}
}

// TestImportRulesCatch: each kind of forbidden import is found (the rules are not vacuous).
func TestImportRulesCatch(t *testing.T) {
	pkgs := []pkg{
		{ImportPath: "internal/aggregate", Imports: []string{module + "processor/gymattrs"}},
		{ImportPath: "receiver/gymconsolereceiver", Imports: []string{module + "processor/gymattrs"}},
		{ImportPath: "receiver/gymconsolereceiver/internal/x", TestImports: []string{module + "receiver/gymreceiver"}},
		{ImportPath: "internal/transport", Imports: []string{module + "internal/aggregate"}},
		{ImportPath: "internal/checkpoint", Imports: []string{module + "internal/events"}},
		{ImportPath: "internal/gymjson", Imports: []string{module + "internal/ingest"}},
		{ImportPath: "receiver/gymreceiver", Imports: []string{module + "receiver/gymreceiver/internal/metadata", module + "internal/aggregate"}},
		{ImportPath: "internal/transport", TestImports: []string{module + "internal/aggregate"}},
		{ImportPath: "internal/rollouts", Imports: []string{module + "internal/aggregate"}},
		{ImportPath: "internal/aggregate", Imports: []string{module + "internal/gymjson"}},
	}
	got := violations(pkgs)
	if len(got) != 8 {
		t.Fatalf("want the 8 forbidden imports (a component's own and an engine's test imports are allowed), got %d:\n%s", len(got), strings.Join(got, "\n"))
	}
}

// TestEveryPackageKnown: every package under internal/ is engine (with its rules above) or
// tooling, and docs/architecture.md names it, so that a new package cannot go unseen.
func TestEveryPackageKnown(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	named := docPackages(string(doc))
	for _, p := range packages(t) {
		if !under(p.ImportPath, "internal") {
			continue
		}
		// A package's own internal/ (its generated telemetry) is part of it.
		if parent, _, ok := strings.Cut(strings.TrimPrefix(p.ImportPath, "internal/"), "/internal/"); ok {
			p.ImportPath = "internal/" + parent
		}
		if !slices.Contains(engine, p.ImportPath) && !slices.Contains(tooling, p.ImportPath) {
			t.Errorf("%s is neither engine nor tooling here: add it to one list, with its rules", p.ImportPath)
		}
		if !named[p.ImportPath] {
			t.Errorf("docs/architecture.md does not name %s in its layout", p.ImportPath)
		}
	}
	if len(named) == 0 {
		t.Fatal("no package found in docs/architecture.md's layout")
	}
}

// docPackages returns the packages the layout block of docs/architecture.md names: under the
// `internal/` line, each line indented by two spaces begins with a package's path.
func docPackages(doc string) map[string]bool {
	named := map[string]bool{}
	in := false
	for line := range strings.Lines(doc) {
		switch {
		case strings.HasPrefix(line, "internal/"):
			in = true
		case in && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   "):
			named["internal/"+strings.Fields(line)[0]] = true
		case in && strings.TrimSpace(line) != "" && !strings.HasPrefix(line, " "):
			in = false
		}
	}
	return named
}
