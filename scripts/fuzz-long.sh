#!/bin/sh
# fuzz-long.sh - every libFuzzer harness in BUILD/fuzz for SECONDS each
# (default 600), JOBS harnesses at a time (default 1: the machine is shared),
# each in its own work directory under BUILD/fuzz-long/ with the seed corpus
# of tests/fuzz/corpus/ read too, a 10 s per-input timeout and a 2 GiB RSS
# limit. Prints one line per harness, "NAME execs=N crashes=N seconds=S",
# writes them to BUILD/fuzz-long/results.txt and exits 1 when any harness
# crashed; a crash's input is BUILD/fuzz-long/NAME/crash-* (to keep, copy it
# into tests/fuzz/corpus/NAME/ once fixed: the corpus is the regression set).
set -u
BUILD=${BUILD:-build}
SECONDS_EACH=${FUZZ_LONG_SECONDS:-600}
JOBS=${FUZZ_LONG_JOBS:-1}
out="$BUILD/fuzz-long"
mkdir -p "$out"
: >"$out/results.txt"

one() { # one HARNESS
	fz=$1 n=$(basename "$1")
	corpus="tests/fuzz/corpus/${n#fuzz_}"
	work="$out/$n"
	mkdir -p "$work/corpus"
	rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*
	"$fz" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$corpus" \
		>"$work/log" 2>&1
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
	crashes=$(find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o \
		-name 'timeout-*' -o -name 'oom-*' \) | wc -l)
	line="$n execs=${execs:-0} crashes=$crashes seconds=$SECONDS_EACH"
	echo "$line"
	echo "$line" >>"$out/results.txt"
}

running=0
for fz in "$BUILD"/fuzz/fuzz_*; do
	[ -x "$fz" ] || continue
	one "$fz" &
	running=$((running + 1))
	if [ "$running" -ge "$JOBS" ]; then
		wait
		running=0
	fi
done
wait
! grep -q 'crashes=[1-9]' "$out/results.txt"
