#!/usr/bin/env bash
# Checks the distribution `make run` builds against the whole one: it has every component of
# the whole distribution except those builder-config.yaml marks `# deploy-only`, with the same
# module versions, and it validates make run's configuration (the remaining arguments).
#
#   bash tools/run-dist-check.sh WHOLE_BIN RUN_BIN --config FILE [--config ...]
set -euo pipefail
cd "$(dirname "$0")/.."
whole=$1
run=$2
shift 2
fail() { echo "run-dist-check: $*" >&2; exit 1; }

# "kind module" per component, from `components` (kind: receivers, processors, ...).
list() { "$1" components | awk '/^[a-z]+:$/ { kind = $1 } /^ +module: / { print kind, $2, $3 }' | sort; }
deploy_only=$(sed -n 's/^  - gomod: \([^ ]*\) \([^ ]*\) *# deploy-only$/\1 \2/p' builder-config.yaml | sort)
[ -n "$deploy_only" ] || fail "builder-config.yaml marks no component # deploy-only"
missing=$(comm -23 <(list "$whole" | cut -d' ' -f2- | sort -u) <(list "$run" | cut -d' ' -f2- | sort -u))
[ "$missing" = "$deploy_only" ] || fail "the run distribution lacks:
$missing
want exactly the deploy-only components:
$deploy_only"
extra=$(comm -13 <(list "$whole") <(list "$run"))
[ -z "$extra" ] || fail "the run distribution has what the whole one has not: $extra"
"$run" validate "$@" || fail "$run validate $* failed"
echo "run-dist-check: $run has the whole distribution but $(echo "$deploy_only" | wc -l) deploy-only components, and validates $*"
