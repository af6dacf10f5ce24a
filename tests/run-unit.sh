#!/bin/sh
# run-unit.sh - run unit-test programs; print each one's result and a total.
# Usage: tests/run-unit.sh PROGRAM...   Exit 1 if any test failed.
passed=0 failed=0
for t in "$@"; do
	out=$("$t" 2>&1); rc=$?
	line=$(printf '%s\n' "$out" | grep -E ': [0-9]+ passed, [0-9]+ failed$' | tail -n 1)
	p=$(printf '%s' "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed$/\1/')
	f=$(printf '%s' "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed$/\2/')
	if [ -z "$line" ]; then p=0; f=1; fi
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi   # crashed or sanitizer report
	[ "$f" != 0 ] && printf '%s\n' "$out"
	printf '%-40s %s passed, %s failed\n' "$(basename "$t")" "$p" "$f"
	passed=$((passed + p)); failed=$((failed + f))
done
echo "unit: $passed passed, $failed failed"
[ "$failed" = 0 ]
