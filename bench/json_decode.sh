#!/bin/sh
# json_decode.sh - build bench/json_decode.c and measure what decoding one
# realistic Node costs (bench/testdata/node-12k.json: 12.4 KB, 50 images,
# 13 labels, 4 managedFields entries), ITERATIONS decodes (default 20,000)
# per step, RUNS runs (default 3) of each build:
#
#   musl      the static build as shipped: the objects `make` builds (-Os),
#             linked with mimalloc as the Makefile links bootccm
#   mallocng  the same objects with musl's own allocator (the build before
#             mimalloc), for comparison
#   glibc     every module compiled with gcc -O2 against Debian's libraries
#   go        bench/json_decode.go: Go's encoding/json into a typed Node
#             struct, what a Go CCM pays per event (Debian's golang-go;
#             skipped when `go` is missing)
#
# Prints every run's JSON line, then the medians of microseconds per decode
# (wall clock, and CPU time of the loop / decodes). Raw lines go to
# $BUILD/bench/json_decode.jsonl. Method and figures: bench/RESULTS.md.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
ITERATIONS=${ITERATIONS:-20000}
PYTHON=${PYTHON:-/usr/bin/python3}
out="$BUILD/bench"
mkdir -p "$out"
. bench/archives.sh

variants=""
if command -v musl-gcc >/dev/null 2>&1; then
	bench_musl_archive
	for v in musl mallocng; do
		alloc="" def=""
		[ "$v" = musl ] && alloc=$MIMALLOC def=-DBOOTCCM_MIMALLOC
		# shellcheck disable=SC2086
		musl-gcc -std=gnu11 -Os $WARN -D_GNU_SOURCE $def -Isrc -I"$BUILD/deps/include" -static \
			-Wl,--gc-sections -o "$out/json_decode-$v" $alloc bench/json_decode.c \
			"$out/libbootccm-musl.a" -L"$BUILD/deps/lib" $LIBS
	done
	variants="musl mallocng"
else
	echo "json_decode: no musl-gcc: measuring the glibc build only" >&2
fi
bench_glibc_archive
# shellcheck disable=SC2086
gcc -std=gnu11 -O2 $WARN -D_GNU_SOURCE -Isrc -o "$out/json_decode-glibc" bench/json_decode.c \
	-Wl,--as-needed "$out/libbootccm-glibc.a" $LIBS -lpthread
variants="$variants glibc"
if command -v go >/dev/null 2>&1; then
	go build -o "$out/json_decode-go" bench/json_decode.go
	variants="$variants go"
else
	echo "json_decode: no go: the Go figure is left out" >&2
fi

results="$out/json_decode.jsonl"
: > "$results"
for v in $variants; do
	i=0
	while [ "$i" -lt "$RUNS" ]; do
		# (Go's flag package takes --iterations too)
		"$out/json_decode-$v" --iterations "$ITERATIONS" >"$out/json_decode.run"
		while read -r line; do
			echo "{\"variant\":\"$v\",\"loadavg_1m\":$(cut -d' ' -f1 /proc/loadavg),${line#\{}" |
			    tee -a "$results"
		done <"$out/json_decode.run"
		i=$((i + 1))
	done
done

"$PYTHON" - "$results" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
groups = {}
for r in runs:
    groups.setdefault((r["variant"], r["step"]), []).append(r)
print()
print("medians (microseconds per decode of %d bytes):" % runs[0]["bytes"])
for (v, step), rs in groups.items():
    wall = statistics.median(r["us_per_decode"] for r in rs)
    cpu = statistics.median(r["cpu_s"] / r["iterations"] * 1e6 for r in rs)
    print("  %-8s %-16s wall %7.1f  cpu %7.1f  (%d runs, load %.1f-%.1f)"
          % (v, step, wall, cpu, len(rs), min(r["loadavg_1m"] for r in rs),
             max(r["loadavg_1m"] for r in rs)))
PY
