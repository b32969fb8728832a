#!/usr/bin/env bash
# Checks a built otelcol-gym image (make image) without running a container: the image's config
# (user, entry point), its root filesystem (the one static binary, no shell), and the binary
# itself, run from the mounted root: it lists its components and validates deploy/'s configs.
#
#   bash deploy/image-check.sh localhost/otelcol-gym:0.1.0
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
