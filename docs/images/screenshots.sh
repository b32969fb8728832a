#!/usr/bin/env bash
# Takes the screenshots of docs/dashboards.md: otelcol-gym on config/otelcol-gym.yaml under a
# generated Gym run (gymevents gen at a steady rate), Debian's Prometheus scraping it, and
# headless Chromium on Prometheus' own graph page for a few dashboard queries.
#   bash docs/images/screenshots.sh        (after make build gymevents; needs prometheus, chromium)
# Everything listens on 127.0.0.1; ports 24317.. are used. Not part of make test.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=docs/images
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

cat > "$tmp/override.yaml" <<YAML
extensions: {health_check: {endpoint: 127.0.0.1:24133}}
receivers:
  otlp: {protocols: {grpc: {endpoint: 127.0.0.1:24317}, http: {endpoint: 127.0.0.1:24318}}}
  gym: {http: {endpoint: 127.0.0.1:24390}, collection_interval: 2s, process: {include_self: true}}
exporters: {prometheus: {endpoint: 127.0.0.1:24464}}
service: {telemetry: {metrics: {readers: [{pull: {exporter: {prometheus: {host: 127.0.0.1, port: 24888}}}}]}}}
YAML
cat > "$tmp/prometheus.yml" <<YAML
global: {scrape_interval: 2s, evaluation_interval: 2s}
rule_files: [$PWD/deploy/prometheus/gym.rules.yaml]
scrape_configs:
  - {job_name: gym, honor_labels: true, static_configs: [{targets: ["127.0.0.1:24464"]}]}
  - {job_name: otelcol, static_configs: [{targets: ["127.0.0.1:24888"]}]}
YAML
_build/otelcol-gym --config config/otelcol-gym.yaml --config "$tmp/override.yaml" >"$tmp/col.log" 2>&1 & pids+=($!)
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:24090 --log.level=warn >"$tmp/prom.log" 2>&1 & pids+=($!)
_build/gymevents wait http://127.0.0.1:24133/ --timeout 60s
minutes=${MINUTES:-4}
echo "feeding a generated run; screenshots after $minutes minutes"
_build/gymevents gen --endpoint http://127.0.0.1:24390 --processes 6 --rate 1500 --batch 300 \
	--events 0 --duration "$((minutes + 3))m" --seed 14 >/dev/null & pids+=($!)
sleep "$((minutes * 60))"

shot() { # name, PromQL
	local url="http://127.0.0.1:24090/graph?g0.expr=$(python3 -c 'import sys,urllib.parse;print(urllib.parse.quote(sys.argv[1]))' "$2")&g0.tab=0&g0.stacked=0&g0.show_exemplars=0&g0.range_input=${minutes}m"
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$(mktemp -d)" --hide-scrollbars --window-size=1100,1000 \
		--virtual-time-budget=15000 --screenshot="$out/$1.png" "$url" >/dev/null 2>&1
	echo "$out/$1.png"
}
# The dashboards' queries with every variable at All (the matchers dropped).
S=''
shot rollouts-by-outcome "sum by (nemo_gym_rollout_outcome) (rate(gym_rollout_completed_total{$S}[30s]))"
shot failures-by-kind "sum by (nemo_gym_failure_kind) (rate(gym_rollout_completed_total{nemo_gym_failure_kind!=\"\"}[30s]))"
shot event-loop-lag-p99 "histogram_quantile(0.99, sum by (job, le) (rate(gym_event_loop_lag_ms_bucket{$S}[30s])))"
shot sandboxes-by-provider "sum by (nemo_gym_sandbox_provider) (gym_sandbox_active{$S})"
shot pool-queue-wait-p99 "histogram_quantile(0.99, sum by (nemo_gym_http_destination_server_name, nemo_gym_http_connection_pool_queue_constraint, le) (rate(gym_http_connection_pool_queue_duration_ms_bucket{$S}[30s])))"
shot collector-lines-accepted "sum by (receiver) (rate(otelcol_receiver_gym_lines_accepted[30s]))"
