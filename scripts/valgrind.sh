#!/bin/sh
# valgrind.sh - BUILD/glibc/bootccm (glibc, no sanitizer) under valgrind
# --leak-check=full through a churn against the fake API server
# (bench/soak.py, small: 200 Nodes, 50 LoadBalancer Services, MINUTES of
# churn, default 5), then SIGTERM. Prints valgrind's leak summary, keeps the
# whole report in BUILD/valgrind/bootccm.log, and exits 1 unless it says
# 0 bytes definitely lost and no invalid reads or writes.
set -u
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
MINUTES=${VALGRIND_MINUTES:-5}
out="$BUILD/valgrind"
mkdir -p "$out"
rm -f "$out/bootccm.log"
"$PYTHON" bench/soak.py --bootccm "$BUILD/glibc/bootccm" --nodes 200 --services 50 \
	--minutes "$MINUTES" --node-rate 2 --svc-rate 1 --steady-s 10 --sample-s 30 \
	--start-timeout 300 --json "$out/soak.jsonl" \
	--wrapper "valgrind --leak-check=full --show-leak-kinds=definite,indirect \
--errors-for-leak-kinds=definite --num-callers=30 --log-file=$out/bootccm.log" >/dev/null
rc=$?
sed -n '/LEAK SUMMARY/,/suppressed:/p;/ERROR SUMMARY/p' "$out/bootccm.log"
[ "$rc" = 0 ] || { echo "valgrind: the churn failed (exit $rc)"; exit 1; }
grep -q 'definitely lost: 0 bytes in 0 blocks\|All heap blocks were freed' "$out/bootccm.log" || {
	echo "valgrind: memory definitely lost, see $out/bootccm.log"; exit 1; }
! grep -q 'Invalid read\|Invalid write\|uninitialised' "$out/bootccm.log" || {
	echo "valgrind: memory errors, see $out/bootccm.log"; exit 1; }
echo "valgrind: 0 bytes definitely lost"
