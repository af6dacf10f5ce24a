#!/bin/sh
# check.sh - run every test suite against the built binaries and end with one
# summary line: "check: N passed, N failed". Called by `make check` after the
# builds; BUILD, PYTHON and FUZZ_SECONDS come from the Makefile.
set -u
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
out="$BUILD/check"
rm -rf "$out"
mkdir -p "$out"
total_p=0 total_f=0 total_s=0
suites=""

add() { # add NAME PASSED FAILED [SKIPPED]
	total_p=$((total_p + $2)); total_f=$((total_f + $3)); total_s=$((total_s + ${4:-0}))
	suites="$suites$(printf '  %-28s %5d passed, %d failed, %d skipped' "$1" "$2" "$3" "${4:-0}")
"
}

unit() { # unit NAME PROGRAM...
	name=$1; shift
	echo "== $name"
	tests/run-unit.sh "$@" | tee "$out/$name.txt"
	line=$(tail -n 1 "$out/$name.txt")
	p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
	f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
	add "$name" "${p:-0}" "${f:-1}"
}

# run_suite NAME BOOTCCM_PATH ARGS... runs one pytest suite, its output to
# $out/NAME.log and its results to $out/NAME.xml; count_suite NAME adds them
# up (a suite that left no readable results counts as failed).
run_suite() {
	name=$1 bin=$2; shift 2
	BOOTCCM_DRIVERS="${BOOTCCM_DRIVERS:-$BUILD/dev/drivers}" BOOTCCM="$bin" "$PYTHON" -m pytest -q -p no:cacheprovider \
		--junitxml="$out/$name.xml" "$@" >"$out/$name.log" 2>&1
}

count_suite() {
	counts=$("$PYTHON" - "$out/$1.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("0 1 0"); sys.exit()
t = f = s = 0
for ts in ([root] if root.tag == "testsuite" else root.iter("testsuite")):
    t += int(ts.get("tests", 0)); s += int(ts.get("skipped", 0))
    f += int(ts.get("failures", 0)) + int(ts.get("errors", 0))
print(t - f - s, f if t else 1, s)
PY
)
	# shellcheck disable=SC2086
	add "$1" $counts
}

pytest_suite() { # pytest_suite NAME BOOTCCM_PATH ARGS...
	echo "== $1"
	run_suite "$@"
	cat "$out/$1.log"
	count_suite "$1"
}

# together A B: run the suites A and B (each "NAME BOOTCCM_PATH DRIVERS
# ARGS...", one string split into words) at the same time: a suite spends
# most of its time waiting on the processes it drives, so two of them share
# the machine's cores. Their outputs follow one another.
together() {
	ta=$1 tb=$2
	echo "== ${ta%% *} and ${tb%% *}, at the same time"
	# shellcheck disable=SC2086
	(set -- $ta; n=$1 b=$2 dr=$3; shift 3; BOOTCCM_DRIVERS=$dr run_suite "$n" "$b" "$@") &
	pa=$!
	# shellcheck disable=SC2086
	(set -- $tb; n=$1 b=$2 dr=$3; shift 3; BOOTCCM_DRIVERS=$dr run_suite "$n" "$b" "$@") &
	pb=$!
	wait "$pa"
	wait "$pb"
	for spec in "$ta" "$tb"; do
		n=${spec%% *}
		echo "== $n"
		cat "$out/$n.log"
		count_suite "$n"
	done
}

# fuzz_one HARNESS: its seed corpus and FUZZ_SECONDS of new inputs; prints
# "pass" or "fail".
fuzz_one() {
	fz=$1 n=$(basename "$1")
	corpus="tests/fuzz/corpus/${n#fuzz_}" work="$out/corpus-$n"
	mkdir -p "$work"
	if "$fz" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=0 "$work" "$corpus" >"$out/$n.log" 2>&1; then
		echo pass
	else
		echo fail
	fi
}

fuzz() { # every harness, two at a time (each is one process on one core)
	lane=0
	for fz in "$BUILD"/fuzz/fuzz_*; do
		[ -x "$fz" ] || continue
		echo "$fz" >>"$out/fuzz-lane-$lane.list"
		lane=$((1 - lane))
	done
	echo "== fuzz: each harness ${FUZZ_SECONDS}s, two at a time"
	for l in 0 1; do
		[ -f "$out/fuzz-lane-$l.list" ] || continue
		(while read -r fz; do
			printf '%s %s\n' "$(fuzz_one "$fz")" "$(basename "$fz")"
		done <"$out/fuzz-lane-$l.list" >"$out/fuzz-lane-$l.res") &
	done
	wait
	p=0 f=0
	for res in "$out"/fuzz-lane-*.res; do
		while read -r verdict n; do
			echo "fuzz $n: $verdict"
			if [ "$verdict" = pass ]; then
				p=$((p + 1))
			else
				f=$((f + 1)); tail -n 40 "$out/$n.log"
			fi
		done <"$res"
	done
	add fuzz "$p" "$f"
}

unit unit-asan "$BUILD"/dev/tests/test_*
unit unit-tsan "$BUILD"/tsan/tests/test_*
fuzz
# the static artifact, the build's output and the include layering
pytest_suite static-artifact "$BUILD/bootccm" tests/static
# end-to-end tests (tests/e2e: the real binary) and integration tests
# (tests/integration: one module through its driver program): the driver
# programs run under ThreadSanitizer beside the static binary, and under
# AddressSanitizer beside the sanitizer binary; the static and the ASan
# runs of a suite go together
together "e2e-static $BUILD/bootccm $BUILD/tsan/drivers tests/e2e" \
	"e2e-asan $BUILD/dev/bootccm $BUILD/dev/drivers tests/e2e"
together "integration-static $BUILD/bootccm $BUILD/tsan/drivers tests/integration" \
	"integration-asan $BUILD/dev/bootccm $BUILD/dev/drivers tests/integration"
# Two lanes at the same time, as the suite pairs above: most of a suite's
# time goes to waiting on the processes it drives.
# Lane one: the daemon's threads (reflectors, lease, controllers, serving,
# the static provider's inventory and health polling, the service
# controller, the hcloud provider's shared listing, request pool and action
# polling) under ThreadSanitizer: a race makes the binary exit 66, which the
# fixtures fail; then the stand-ins' own suites and the installer's.
lane_one() {
	BOOTCCM_DRIVERS="$BUILD/tsan/drivers" run_suite e2e-tsan "$BUILD/tsan/bootccm" \
		tests/e2e/test_bootstrap.py tests/e2e/test_daemon.py tests/integration/test_node_controller.py \
		tests/e2e/test_install_e2e.py tests/e2e/test_static_provider.py tests/e2e/test_static_lb.py \
		tests/e2e/test_hcloud.py tests/e2e/test_hcloud_lb.py tests/e2e/test_hcloud_routes.py
	run_suite fake-apiserver "$BUILD/bootccm" tests/fakes --ignore=tests/fakes/metadata --ignore=tests/fakes/hcloud
	run_suite fake-metadata "$BUILD/bootccm" tests/fakes/metadata
	run_suite fake-hcloud "$BUILD/bootccm" tests/fakes/hcloud
	run_suite install "$BUILD/bootccm" tests/install
}
echo "== e2e-tsan, the stand-ins and install, beside k8s"
lane_one &
lane=$!
# Lane two: bootccm against a real control plane (etcd, kube-apiserver and
# kube-controller-manager from scripts/k8s-build.sh; make check started
# their build before its own, K8S_BUILD_LOG has its output): ensure waits
# for that build to end (the pin's lock) and builds whatever it left undone.
k8s_ok=1
if scripts/k8s-build.sh ensure >"$out/k8s-build.log" 2>&1; then
	BOOTCCM_K8S_BIN=$(scripts/k8s-build.sh bindir) run_suite k8s "$BUILD/bootccm" tests/k8s
else
	k8s_ok=0
fi
wait "$lane"
for n in e2e-tsan k8s fake-apiserver fake-metadata fake-hcloud install; do
	echo "== $n"
	if [ "$n" = k8s ]; then
		echo "(the upstream programs:)"
		cat "$out/k8s-build.log"
		if [ -n "${K8S_BUILD_LOG:-}" ] && [ -s "$K8S_BUILD_LOG" ]; then
			echo "(built beside the suites above:)"
			cat "$K8S_BUILD_LOG"
		fi
		if [ "$k8s_ok" = 0 ]; then
			add k8s 0 1
			continue
		fi
	fi
	cat "$out/$n.log"
	count_suite "$n"
done
echo
echo "Suites:"
printf '%s' "$suites"
echo "check: $total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" = 0 ]
