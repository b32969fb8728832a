#!/usr/bin/env bash
# make packages: the otelcol-gym .deb and .rpm for linux/amd64 and linux/arm64, built by nfpm
# (deploy/packages/nfpm.yaml) around the binaries of the release archives that tools/dist.sh
# wrote in DIST_DIR, written beside them; SHA256SUMS is rewritten to list them too.
#
#   tools/packages.sh [DIST_DIR]     (make packages; VERSION and SOURCE_DATE_EPOCH from the environment)
#
# Reproducible as the archives are: nfpm stamps every file and the build date with
# SOURCE_DATE_EPOCH (the commit's time unless set), modes are fixed in nfpm.yaml and the rpm's
# build host is a constant.
set -euo pipefail
cd "$(dirname "$0")/.."

dist=$(realpath -m "${1:-_build/dist}")
# Sets version, SOURCE_DATE_EPOCH (exported) and go.
. tools/release-env.sh packages
# nfpm has a module of its own (tools/nfpm/go.mod says why).
nfpm="$go tool -modfile=$PWD/tools/nfpm/go.mod nfpm"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for arch in amd64 arm64; do
	name=otelcol-gym_${version}_linux_${arch}
	archive=$dist/$name.tar.gz
	[ -f "$archive" ] || { echo "packages: $archive missing: run make dist first" >&2; exit 1; }
	# The released binary itself, not a second build.
	tar -xzf "$archive" -C "$stage" "$name/otelcol-gym" "$name/gymrun" "$name/gymevents"
	# nfpm expands the environment in version and arch, not in a file's source: ${BIN} (the
	# archive's directory) is replaced here. Every other path stays relative to the repository root.
	sed "s|\${BIN}|$stage/$name|" deploy/packages/nfpm.yaml >"$stage/nfpm.yaml"
	for format in deb rpm; do
		rm -f "$dist/$name.$format"
		VERSION=$version ARCH=$arch $nfpm package --config "$stage/nfpm.yaml" \
			--packager "$format" --target "$dist/$name.$format" >/dev/null
	done
done

# One SHA256SUMS for everything released from this directory: the packages' lines replace any
# earlier ones, after those of tools/dist.sh.
sums=$dist/SHA256SUMS
touch "$sums"
grep -v '\.\(deb\|rpm\)$' "$sums" >"$stage/sums" || true
(cd "$dist" && sha256sum -- otelcol-gym_"${version}"_linux_*.deb otelcol-gym_"${version}"_linux_*.rpm) >>"$stage/sums"
cp "$stage/sums" "$sums"
echo "packages: $dist (version $version, SOURCE_DATE_EPOCH $SOURCE_DATE_EPOCH)"
(cd "$dist" && ls -l -- *.deb *.rpm)
