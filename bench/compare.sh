#!/usr/bin/env bash
# bench/compare.sh BASE [ROUNDS]: the engine's per-core benchmarks of revision BASE and of the
# working tree, side by side in one run (make bench-compare BASE=rev).
#
# Five paths, each a Go benchmark compiled once per tree: the events path (decode and
# aggregate one event: BenchmarkIngest), Gym's run files (the row decoder on 2 KiB, 200 KiB
# and 20 MiB rows: BenchmarkRows/*/reader; and on rows of 100, 300 and 500 KiB with their
# rollout evidence: BenchmarkEvidenceRows/*/reader, whose file is copied into a base tree
# that lacks it, so that today's reader reads the same rows), gym_console (a realistic stdout mix through
# the classifier and decoders: BenchmarkStdoutMix; the real Python SDK's stdout, and json.loads of
# its records in python3 beside it: BenchmarkRealSDK, copied into a base that lacks it) and gymattrs (a batch of Gym's schema
# metrics and of Gym's SDK's OTLP through the rules: BenchmarkProcess(SDK)Batch). The test binaries run with GOMAXPROCS=1,
# alternating base and head in every round (the order flips each round), so both see the
# same neighbours; the median and range over ROUNDS (default 3) are printed for each figure.
# A package is found where the tree has it (the engine moved from receiver/gymreceiver/ to
# internal/), so BASE can be any revision that has these benchmarks.
set -euo pipefail
base=${1:?usage: bench/compare.sh BASE [ROUNDS]}
rounds=${2:-3}
top=$(git rev-parse --show-toplevel)
cd "$top"
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/base" "$base" >/dev/null

# suite;benchmark regexp;candidate package folders, newest layout first
suites=(
	"events;^BenchmarkIngest\$;internal/aggregate receiver/gymreceiver/internal/protocol"
	"runfiles;^BenchmarkRows\$/^(2KiB|200KiB|20MiB)\$/^reader\$;internal/rollouts receiver/gymreceiver/internal/rollouts"
	"evidence;^BenchmarkEvidenceRows\$/^(100KiB|300KiB|500KiB)\$/^reader\$;internal/rollouts"
	"console;^BenchmarkStdoutMix\$;internal/console receiver/gymreceiver/consolereceiver/internal/console"
	"realsdk;^BenchmarkRealSDK\$;internal/console"
	"gymattrs;^BenchmarkProcess(SDK)?Batch\$;internal/bound"
)

pkgdir() { # tree candidates...
	local tree=$1; shift
	for d in "$@"; do [ -d "$tree/$d" ] && { echo "$d"; return; }; done
	echo "no package of $* in $tree" >&2; return 1
}

for tree in base head; do
	root=$top; [ $tree = base ] && root=$work/base
	for s in "${suites[@]}"; do
		IFS=";" read -r name _ cands <<<"$s"
		# shellcheck disable=SC2086
		dir=$(pkgdir "$root" $cands)
		echo "$tree $name: $dir" >&2
		# The evidence rows' benchmark uses only the row decoder's older API: a base without it
		# gets the tree's copy.
		if [ "$name" = evidence ] && [ ! -f "$root/$dir/evidence_bench_test.go" ]; then
			cp "$top/internal/rollouts/evidence_bench_test.go" "$root/$dir/"
		fi
		# A gymattrs benchmark without Process's CPU time (points/cpu-s) gets the tree's.
		if [ "$name" = gymattrs ] && ! grep -q 'points/cpu-s' "$root/$dir/bench_test.go"; then
			cp "$top/internal/bound/bench_test.go" "$root/$dir/"
		fi
		# So does the real SDK's stdout against json.loads (gym_console's decoder API is older).
		if [ "$name" = realsdk ] && [ ! -f "$root/$dir/realsdk_bench_test.go" ]; then
			cp "$top/internal/console/realsdk_bench_test.go" "$root/$dir/"
		fi
		(cd "$root" && go test -c -o "$work/$tree-$name.test" "./$dir")
		echo "$dir" >"$work/$tree-$name.dir"
	done
done

out=$work/results.txt
for r in $(seq 1 "$rounds"); do
	order="base head"; [ $((r % 2)) -eq 0 ] && order="head base"
	for s in "${suites[@]}"; do
		IFS=";" read -r name regex _ <<<"$s"
		for tree in $order; do
			root=$top; [ $tree = base ] && root=$work/base
			(cd "$root/$(cat "$work/$tree-$name.dir")" && GOMAXPROCS=1 "$work/$tree-$name.test" \
				-test.run '^$' -test.bench "$regex" -test.benchmem -test.cpu 1 -test.benchtime 2s) |
				sed -n "s/^Benchmark/$tree Benchmark/p" >>"$out"
		done
	done
done

python3 - "$out" "$base" "$rounds" <<'EOF'
import collections, statistics, sys
path, base, rounds = sys.argv[1:]
vals = collections.defaultdict(list)  # (bench, unit, tree) -> values
for line in open(path):
    f = line.split()
    tree, bench = f[0], f[1]
    for v, unit in zip(f[3::2], f[4::2]):
        vals[(bench, unit, tree)].append(float(v))
        if unit == "ns/op" and bench.startswith("BenchmarkIngest"):
            vals[(bench, "events/s", tree)].append(1e9 / float(v))
# the per-core figures and the allocations; wall-clock rates say more about the neighbours
shown = {"ns/op", "events/s", "cpu-MB/s", "MB/cpu-s", "lines/cpu-s", "points/s", "points/cpu-s", "B/op", "allocs/op"}
keys = sorted({(b, u) for b, u, _ in vals if u in shown})
fmt = lambda xs: "%s (%s..%s)" % tuple("%.4g" % x for x in (statistics.median(xs), min(xs), max(xs)))
print("%-44s %-12s %-30s %-30s %s" % ("benchmark", "unit", "base " + base[:12], "head", "head/base"))
for b, u in keys:
    bv, hv = vals.get((b, u, "base"), []), vals.get((b, u, "head"), [])
    if not bv or not hv:
        continue
    ratio = statistics.median(hv) / statistics.median(bv) if statistics.median(bv) else float("nan")
    print("%-44s %-12s %-30s %-30s %.3f" % (b, u, fmt(bv), fmt(hv), ratio))
print("(%s rounds, GOMAXPROCS=1, median (min..max); events/s = 1e9 / ns/op)" % rounds)
EOF
