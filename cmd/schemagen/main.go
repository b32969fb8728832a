// Command schemagen generates internal/schema/schema_gen.go, docs/metrics.md,
// python/otelcol_gym/_schema.py and the dashboards' instrument table
// (deploy/grafana/schema_tables.json) from the top-level metadata.yaml.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gym-telemetry/otelcol-gym/internal/schemagen"
)

func main() {
	in := flag.String("in", "metadata.yaml", "the schema")
	goOut := flag.String("go", "internal/schema/schema_gen.go", "the Go view to write")
	mdOut := flag.String("md", "docs/metrics.md", "the metric reference to write")
	pyOut := flag.String("py", "python/otelcol_gym/_schema.py", "the Python emitter's view to write")
	tablesOut := flag.String("tables", "deploy/grafana/schema_tables.json", "the dashboards' instrument table to write")
	flag.Parse()
	if err := run(*in, *goOut, *mdOut, *pyOut, *tablesOut); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

func run(in, goOut, mdOut, pyOut, tablesOut string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	s, err := schemagen.Parse(data)
	if err != nil {
		return err
	}
	src, err := s.Go()
	if err != nil {
		return err
	}
	py, err := s.Python()
	if err != nil {
		return err
	}
	if err := os.WriteFile(goOut, src, 0o644); err != nil {
		return err
	}
	tables, err := s.Tables()
	if err != nil {
		return err
	}
	if err := os.WriteFile(pyOut, py, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(tablesOut, tables, 0o644); err != nil {
		return err
	}
	return os.WriteFile(mdOut, s.Markdown(), 0o644)
}
