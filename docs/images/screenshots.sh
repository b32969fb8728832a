#!/usr/bin/env bash
# Takes the screenshots of docs/live.md and docs/dashboards.md: otelcol-gym on
# config/otelcol-gym.yaml (charts at 2 s, stalls after 20 s), the sample run sent as `make run`
# sends it, then docs/images/live-feed.py for a few minutes, and headless Chromium on the live
# page, every host but 127.0.0.1 unresolvable.
#   bash docs/images/screenshots.sh        (after make build gymevents; needs chromium, python3)
# Everything listens on 127.0.0.1; ports 24133.. are used. Not part of make test.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=docs/images
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

cat > "$tmp/override.yaml" <<YAML
extensions: {health_check: {endpoint: 127.0.0.1:24133}, file_storage: {directory: $tmp/storage}}
receivers:
  otlp: {protocols: {grpc: {endpoint: 127.0.0.1:24317}, http: {endpoint: 127.0.0.1:24318}}}
  gym: {http: {endpoint: 127.0.0.1:24390}}
connectors: {gymrollouts: {collection_interval: 2s, stall_after: 20s}}
exporters:
  prometheus: {endpoint: 127.0.0.1:24464}
  gymlive: {endpoint: 127.0.0.1:24890, self_metrics: "http://127.0.0.1:24888/metrics", resolution: 2s, horizon: 1h}
  file/traces: {path: $tmp/storage/otel-traces.jsonl}
  file/logs: {path: $tmp/storage/otel-logs.jsonl}
service: {telemetry: {metrics: {readers: [{pull: {exporter: {prometheus: {host: 127.0.0.1, port: 24888}}}}]}}}
YAML
_build/otelcol-gym --config config/otelcol-gym.yaml --config "$tmp/override.yaml" >"$tmp/col.log" 2>&1 & pids+=($!)
_build/gymevents wait http://127.0.0.1:24133/ --timeout 60s
_build/gymevents send testdata/sample-run.jsonl --endpoint http://127.0.0.1:24390 --quiet
seconds=${SECONDS_TO_FEED:-150}
echo "feeding the run for $seconds s"
SECONDS_TO_FEED=$seconds GYM_URL=http://127.0.0.1:24390 OTLP_URL=http://127.0.0.1:24318 python3 "$out/live-feed.py"

shot() { # name, height
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" \
		--user-data-dir="$(mktemp -d)" --hide-scrollbars --window-size="1280,$2" \
		--virtual-time-budget=5000 --screenshot="$out/$1.png" http://127.0.0.1:24890/ >/dev/null 2>&1
	echo "$out/$1.png"
}
shot live-run 900
shot live-full 1900
