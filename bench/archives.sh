# shellcheck shell=sh
# shellcheck disable=SC2034,SC2154 # the sourcing script uses these and sets out
# archives.sh - sourced by the benchmark scripts (cache_memory.sh,
# json_decode.sh): the project's modules as archives a benchmark program
# links against, so the linker takes the ones it uses without a list here
# that would go stale. Needs BUILD and out (the output directory) set, and
# the working directory at the top of the tree.
#
#   bench_musl_archive    $out/libbootccm-musl.a: the objects of the shipped
#                         binary, as `make` builds them (-Os); link it with
#                         $MIMALLOC first, as the Makefile links bootccm
#   bench_glibc_archive   $out/libbootccm-glibc.a: every module compiled here
#                         with gcc -O2, for comparison

# the Makefile's warnings
WARN="-Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith
	-Wformat=2 -Wvla -Wno-format-truncation"
LIBS="-lcurl -lwolfssl -ljson-c -lyaml -lm"
MIMALLOC="$BUILD/deps/lib/mimalloc.o"

# core_srcs TLS: every source of the product but main.c, with the TLS glue TLS
# (src/http/tlsctx_wolfssl.c for the static build, src/http/tlsctx_blob.c for glibc).
core_srcs() {
	for f in src/*.c src/*/*.c providers/*/*.c; do
		case $f in src/main.c|src/http/tlsctx_*.c) [ "$f" = "$1" ] || continue ;; esac
		echo "$f"
	done
}

bench_musl_archive() {
	make -s BUILD="$BUILD" static >/dev/null
	rm -f "$out/libbootccm-musl.a"
	for f in $(core_srcs src/http/tlsctx_wolfssl.c); do
		ar rcs "$out/libbootccm-musl.a" "$BUILD/static/${f%.c}.o"
	done
}

bench_glibc_archive() {
	make -s BUILD="$BUILD" "$BUILD/gen/version.h"
	rm -rf "$out/glibc-obj" "$out/libbootccm-glibc.a"
	for f in $(core_srcs src/http/tlsctx_blob.c); do
		o="$out/glibc-obj/${f%.c}.o"
		mkdir -p "$(dirname "$o")"
		# shellcheck disable=SC2086
		gcc -std=gnu11 -O2 $WARN -D_GNU_SOURCE -Isrc -I"$BUILD/gen" -c "$f" -o "$o"
		ar rcs "$out/libbootccm-glibc.a" "$o"
	done
}
