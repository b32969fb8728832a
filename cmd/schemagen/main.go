// Command schemagen generates internal/schema/schema_gen.go and docs/metrics.md from the
// top-level metadata.yaml.
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
	flag.Parse()
	if err := run(*in, *goOut, *mdOut); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

func run(in, goOut, mdOut string) error {
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
	if err := os.WriteFile(goOut, src, 0o644); err != nil {
		return err
	}
	return os.WriteFile(mdOut, s.Markdown(), 0o644)
}
