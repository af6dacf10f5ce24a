#!/bin/sh
# cache_memory.sh - build bench/cache_memory.c and measure the Node cache's
# memory: RUNS runs (default 5) each with and without image lists, for the
# static musl build (as shipped) and a glibc build; prints every run's JSON
# line and the medians. Method and figures: bench/RESULTS.md.
#
#   bench/cache_memory.sh                 build + measure (NODES=5000 RUNS=5)
#   BUILD=build NODES=5000 RUNS=7 bench/cache_memory.sh
#
# The static build needs the musl dependencies scripts/deps.sh builds (the
# same ones `make` uses); it is skipped with a note when musl-gcc is missing.
# With it, REFLECTOR=1 (the default) also measures the whole static process
# running the real reflector over HTTPS against the fake API server seeded
# with the same NODES nodes (tests/fakes; a few minutes, most of it Python).
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
NODES=${NODES:-5000}
PYTHON=${PYTHON:-/usr/bin/python3}
out="$BUILD/bench"
mkdir -p "$out"

# The benchmark links the project's own modules from an archive of all of
# them (bench/archives.sh), so the linker takes the ones it uses (the watch
# splitter, the Node decoder, the store and whatever they build on).
. bench/archives.sh

REFLECTOR=${REFLECTOR:-1}
variants=""
if command -v musl-gcc >/dev/null 2>&1; then
	# the objects of the shipped binary and its allocator, linked as the
	# Makefile links bootccm
	bench_musl_archive
	# shellcheck disable=SC2086
	musl-gcc -std=gnu11 -Os $WARN -D_GNU_SOURCE -DBOOTCCM_MIMALLOC -Isrc -I"$BUILD/deps/include" \
		-static -Wl,--gc-sections -o "$out/cache_memory-musl" "$MIMALLOC" \
		bench/cache_memory.c "$out/libbootccm-musl.a" -L"$BUILD/deps/lib" $LIBS
	variants="musl"
	if [ "$REFLECTOR" = 1 ]; then
		# shellcheck disable=SC2086
		musl-gcc -std=gnu11 -Os $WARN -D_GNU_SOURCE -DBENCH_REFLECTOR -DBOOTCCM_MIMALLOC -DCURL_STATICLIB \
			-Isrc -I"$BUILD/gen" -I"$BUILD/deps/include" -c bench/cache_memory.c \
			-o "$out/cache_memory-reflector.o"
		# shellcheck disable=SC2086
		musl-gcc -static -Wl,--gc-sections -o "$out/cache_memory-reflector" \
			"$MIMALLOC" "$out/cache_memory-reflector.o" \
			"$out/libbootccm-musl.a" -L"$BUILD/deps/lib" $LIBS
	fi
else
	echo "cache_memory: no musl-gcc: measuring the glibc build only" >&2
fi
# the glibc variant: every module compiled here with -O2
bench_glibc_archive
# shellcheck disable=SC2086
gcc -std=gnu11 -O2 $WARN -D_GNU_SOURCE -Isrc -o "$out/cache_memory-glibc" bench/cache_memory.c \
	-Wl,--as-needed "$out/libbootccm-glibc.a" $LIBS -lpthread
variants="$variants glibc"

results="$out/cache_memory.jsonl"
: > "$results"
for v in $variants; do
	for images in 50 0; do
		i=0
		while [ "$i" -lt "$RUNS" ]; do
			line=$("$out/cache_memory-$v" --nodes "$NODES" --images "$images")
			echo "{\"variant\":\"$v\",${line#\{}" | tee -a "$results"
			i=$((i + 1))
		done
	done
done

if [ "$REFLECTOR" = 1 ] && [ -x "$out/cache_memory-reflector" ]; then
	"$PYTHON" - "$out" "$NODES" "$RUNS" <<'PY' | tee -a "$results"
import json, os, subprocess, sys
sys.path.insert(0, "tests/fakes")
from apiserver import FakeAPIServer
out, nodes, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for images in (50, 0):
    dump = subprocess.run([os.path.join(out, "cache_memory-musl"), "--dump", "--nodes",
                           str(nodes), "--images", str(images)],
                          capture_output=True, check=True).stdout.splitlines()
    with FakeAPIServer() as srv:
        for line in dump:
            o = json.loads(line)
            o["apiVersion"], o["kind"] = "v1", "Node"
            srv.store.create(("", "nodes"), o)   # as stored: no re-validation
        del dump
        kc = os.path.join(srv.state_dir, "bench.kubeconfig")
        srv.write_kubeconfig(kc, tls_server_name="kubernetes")
        for _ in range(runs):
            r = subprocess.run([os.path.join(out, "cache_memory-reflector"), "--kubeconfig", kc],
                               capture_output=True, text=True, check=True)
            d = json.loads(r.stdout)
            d.update(variant="reflector", images=images)
            print(json.dumps(d), flush=True)
PY
fi

"$PYTHON" - "$results" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
keys = ("json_bytes_per_node", "store_bytes_per_node", "store_bytes", "rss_start_kib",
        "rss_kib", "hwm_kib", "rss_per_node_bytes", "list_seconds", "watch_seconds",
        "list_cpu_seconds", "watch_cpu_seconds", "generate_cpu_seconds")
print()
print("medians:")
groups = {}
for r in runs:
    groups.setdefault((r["variant"], r["images"]), []).append(r)
for (v, images), rs in sorted(groups.items()):
    if v == "reflector":
        m = {k: statistics.median(r[k] for r in rs) for k in
             ("store_bytes_per_node", "store_bytes", "rss_start_kib", "rss_kib", "hwm_kib",
              "sync_seconds", "sync_cpu_seconds")}
        print("  %-9s images=%-2d nodes=%d runs=%d  store %4.0f B/node (%.2f MiB)  "
              "RSS %.2f MiB (start %.2f)  peak %.2f MiB  sync %.1fs (CPU %.2fs)"
              % (v, images, rs[0]["nodes"], len(rs), m["store_bytes_per_node"],
                 m["store_bytes"] / 1048576, m["rss_kib"] / 1024, m["rss_start_kib"] / 1024,
                 m["hwm_kib"] / 1024, m["sync_seconds"], m["sync_cpu_seconds"]))
        continue
    m = {k: statistics.median(r[k] for r in rs) for k in keys}
    print("  %-9s images=%-2d nodes=%d runs=%d  JSON %6.0f B/node  store %4.0f B/node "
          "(%.2f MiB)  RSS %.2f MiB (start %.2f)  peak %.2f MiB  list %.2fs watch %.2fs  "
          "CPU: list %.2fs watch %.2fs (generating the JSON %.2fs of each)"
          % (v, images, rs[0]["nodes"], len(rs), m["json_bytes_per_node"],
             m["store_bytes_per_node"], m["store_bytes"] / 1048576, m["rss_kib"] / 1024,
             m["rss_start_kib"] / 1024, m["hwm_kib"] / 1024, m["list_seconds"],
             m["watch_seconds"], m["list_cpu_seconds"], m["watch_cpu_seconds"],
             m["generate_cpu_seconds"]))
PY
