#!/usr/bin/env bash
# Checks a built otelcol-gym image (make image): the image's config (user, entry point), its root
# filesystem (the one static binary, no shell), and the binary itself, run from the mounted
# root: it lists its components and validates deploy/'s configs. Then it runs the image as a
# container (buildah run with runc) and checks what the collector in it serves.
#
#   bash deploy/image-check.sh ghcr.io/gym-telemetry/otelcol-gym:0.1.0
set -euo pipefail
image=${1:?usage: image-check.sh IMAGE}
repo=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "image-check: $*" >&2; exit 1; }

got=$(buildah inspect --type image --format '{{.OCIv1.Config.User}} {{.OCIv1.Config.Entrypoint}}' "$image")
[ "$got" = '10001:10001 [/otelcol-gym]' ] || fail "user and entry point are $got, want 10001:10001 [/otelcol-gym]"

ctr=$(buildah from --pull=never "$image")
trap 'buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
mnt=$(buildah mount "$ctr")
files=$(cd "$mnt" && find . -mindepth 1 -not -path ./dev -not -path ./proc -not -path ./sys -not -path './etc' -not -path './etc/*' | sort | tr '\n' ' ')
[ "$files" = "./otelcol-gym " ] || fail "the image root holds $files, want ./otelcol-gym alone"
[ ! -e "$mnt/bin/sh" ] || fail "the image has a shell"
go version -m "$mnt/otelcol-gym" | grep -q 'CGO_ENABLED=0' || fail "the binary is not built with CGO_ENABLED=0"
"$mnt/otelcol-gym" components | grep -q 'name: gym' || fail "components does not list the gym receiver"
"$mnt/otelcol-gym" validate --config "$repo/deploy/agent.yaml" || fail "validate deploy/agent.yaml"
"$mnt/otelcol-gym" validate --config "$repo/deploy/gateway.yaml" || fail "validate deploy/gateway.yaml"
size="$(du -sm "$mnt" | cut -f1) MiB"
echo "image-check: $image: user 10001, entry point /otelcol-gym, one static binary (no shell), components and validate OK (size $size)"

# Then run it as a container (runc: crun refuses this machine's hybrid cgroups): the image's own
# user, its root and the binary in it, a mounted config, and the host's network so that it
# listens on 127.0.0.1 only. Events go in over HTTP; the Prometheus exporter must show them.
runtime=$(command -v runc) || fail "runc is missing (apt-get install runc)"
work=$(mktemp -d)
run_ctr=$(buildah from --pull=never "$image")
trap 'kill "$runner" 2>/dev/null || true; buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" "$run_ctr" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
read -r http_port prom_port < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
cat >"$work/config.yaml" <<YAML
receivers:
  gym:
    http:
      endpoint: 127.0.0.1:$http_port
exporters:
  prometheus:
    endpoint: 127.0.0.1:$prom_port
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [gym]
      exporters: [prometheus]
YAML
chmod 0755 "$work"; chmod 0644 "$work/config.yaml"
buildah run --runtime "$runtime" --network host --volume "$work:/etc/otelcol-gym:ro" "$run_ctr" -- \
	/otelcol-gym --config /etc/otelcol-gym/config.yaml >"$work/log" 2>&1 &
runner=$!
python3 - "$http_port" "$prom_port" <<'PY' || { cat "$work/log" >&2; fail "the running container did not serve the events it was sent"; }
import re, sys, time, urllib.request
http_port, prom_port = sys.argv[1], sys.argv[2]
body = (b'{"event":"resource","attributes":{"service.name":"nemo-gym/driver","service.instance.id":"image-check-0"}}\n'
        + b'{"event":"rollout.completed","outcome":"scored","dispatch_name":"math"}\n' * 3)
deadline = time.monotonic() + 60
while True:
    try:
        req = urllib.request.Request("http://127.0.0.1:%s/v1/events" % http_port, body, {"Content-Type": "application/x-ndjson"})
        urllib.request.urlopen(req, timeout=5).read()
        break
    except OSError as e:
        if time.monotonic() > deadline:
            sys.exit("no answer on :%s: %s" % (http_port, e))
        time.sleep(0.2)
want = re.compile(r'^gym_rollout_completed_total\{[^}]*nemo_gym_rollout_outcome="scored"[^}]*\} 3$', re.M)
while True:
    try:
        text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % prom_port, timeout=5).read().decode()
        if want.search(text):
            break
    except OSError:
        text = ""
    if time.monotonic() > deadline:
        sys.exit("no gym_rollout_completed_total 3 on :%s:\n%s" % (prom_port, text[-2000:]))
    time.sleep(0.2)
PY
# The container's collector: the process whose root holds this run's config (no pgrep: procps
# is not on every machine).
pid=""
for d in /proc/[0-9]*; do
	[ "$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)" = "/otelcol-gym --config /etc/otelcol-gym/config.yaml " ] || continue
	grep -q "127.0.0.1:$http_port" "$d/root/etc/otelcol-gym/config.yaml" 2>/dev/null && { pid=${d#/proc/}; break; }
done
[ -n "$pid" ] || fail "cannot find the container's collector process"
uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
[ "$uid" = 10001 ] || fail "the container's collector runs as uid $uid, want 10001"
[ "$(readlink "/proc/$pid/ns/pid")" != "$(readlink /proc/self/ns/pid)" ] || fail "the container shares the host's pid namespace"
kill -TERM "$pid"
wait "$runner" || fail "the container did not exit cleanly on SIGTERM: $(tail -5 "$work/log")"
grep -q "Shutdown complete" "$work/log" || fail "no clean shutdown in the container's log: $(tail -5 "$work/log")"
echo "image-check: $image ran as a container (runc): uid 10001, own pid namespace, served 3 rollouts on 127.0.0.1, clean shutdown on SIGTERM"
