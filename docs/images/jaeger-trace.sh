#!/usr/bin/env bash
# Takes docs/images/jaeger-trace.png: one trace in Jaeger's UI (docs/gym.md, "Gym's traces in
# Jaeger"). The e2e test TestJaegerScreenshot starts Jaeger (deploy/jaeger/jaeger.yaml, free
# loopback ports) with the UI served from UI_DIR, sends the traces through otelcol-gym on its
# default configuration into it, and takes the screenshot with headless Chromium, every host
# but 127.0.0.1 unresolvable.
#   bash docs/images/jaeger-trace.sh UI_DIR [TRACES [TRACE_ID]]
#   CONFIG=run.yaml bash docs/images/jaeger-trace.sh UI_DIR [- TRACE_ID]
# UI_DIR: a built Jaeger UI (its index.html and static/): Jaeger built from its Go module
# embeds none. TRACES: a file of OTLP JSON lines, as otelcol-gym's otel-traces.jsonl keeps
# them. CONFIG: an otelcol-gym configuration merged over the default one (a gym receiver
# reading a run's files, say; absolute paths): the traces it makes, once Jaeger's stop
# growing. With neither, the test's synthetic rollouts. TRACE_ID: the trace shown (default:
# the one with the most spans). OUT= another output file, SIZE=W,H the window (1400 wide, as
# high as the rows).
# Builds the collector and Jaeger when needed (make build jaeger); needs chromium.
set -euo pipefail
[ $# -ge 1 ] || { sed -n 7,16p "$0" >&2; exit 2; }
cd "$(dirname "$0")/../.."
abs() { (cd "$(dirname "$1")" && echo "$PWD/$(basename "$1")"); }
ui=$(abs "$1")
traces=
if [ -n "${2:-}" ] && [ "$2" != - ]; then traces=$(abs "$2"); fi
config=${CONFIG:+$(abs "$CONFIG")}
out=$(abs "${OUT:-docs/images/jaeger-trace.png}")
make --no-print-directory build jaeger
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! (cd e2e && JAEGER_SCREENSHOT="$out" JAEGER_UI="$ui" \
	JAEGER_SCREENSHOT_INPUT="$traces" JAEGER_SCREENSHOT_CONFIG="$config" \
	JAEGER_SCREENSHOT_TRACE="${3:-}" JAEGER_SCREENSHOT_SIZE="${SIZE:-}" \
	go test -count=1 -v -run '^TestJaegerScreenshot$' . >"$log" 2>&1); then
	cat "$log" >&2
	exit 1
fi
grep -o "trace .* in Jaeger's UI: .*" "$log"
