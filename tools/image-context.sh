#!/usr/bin/env bash
# The build context of the container image (Dockerfile): an otelcol-gym binary and what the
# image ships beside it, every file dated SOURCE_DATE_EPOCH so that the same binary and commit
# give the same image (buildah build --timestamp, make image).
#
#   tools/image-context.sh BINARY CONTEXT_DIR     (VERSION and SOURCE_DATE_EPOCH from the environment)
#
# make image passes the binary of make build; the release workflow each archive's binary.
#   otelcol-gym                              the binary (static: CGO_ENABLED=0)
#   etc/otelcol-gym/config.yaml              the default configuration (config/otelcol-gym.yaml)
#   etc/passwd, etc/group                    the unprivileged user otelcol-gym, 10001:10001
#   var/lib/, storage/                       /var/lib, and its otelcol-gym/ storage directory, which
#                                            the Dockerfile gives to the image's user
#   usr/share/doc/otelcol-gym/LICENSE, NOTICE
#   usr/share/doc/otelcol-gym/sbom.cdx.json  the image's SBOM: the CycloneDX SBOM of the binary,
#                                            the one piece of software in the image, read from
#                                            the binary's own build information
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: image-context.sh BINARY CONTEXT_DIR}
ctx=${2:?usage: image-context.sh BINARY CONTEXT_DIR}
# Sets version, SOURCE_DATE_EPOCH (exported) and go.
. tools/release-env.sh image-context

rm -rf "$ctx"
mkdir -p "$ctx/etc/otelcol-gym" "$ctx/var/lib" "$ctx/storage" "$ctx/usr/share/doc/otelcol-gym"
install -m 0755 "$bin" "$ctx/otelcol-gym"
install -m 0644 config/otelcol-gym.yaml "$ctx/etc/otelcol-gym/config.yaml"
# A name for uid 10001 (ps, id, and libraries that look the user up), no login, no shell.
printf 'root:x:0:0:root:/:/sbin/nologin\notelcol-gym:x:10001:10001:otelcol-gym:/var/lib/otelcol-gym:/sbin/nologin\n' >"$ctx/etc/passwd"
printf 'root:x:0:\notelcol-gym:x:10001:\n' >"$ctx/etc/group"
install -m 0644 LICENSE NOTICE "$ctx/usr/share/doc/otelcol-gym/"
# cyclonedx-gomod (tools/go.mod, as make dist) in `bin` mode: the modules the binary's build
# information names, with their versions and hashes, whatever the architecture. The timestamp
# is SOURCE_DATE_EPOCH and there is no random serial number (tools/sbom_normalize.py).
sbom=$ctx/usr/share/doc/otelcol-gym/sbom.cdx.json
log=$(mktemp)
$go tool -modfile="$PWD/tools/go.mod" cyclonedx-gomod bin -json -noserial -version "v$version" -output "$sbom" "$ctx/otelcol-gym" 2>"$log" ||
	{ cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
python3 tools/sbom_normalize.py "$sbom" "$SOURCE_DATE_EPOCH"
chmod 0644 "$sbom"
chmod 0755 "$ctx/var" "$ctx/var/lib" "$ctx/storage"
find "$ctx" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
echo "image-context: $ctx (version $version, SOURCE_DATE_EPOCH $SOURCE_DATE_EPOCH)"
