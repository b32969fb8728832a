// Package e2e holds the end-to-end tests of the otelcol-gym distribution: they build the real
// collector with ocb (once per test run, in TestMain), start it on free loopback ports with a
// generated configuration, send Gym events over HTTP, TCP and Unix sockets and files (or OTLP,
// for the gymattrs processor) and check what real consumers see: an OTLP/HTTP endpoint, Debian's
// Prometheus scraping the prometheus exporter, and `otelcol-gym validate`. They cover the
// transports and a SIGTERM that loses nothing, file offsets kept in file_storage across
// restarts, host process stats of a real child process, exporter outages, Gym process restarts,
// bearer-token authentication and TLS, and Gym's console telemetry (the gym_console receiver:
// a growing stdout log and a Python process piping into its socket).
//
// Run them with `make test` (or `go test ./e2e/`). Set OTELCOL_GYM_BIN to test an existing
// binary instead of building one; `go test -short` skips them.
package e2e
