#!/usr/bin/env bash
# make dist: reproducible release archives of otelcol-gym (with gymrun and gymevents) for linux/amd64, linux/arm64,
# darwin/amd64 and darwin/arm64, their SHA-256 sums and a CycloneDX SBOM per archive, in
# _build/dist/.
#
#   tools/dist.sh [OUT_DIR]     (make dist; VERSION, SOURCE_DATE_EPOCH and PLATFORMS from the
#                                environment; PLATFORMS="linux/amd64 darwin/arm64" builds those only)
#
# Reproducible: the same commit, Go release and module versions give the same bytes. The binary
# is built with CGO_ENABLED=0, -trimpath (no build paths), -buildvcs=false and an empty build id;
# the archive lists its files in name order, each with mtime SOURCE_DATE_EPOCH (the commit's
# time unless set), owner 0:0 and mode 0755 or 0644, and gzip writes no name or time; the SBOM
# takes its timestamp from SOURCE_DATE_EPOCH and has no random serial number
# (tools/sbom_normalize.py).
set -euo pipefail
cd "$(dirname "$0")/.."

out=$(realpath -m "${1:-_build/dist}")
# Sets version, SOURCE_DATE_EPOCH (exported) and go.
. tools/release-env.sh dist
# The build tags of builder-config.yaml: the archives hold the binary `make build` builds.
tags=$(sed -n 's/^  build_tags: *//p' builder-config.yaml)
tools="$go tool -modfile=$PWD/tools/go.mod"

# ocb writes the distribution's sources (main.go, components.go, go.mod) to _build/ without
# compiling; each architecture is compiled from them below.
$tools builder --config builder-config.yaml --skip-compilation >/dev/null

rm -rf "$out"
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# cyclonedx-gomod reads the target's GOOS/GOARCH from its environment: built once for this host
# (`go tool` would build it for the target).
(cd tools && $go build -o "$stage/cyclonedx-gomod" github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod)

# Every component builds without cgo for darwin too (Go's darwin port calls libSystem without
# cgo), so the macOS binaries come from the same cross build as the Linux ones.
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
for platform in $platforms; do
	os=${platform%/*}
	arch=${platform#*/}
	case $platform in linux/amd64 | linux/arm64 | darwin/amd64 | darwin/arm64) ;;
	*) echo "dist: unknown platform $platform" >&2; exit 1 ;; esac
	name=otelcol-gym_${version}_${os}_${arch}
	dir=$stage/$name
	mkdir -p "$dir"
	(cd _build && CGO_ENABLED=0 GOOS=$os GOARCH=$arch \
		$go build -trimpath -buildvcs=false -tags="$tags" -ldflags='-s -w -buildid=' -o "$dir/otelcol-gym" .)
	# The two commands beside it, built the same way: gymrun (a run's files summarised and
	# compared; the recipes write a job's summary with it) and gymevents (event lines sent,
	# generated, checked).
	for cmd in gymrun gymevents; do
		CGO_ENABLED=0 GOOS=$os GOARCH=$arch \
			$go build -trimpath -buildvcs=false -ldflags='-s -w -buildid=' -o "$dir/$cmd" "./cmd/$cmd"
	done
	# What a user runs beside the binary: the default configuration, and the drop-in for the
	# collector `gym eval submit` starts (docs/gym.md), side by side as otelcol-gym-submit expects.
	install -m 0644 config/otelcol-gym.yaml "$dir/otelcol-gym.yaml"
	install -m 0644 deploy/gym-submit.yaml "$dir/gym-submit.yaml"
	install -m 0755 deploy/otelcol-gym-submit "$dir/otelcol-gym-submit"
	install -m 0644 README.md "$dir/README.md"
	chmod 0755 "$dir" "$dir/otelcol-gym" "$dir/gymrun" "$dir/gymevents"
	touch -h -d "@$SOURCE_DATE_EPOCH" "$dir" "$dir"/*
	tar --sort=name --format=gnu --owner=0 --group=0 --numeric-owner \
		--mtime="@$SOURCE_DATE_EPOCH" -C "$stage" -cf - "$name" | gzip -9 -n >"$out/$name.tar.gz"
	# The SBOM of the binary: the modules linked into it (with the same tags), with their
	# versions and hashes.
	(cd _build && CGO_ENABLED=0 GOOS=$os GOARCH=$arch GOFLAGS="${GOFLAGS:-} -tags=$tags" "$stage/cyclonedx-gomod" app -json -noserial \
		-licenses -std -output "$out/$name.sbom.cdx.json" . 2>"$stage/sbom.log") ||
		{ cat "$stage/sbom.log" >&2; exit 1; }
	python3 tools/sbom_normalize.py "$out/$name.sbom.cdx.json" "$SOURCE_DATE_EPOCH"
done

(cd "$out" && sha256sum -- *.tar.gz *.sbom.cdx.json >SHA256SUMS)
echo "dist: $out (version $version, SOURCE_DATE_EPOCH $SOURCE_DATE_EPOCH)"
cat "$out/SHA256SUMS"
