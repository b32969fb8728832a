#!/usr/bin/env bash
# tools/cold-run.sh: the time of a first `make run` on a fresh clone with empty Go caches, and of
# a second one. The committed HEAD of this repository is cloned into a temporary directory; Go's
# module and build caches there are new and empty (GOPROXY, GOFLAGS and the rest stay as
# `go env` has them); `/usr/bin/time -v make run` runs until make run prints "otelcol-gym is
# running", then make run is stopped (SIGTERM, which stops the collector gracefully). Then the
# same again in the same clone (nothing changed: make sees every target up to date). Everything
# is removed afterwards. `make bench` runs it when BENCH_COLD=1 (docs/performance.md).
#
#   bash tools/cold-run.sh [--scorecard FILE] [--keep DIR]
#
# --scorecard FILE  writes the figures for bench/scorecard (one JSON object)
# --keep DIR        keeps make run's output and /usr/bin/time's report in DIR
#
# make run listens on fixed loopback ports (config/otelcol-gym.yaml): nothing else on the
# machine may hold them meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
scorecard= keep=
while [ $# -gt 0 ]; do
	case $1 in
	--scorecard) scorecard=$2; shift 2 ;;
	--keep) keep=$2; shift 2 ;;
	*) echo "usage: $0 [--scorecard FILE] [--keep DIR]" >&2; exit 2 ;;
	esac
done
[ -x /usr/bin/time ] || { echo "cold-run: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/otelcol-gym-cold.XXXXXX")
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
commit=$(git rev-parse --short HEAD)
git clone -q . "$work/repo"
export GOMODCACHE=$work/gomodcache GOCACHE=$work/gocache
out=${keep:-$work/out}
mkdir -p "$out"

load() { cut -d' ' -f1 /proc/loadavg; }

# run N: make run in the clone until it says it is running; sets wall, cpu, rss, load0, load1.
run() {
	local log=$out/make-run-$1.log report=$out/time-$1.txt t0 tpid mpid i
	load0=$(load)
	: >"$log"
	t0=$(date +%s.%N)
	(cd "$work/repo" && exec /usr/bin/time -v -o "$report" make run >"$log" 2>&1) &
	tpid=$!
	wall=
	while kill -0 "$tpid" 2>/dev/null; do
		if grep -q 'otelcol-gym is running' "$log"; then
			wall=$(printf "%.2f" "$(echo "$(date +%s.%N) - $t0" | bc)")
			break
		fi
		sleep 0.2
	done
	load1=$(load)
	for i in 1 2 3 4 5; do
		mpid=$(pgrep -P "$tpid" -x make || true)
		[ -n "$mpid" ] && break
		sleep 0.1
	done
	[ -n "$mpid" ] && kill -TERM "$mpid" 2>/dev/null || true
	wait "$tpid" || true
	if [ -z "$wall" ]; then
		echo "cold-run: make run $1 did not get to \"otelcol-gym is running\"; its last lines:" >&2
		tail -20 "$log" >&2
		exit 1
	fi
	cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.1f", s }' "$report")
	rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$report")
}

echo "cold-run: $commit, $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(go version)"
run 1
cold_wall=$wall cold_cpu=$cpu cold_rss=$rss cold_load0=$load0 cold_load1=$load1
printf 'cold-run: first make run (empty caches): %.0f s to running, %s CPU-s (user+sys), peak RSS %s MiB; load average %s before, %s at the end\n' \
	"$cold_wall" "$cold_cpu" "$cold_rss" "$cold_load0" "$cold_load1"
run 2
printf 'cold-run: second make run (nothing changed): %.1f s to running, %s CPU-s; load average %s\n' "$wall" "$cpu" "$load0"
if [ -n "$scorecard" ]; then
	printf '{"path":"coldrun","figure":%s,"aside":[{"name":"CPU-s","value":%s},{"name":"second make run s","value":%s},{"name":"load average at the end","value":%s}]}\n' \
		"$cold_wall" "$cold_cpu" "$wall" "$cold_load1" >"$scorecard"
fi
