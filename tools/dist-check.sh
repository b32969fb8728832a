#!/usr/bin/env bash
# Checks what tools/dist.sh wrote: the sums verify, each archive holds exactly the files a user
# needs under one otelcol-gym_VERSION_OS_ARCH/ directory, owned by 0:0 with one mtime, the
# binary is a static ELF (Linux) or a Mach-O linking only macOS' own libraries, arm64 ones
# signed ad hoc as macOS requires (darwin), for its architecture (the linux/amd64 one runs and
# reports VERSION), and each SBOM names the collector modules linked in, for its OS and
# architecture.
#
#   bash tools/dist-check.sh DIST_DIR VERSION     (PLATFORMS as for tools/dist.sh)
set -euo pipefail
dist=$1
version=$2
fail() { echo "dist-check: $*" >&2; exit 1; }

(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not verify"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
for platform in $platforms; do
	os=${platform%/*}
	arch=${platform#*/}
	name=otelcol-gym_${version}_${os}_${arch}
	archive=$dist/$name.tar.gz
	[ -f "$archive" ] || fail "$archive missing"
	grep -q " $name.tar.gz\$" "$dist/SHA256SUMS" || fail "$name.tar.gz not in SHA256SUMS"
	want="$name/
$name/README.md
$name/gym-submit.yaml
$name/gymevents
$name/gymrun
$name/otelcol-gym
$name/otelcol-gym-submit
$name/otelcol-gym.yaml"
	got=$(tar -tzf "$archive")
	[ "$got" = "$want" ] || fail "$archive lists:
$got
want:
$want"
	owners=$(tar -tvzf "$archive" | awk '{print $2}' | sort -u)
	[ "$owners" = "0/0" ] || fail "$archive: owners $owners, want 0/0"
	times=$(tar -tvzf "$archive" --full-time | awk '{print $4, $5}' | sort -u | wc -l)
	[ "$times" = 1 ] || fail "$archive: $times different mtimes, want 1"
	tar -xzf "$archive" -C "$work"
	bin=$work/$name/otelcol-gym
	if [ "$os" = linux ]; then
		# ELF header: class 64-bit, e_machine 62 (x86-64) or 183 (AArch64); no PT_INTERP (static).
		machine=$(od -An -tu2 -j18 -N2 "$bin" | tr -d ' ')
		case $arch in amd64) [ "$machine" = 62 ] ;; arm64) [ "$machine" = 183 ] ;; esac ||
			fail "$bin: ELF machine $machine is not $arch"
		if grep -aq '/lib64/ld-linux\|/lib/ld-linux' "$bin"; then fail "$bin: dynamically linked"; fi
	else
		python3 tools/macho_check.py "$bin" "$arch" || fail "$bin: not a darwin/$arch binary macOS runs"
	fi
	if [ "$platform" = linux/amd64 ] && [ "$(uname -m)" = x86_64 ]; then
		out=$("$bin" --version)
		case $out in *"$version"*) ;; *) fail "$bin --version: $out (want $version)" ;; esac
		"$bin" validate --config "$work/$name/otelcol-gym.yaml" >/dev/null ||
			fail "$bin validate --config otelcol-gym.yaml failed"
		# The commands beside it run: gymrun summarises a run of testdata, gymevents checks a line.
		"$work/$name/gymrun" summary --json testdata/rollouts/run1 | grep -q '"schema": "gymrun.summary/v1"' ||
			fail "$work/$name/gymrun summary did not summarise testdata/rollouts/run1"
		"$work/$name/gymevents" --help 2>&1 | grep -q gymevents || fail "$work/$name/gymevents does not run"
	fi
	sbom=$dist/$name.sbom.cdx.json
	python3 - "$sbom" "$os" "$arch" <<'EOF' || fail "$sbom: not the SBOM of the binary"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["bomFormat"] == "CycloneDX", doc.get("bomFormat")
assert "serialNumber" not in doc, "a random serial number makes the SBOM differ each build"
names = {c["name"] for c in doc.get("components", [])}
for want in ("go.opentelemetry.io/collector/otelcol", "go.opentelemetry.io/collector/receiver/otlpreceiver"):
    assert want in names, want + " missing"
props = {p["name"]: p["value"] for p in doc["metadata"]["component"].get("properties", [])}
assert props.get("cdx:gomod:build:env:GOOS") == sys.argv[2], props
assert props.get("cdx:gomod:build:env:GOARCH") == sys.argv[3], props
EOF
done
echo "dist-check: $dist ok"
