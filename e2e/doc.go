// Package e2e holds the end-to-end tests of the otelcol-gym distribution: they build the real
// collector with ocb (once per test run, in TestMain), start it on free loopback ports with a
// generated configuration, send Gym events over HTTP and check what real consumers see: an
// OTLP/HTTP endpoint, Debian's Prometheus scraping the prometheus exporter, and
// `otelcol-gym validate`.
//
// Run them with `make test` (or `go test ./e2e/`). Set OTELCOL_GYM_BIN to test an existing
// binary instead of building one; `go test -short` skips them.
package e2e
