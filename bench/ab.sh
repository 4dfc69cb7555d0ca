#!/bin/bash
# Before/after of one change, in one run: two test binaries (built with
# `go test -c` from the commit before and after), their benchmarks run
# alternately, old first in odd rounds and new first in even ones, so a
# shared machine's drift hits both. Prints every round, then per benchmark
# the medians and new/old ratios (docs/performance.md).
#
#   bench/ab.sh OLD.test NEW.test 'BenchRegexp' [rounds=5] [benchtime=1s] [dir=.]
#
# dir is where the binaries run (their package directory, for testdata).
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2") re=$3 rounds=${4:-5} bt=${5:-1s} dir=${6:-.}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
cd "$dir"
for i in $(seq "$rounds"); do
	order="old new"
	((i % 2)) || order="new old"
	for side in $order; do
		bin=$old
		[ "$side" = new ] && bin=$new
		"$bin" -test.run='^$' -test.bench="$re" -test.benchmem -test.benchtime="$bt" |
			awk -v s="$side" '/^Benchmark/ {print s, $0}' | tee -a "$out"
	done
done
echo
awk '
function median(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	side = $1; name = $2
	for (i = 3; i <= NF; i++) {
		if ($(i + 1) == "ns/op") ns = $i
		if ($(i + 1) == "B/op") bytes[name, side] = $i
		if ($(i + 1) == "allocs/op") allocs[name, side] = $i
	}
	t[name, side] = t[name, side] " " ns
	names[name] = 1
}
END {
	for (name in names) {
		o = median(t[name, "old"]); n = median(t[name, "new"])
		printf "%s: time new/old %.3f (median ns/op %d -> %d); B/op %d -> %d; allocs/op %d -> %d\n",
			name, n / o, o, n, bytes[name, "old"], bytes[name, "new"], allocs[name, "old"], allocs[name, "new"]
	}
}' "$out"
