package schema

//go:generate go run ../../cmd/schemagen -in ../../metadata.yaml -go schema_gen.go -md ../../docs/metrics.md -py ../../python/otelcol_gym/_schema.py -tables ../../deploy/grafana/schema_tables.json
