// Package e2e holds the end-to-end tests of the otelcol-gym distribution: they build the real
// collector with ocb (once per test run, in TestMain), start it on free loopback ports with a
// generated configuration, send Gym events over HTTP, TCP and Unix sockets and files (or OTLP,
// for the gymattrs processor) and check what real consumers see: an OTLP/HTTP endpoint, Debian's
// Prometheus scraping the prometheus exporter, and `otelcol-gym validate`. They cover the
// transports and a SIGTERM that loses nothing, file offsets kept in file_storage across
// restarts, host process stats of a real child process, exporter outages, Gym process restarts,
// bearer-token authentication and TLS, the receiver's self-telemetry with two gym receivers,
// the default configuration's labels (no data-point attribute overwritten), every query of
// the Grafana dashboards and every Prometheus rule of deploy/ on a generated run, Gym's own run
// files followed as they are written (rows appended in pieces, a late failures sidecar, bad
// rows, a restart on file_storage), the Python emitter (python/otelcol_gym) driven by a
// simulated Gym deployment over HTTP, TCP and a Unix socket (TestPythonEmitter), and Gym's
// console telemetry (the gym_console receiver: a growing stdout log and a Python process piping
// into its socket), and the flight recorder (the gymrollouts connector: Gym's spans by OTLP
// into rollouts in flight and stalled, and the stall's log record; TestFlightRecorder), and
// Gym-shaped traces through the collector into a real Jaeger, each found there whole
// (TestJaeger).
// The deployment of deploy/ runs too: three node agents and two gateways into Prometheus'
// remote-write receiver through a gateway failure and an agent restart (TestTopology), one run
// on two nodes whose spans meet in the gateway's flight recorder, into Prometheus and
// VictoriaMetrics, through a gateway killed and restarted (TestClusterRecorder), and the Slurm
// launcher on a fake job step (TestSlurmLauncher, and Gym's spans through it: TestSlurmSpans).
// Hostile input: long resource values (TestResourceLongValues), the live page's non-finite
// points, fragments and slow clients (TestLive*).
//
// The soak (TestSoak: an accelerated day of an agent, its resources sampled) runs only with
// GYM_SOAK=1, which `make soak` sets; without it `go test ./e2e/` skips it.
// TestJaegerScreenshot runs only for docs/images/jaeger-trace.sh (JAEGER_SCREENSHOT set).
//
// The harness they share with the bench programs is e2e/harness, their collector
// configurations are templates in testdata/configs; README.md says how to add a case.
//
// Run them with `make test` (or `go test ./e2e/`). Set OTELCOL_GYM_BIN to test an existing
// binary instead of building one; `go test -short` skips them.
package e2e
