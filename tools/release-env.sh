# Sourced (from the repository root) by the scripts that stamp a release: tools/dist.sh,
# tools/packages.sh, tools/image-context.sh. One home for what a release is stamped with:
#   version            VERSION, else builder-config.yaml's dist.version ($1, the caller's name,
#                      prefixes the error when there is neither)
#   SOURCE_DATE_EPOCH  as set, else the commit's time (exported: nfpm, the SBOM and touch read it)
#   go                 GO, else go
version=${VERSION:-$(sed -n 's/^  version: *//p' builder-config.yaml)}
[ -n "$version" ] || { echo "$1: no version (builder-config.yaml dist.version)" >&2; exit 1; }
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
go=${GO:-go}
