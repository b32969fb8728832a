#!/usr/bin/env bash
# tools/run-config.sh: the ocb manifest of the distribution `make run` builds, on stdout:
# builder-config.yaml without the components marked `# deploy-only`, written to
# _build/run/ (its own module; the `replaces` path to this repository is one level deeper).
# Every other line, versions and build tags included, is builder-config.yaml's.
set -euo pipefail
cd "$(dirname "$0")/.."
awk '
	/# deploy-only$/ { dropped++; next }
	/^  module: /      { sub(/_build$/, "_build/run") }
	/^  output_path: / { sub(/\.\/_build$/, "./_build/run") }
	/^  - github.com\/gym-telemetry\/otelcol-gym => \.\.\/$/ { sub(/=> \.\.\/$/, "=> ../../") }
	{ print }
	END { if (dropped == 0) { print "run-config: no component is marked # deploy-only" > "/dev/stderr"; exit 1 } }
' builder-config.yaml
