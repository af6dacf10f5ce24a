#!/bin/sh
# deps.sh - build bootccm's static musl dependencies (libcurl, wolfSSL, json-c,
# libyaml, and the mimalloc allocator) from Debian's source packages into a
# cache outside the source tree.
#
#   scripts/deps.sh ensure BUILD_DIR   build the libraries if the cache lacks them,
#                                      then point BUILD_DIR/deps at the prefix and
#                                      write BUILD_DIR/deps.key (only if it changed)
#   scripts/deps.sh versions           print "name version" of the five Debian
#                                      source packages, one per line
#   scripts/deps.sh prefix             print the install prefix (does not build)
#   scripts/deps.sh key                print the cache key (does not build)
#
# Cache: ${BOOTCCM_DEPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bootccm/deps}/<key>
# The key is made of the five Debian source versions and a hash of this file, so
# a new Debian upload or a change of any flag below builds a fresh prefix.
# See docs/build.md.
set -eu

me=deps
die() { echo "$me: error: $*" >&2; exit 1; }
say() { echo "$me: $*" >&2; }

# This file, for the cache key.
self_dir=$(cd "$(dirname "$0")" && pwd) || die "cannot locate scripts directory"
self="$self_dir/$(basename "$0")"
[ -r "$self" ] || die "cannot read $self"

# Debian source packages (the build order is wolfssl first: curl needs it).
SOURCES="curl wolfssl json-c libyaml mimalloc"
# Build tools; installed with apt-get when missing (as root).
TOOLS="musl-tools musl-dev gcc make dpkg-dev patch xz-utils autoconf automake libtool cmake pkg-config"

CACHE=${BOOTCCM_DEPS_CACHE:-${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}/bootccm/deps}
case $CACHE in /*) ;; *) CACHE="$PWD/$CACHE" ;; esac # BUILD_DIR/deps links here
DEBSRC_FILE=/etc/apt/sources.list.d/bootccm-deb-src.sources
DEBIAN_SOURCES=/etc/apt/sources.list.d/debian.sources

export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C
apt_opts="-q -o DPkg::Lock::Timeout=300"
apt_updated=0

is_root() { [ "$(id -u)" = 0 ]; }

apt_update() {
	[ "$apt_updated" = 1 ] && return 0
	is_root || die "need root to run apt-get update"
	say "apt-get update"
	# shellcheck disable=SC2086
	apt-get $apt_opts update >/dev/null || die "apt-get update failed"
	apt_updated=1
}

# --- step 1: tools and deb-src ---------------------------------------------

ensure_tools() {
	# shellcheck disable=SC2086
	missing=$(dpkg-query -W -f='${Package} ${Status}\n' $TOOLS 2>/dev/null \
		| awk '/ install ok installed$/ { ok[$1] = 1 }
			END { n = split(tools, t, " "); for (i = 1; i <= n; i++) if (!ok[t[i]]) printf " %s", t[i] }' \
			tools="$TOOLS")
	[ -z "$missing" ] && return 0
	is_root || die "missing build tools:$missing (run as root, or install them)"
	apt_update
	say "installing:$missing"
	# shellcheck disable=SC2086
	apt-get $apt_opts install -y --no-install-recommends $missing >/dev/null \
		|| die "apt-get install failed:$missing"
}

have_deb_src() {
	# shellcheck disable=SC2016 # apt's own $(FIELD) syntax
	apt-get indextargets --format '$(CREATED_BY)' 2>/dev/null | grep -qx Sources
}

# Write a deb822 file with a "Types: deb-src" copy of every stanza of
# debian.sources that has "deb" among its Types (comments dropped, every other
# field kept as is, continuation lines included).
write_deb_src() {
	[ -r "$DEBIAN_SOURCES" ] || die "no deb-src entry and no $DEBIAN_SOURCES to mirror"
	is_root || die "no deb-src entry in the apt sources; need root to add $DEBSRC_FILE"
	tmp="$DEBSRC_FILE.tmp.$$"
	awk '
		function flush() {
			if (n > 0 && isdeb) {
				if (out++) print ""
				for (i = 1; i <= n; i++) print buf[i]
			}
			n = 0; isdeb = 0
		}
		BEGIN {
			print "# Written by bootccm scripts/deps.sh: source entries mirroring debian.sources."
			print ""
		}
		/^[ \t]*$/ { flush(); next }
		/^#/ { next }
		/^Types:/ {
			t = $0; sub(/^Types:[ \t]*/, "", t)
			m = split(t, ty, /[ \t]+/)
			for (j = 1; j <= m; j++) if (ty[j] == "deb") isdeb = 1
			buf[++n] = "Types: deb-src"; next
		}
		{ buf[++n] = $0 }
		END { flush(); if (!out) exit 1 }
	' "$DEBIAN_SOURCES" >"$tmp" || { rm -f "$tmp"; die "no deb entries in $DEBIAN_SOURCES"; }
	mv "$tmp" "$DEBSRC_FILE"
	say "added $DEBSRC_FILE"
	apt_updated=0
	apt_update
}

# --- step 2: versions and key ----------------------------------------------

# Print "name version" for every version of $SOURCES that apt knows (one
# apt-cache call: it is most of the cost of an "ensure" with nothing to build).
query_versions() {
	# shellcheck disable=SC2086
	apt-cache showsrc --only-source $SOURCES 2>/dev/null \
		| awk '/^Package: / { p = $2 } /^Version: / { print p, $2 }'
}

VERSIONS=""
resolve_versions() {
	[ -n "$VERSIONS" ] && return 0
	tries=0
	while :; do
		all=$(query_versions)
		VERSIONS=""
		lacking=""
		for s in $SOURCES; do
			best=""
			for v in $(echo "$all" | awk -v n="$s" '$1 == n { print $2 }'); do
				if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then
					best=$v
				fi
			done
			[ -n "$best" ] || lacking="$lacking $s"
			VERSIONS="$VERSIONS$s $best
"
		done
		[ -z "$lacking" ] && break
		tries=$((tries + 1))
		[ "$tries" -le 1 ] || die "apt knows no source package:$lacking (check the deb-src entries)"
		if have_deb_src; then
			# deb-src configured but its index not downloaded yet
			is_root || die "apt knows no source package:$lacking (run apt-get update as root)"
			apt_update
		else
			write_deb_src
		fi
	done
}

version_of() {
	echo "$VERSIONS" | awk -v n="$1" '$1 == n { print $2 }'
}

KEY=""
compute_key() {
	resolve_versions
	h=$(sha256sum "$self" | cut -c1-12) || die "cannot hash $self"
	KEY=""
	for s in $SOURCES; do
		KEY="$KEY$s-$(version_of "$s" | tr ':' '.')_"
	done
	KEY="${KEY}deps-$h"
	PREFIX="$CACHE/$KEY"
}

# --- step 4: build -----------------------------------------------------------

# run LOG DESCRIPTION CMD...: run CMD with all output to LOG; on failure show the
# log's tail and exit.
run() {
	log=$1 what=$2
	shift 2
	echo "== $what" >>"$log"
	t=$(date +%s)
	if ! "$@" >>"$log" 2>&1; then
		echo "$me: FAILED: $what" >&2
		echo "$me: ---- last lines of $log ----" >&2
		tail -n 40 "$log" >&2
		echo "$me: ---- (build tree kept in $WORK) ----" >&2
		exit 1
	fi
	echo "== $what: done in $(($(date +%s) - t)) s" >>"$log"
}

# Flags shared by every library.
OPT_CFLAGS="-Os -ffunction-sections -fdata-sections"

fetch() { # fetch SOURCE: download into $DL, unpack into $WORK/src/SOURCE
	s=$1 v=$(version_of "$1")
	log="$LOGS/$s-fetch.log"
	say "$s $v: fetch"
	# shellcheck disable=SC2016 # expanded by the inner sh
	run "$log" "apt-get source --download-only $s=$v" \
		sh -c 'cd "$1" && apt-get -q source --download-only "$2=$3"' sh "$DL" "$s" "$v"
	dsc="$DL/${s}_$(echo "$v" | sed 's/^[0-9]*://').dsc"
	[ -f "$dsc" ] || die "apt-get source $s=$v left no $dsc (see $log)"
	# apt checked the files against the signed Sources index; dpkg-source's
	# own signature check only warns (no Debian keyring needed).
	run "$log" "dpkg-source -x $dsc" dpkg-source -x "$dsc" "$WORK/src/$s"
}

# --enable-certgen and WOLFSSL_ALT_NAMES: the serving endpoint (src/serve.c)
# generates its self-signed certificate, with SANs, in memory at start.
# --enable-aesni: AES-GCM (every TLS record) with AES-NI and PCLMULQDQ when
# the CPU has them (checked at run time; the C code otherwise): the software
# AES and GHASH were a fifth of a node burst's CPU.
build_wolfssl() {
	s=wolfssl log="$LOGS/$s.log" v=$(version_of $s)
	cd "$WORK/src/$s"
	say "$s $v: configure"
	[ -x configure ] || run "$log" "$s: autogen.sh" ./autogen.sh
	run "$log" "$s: configure" ./configure \
		CC=musl-gcc CFLAGS="$OPT_CFLAGS" \
		CPPFLAGS="-DWOLFSSL_GETRANDOM -DWOLFSSL_ALT_NAMES" \
		--prefix="$STAGE" \
		--enable-static --disable-shared \
		--disable-dependency-tracking --enable-jobserver=no \
		--enable-reproducible-build \
		--enable-tls13 --disable-oldtls \
		--enable-sni --enable-alpn \
		--enable-opensslextra \
		--enable-ip-alt-name \
		--enable-certgen \
		--enable-curve25519 \
		--enable-aesni \
		--disable-sys-ca-certs \
		--disable-examples --disable-crypttests --disable-benchmark
	say "$s $v: make"
	run "$log" "$s: make" make -j"$JOBS"
	run "$log" "$s: make install" make install
	# configure compiles the library with -DHAVE___UINT128_T=1 but keeps it
	# out of options.h on purpose; the math structs (ecc_key, mp_int) change
	# size with it, so programs reading options.h would see other layouts
	# than the library's (ecc_key: 4200 bytes instead of 4232).
	if grep -q '^ac_cv_type___uint128_t=yes' config.log; then
		printf '\n/* wolfSSL builds the library with this define (configure.ac keeps it out of this file); struct layouts depend on it */\n#ifndef HAVE___UINT128_T\n#define HAVE___UINT128_T 1\n#endif\n' \
			>> "$STAGE/include/wolfssl/options.h"
	fi
}

build_curl() {
	s=curl log="$LOGS/$s.log" v=$(version_of $s)
	cd "$WORK/src/$s"
	# Debian's last two patches only rename the library to libcurl-gnutls and
	# libcurl-nss; undo them (last applied first) for a plain libcurl.
	for p in 99_nss.patch 90_gnutls.patch; do
		[ -f "debian/patches/$p" ] || die "curl: debian/patches/$p not found"
		run "$log" "curl: reverse $p" patch -R -p1 -i "debian/patches/$p"
	done
	say "$s $v: configure"
	run "$log" "$s: autoreconf" autoreconf -fi
	run "$log" "$s: configure" ./configure \
		CC=musl-gcc CFLAGS="$OPT_CFLAGS" \
		--prefix="$STAGE" \
		--enable-static --disable-shared --disable-dependency-tracking \
		--with-wolfssl="$STAGE" \
		--enable-http --enable-proxy \
		--disable-ftp --disable-file --disable-ldap --disable-ldaps \
		--disable-rtsp --disable-dict --disable-telnet --disable-tftp \
		--disable-pop3 --disable-imap --disable-smb --disable-smtp \
		--disable-gopher --disable-mqtt --disable-websockets \
		--without-zlib --without-brotli --without-zstd --without-libpsl \
		--without-libidn2 --without-nghttp2 --without-nghttp3 \
		--without-ngtcp2 --without-quiche --without-msh3 --without-hyper \
		--without-libssh --without-libssh2 --without-librtmp \
		--without-libgsasl --disable-ares \
		--without-ca-bundle --without-ca-path \
		--disable-manual --disable-libcurl-option \
		--disable-cookies --disable-alt-svc --disable-hsts --disable-doh \
		--disable-netrc --disable-mime --disable-ntlm --disable-ntlm-wb \
		--disable-tls-srp --disable-progress-meter \
		--without-zsh-functions-dir --without-fish-functions-dir
	say "$s $v: make"
	run "$log" "$s: make -C lib" make -C lib -j"$JOBS"
	run "$log" "$s: install lib" make -C lib install
	run "$log" "$s: install headers" make -C include install
	run "$log" "$s: install libcurl.pc" make install-pkgconfigDATA
}

# build_cmake SOURCE CFLAGS CMAKE-ARGS...: configure a cmake project in
# SOURCE's tree (a _build directory) for musl, Release with CFLAGS, into the
# staging prefix with its libraries in lib/; make and install.
build_cmake() {
	s=$1 cflags=$2
	shift 2
	log="$LOGS/$s.log" v=$(version_of "$s")
	mkdir -p "$WORK/src/$s/_build"
	cd "$WORK/src/$s/_build"
	say "$s $v: configure"
	run "$log" "$s: cmake" env CC=musl-gcc cmake -G "Unix Makefiles" .. \
		-DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_C_FLAGS_RELEASE="$cflags -DNDEBUG" \
		-DCMAKE_INSTALL_PREFIX="$STAGE" \
		-DCMAKE_INSTALL_LIBDIR=lib \
		"$@"
	say "$s $v: make"
	run "$log" "$s: make" make -j"$JOBS"
	run "$log" "$s: make install" make install
}

build_json_c() {
	build_cmake json-c "$OPT_CFLAGS" \
		-DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF -DDISABLE_EXTRA_LIBS=ON
}

build_libyaml() {
	s=libyaml log="$LOGS/$s.log" v=$(version_of $s)
	cd "$WORK/src/$s"
	say "$s $v: configure"
	[ -x configure ] || run "$log" "$s: bootstrap" ./bootstrap
	run "$log" "$s: configure" ./configure \
		CC=musl-gcc CFLAGS="$OPT_CFLAGS" \
		--prefix="$STAGE" \
		--enable-static --disable-shared --disable-dependency-tracking
	say "$s $v: make"
	run "$log" "$s: make" make -j"$JOBS"
	run "$log" "$s: make install" make install
}

# mimalloc replaces musl's allocator (mallocng) in the static binary: the
# Makefile links lib/mimalloc.o, the single object mimalloc builds for static
# overriding, ahead of libc, so malloc, free and the rest resolve to it (musl
# keeps its own allocator for its few internal users: locales, time zones,
# atexit past 32 handlers). Built -O2, not -Os like the libraries: it is the
# hot path of every JSON parse, and -O2 costs 12 KiB. No shared or static
# library, no tests; MI_OVERRIDE (the default) is spelled out because it is
# the point. See docs/build.md.
build_mimalloc() {
	build_cmake mimalloc "-O2 -ffunction-sections -fdata-sections" \
		-DMI_INSTALL_TOPLEVEL=ON \
		-DMI_OVERRIDE=ON \
		-DMI_BUILD_SHARED=OFF -DMI_BUILD_STATIC=OFF -DMI_BUILD_OBJECT=ON \
		-DMI_BUILD_TESTS=OFF
	[ -f "$STAGE/lib/mimalloc.o" ] || die "mimalloc: lib/mimalloc.o was not installed"
	# its cmake and pkg-config files describe the libraries not built here
	rm -rf "$STAGE/lib/cmake/mimalloc" "$STAGE/lib/pkgconfig/mimalloc.pc"
}

# Remove build trees that failed or interrupted runs of other keys left behind,
# unless a build of that key is running (its lock is held).
prune_leftovers() {
	command -v flock >/dev/null 2>&1 || return 0
	for lk in "$CACHE"/.lock-*; do
		[ -f "$lk" ] || continue
		k=${lk##*/.lock-}
		if flock -n "$lk" true; then
			rm -rf "$CACHE/.work-$k" "$CACHE/.stage-$k" "$lk"
		fi
	done
}

build_all() {
	mkdir -p "$CACHE" || die "cannot create cache directory $CACHE"
	# One build per key at a time; a second caller waits, then finds .complete.
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$CACHE/.lock-$KEY"
		flock 9 || die "cannot lock $CACHE/.lock-$KEY"
		if [ -e "$PREFIX/.complete" ]; then
			rm -f "$CACHE/.lock-$KEY"
			return 0
		fi
	fi
	start=$(date +%s)
	WORK="$CACHE/.work-$KEY"
	STAGE="$CACHE/.stage-$KEY"
	LOGS="$CACHE/logs/$KEY"
	JOBS=$(nproc 2>/dev/null || echo 2)
	rm -rf "$WORK" "$STAGE" "$LOGS"
	mkdir -p "$WORK/src" "$STAGE" "$LOGS"
	# As root, apt downloads as user _apt: give it a directory it can write
	# and reach (the cache may sit in a private home, so use $TMPDIR).
	DL="$WORK/dl"
	if is_root && id _apt >/dev/null 2>&1; then
		DL=$(mktemp -d "${TMPDIR:-/tmp}/bootccm-deps-dl.XXXXXX") || die "mktemp failed"
		trap 'rm -rf "$DL"' EXIT
		trap 'exit 130' INT TERM HUP
		chown _apt "$DL"
	else
		mkdir -p "$DL"
	fi
	say "building into $PREFIX (logs: $LOGS)"

	# Keep the host's pkg-config files (glibc builds of zlib, libpsl, ...) out
	# of the musl build: only what is staged here is visible.
	PKG_CONFIG_LIBDIR="$STAGE/lib/pkgconfig"
	PKG_CONFIG_PATH=""
	export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH
	# Nothing from the caller's environment leaks into the builds: compiler
	# flags, an outer make's jobserver and variables, DESTDIR, cmake settings.
	unset CFLAGS CPPFLAGS LDFLAGS LIBS CC CPP AR RANLIB MAKEFLAGS MFLAGS \
		MAKELEVEL DESTDIR PKG_CONFIG_SYSROOT_DIR CMAKE_GENERATOR \
		CMAKE_PREFIX_PATH CMAKE_TOOLCHAIN_FILE CONFIG_SITE 2>/dev/null || true

	for s in $SOURCES; do fetch "$s"; done
	t0=$(date +%s)
	say "fetch: $((t0 - start)) s"
	build_wolfssl; t1=$(date +%s)
	say "wolfssl: $((t1 - t0)) s"
	build_curl; t2=$(date +%s)
	say "curl: $((t2 - t1)) s"
	build_json_c; t3=$(date +%s)
	say "json-c: $((t3 - t2)) s"
	build_libyaml; t4=$(date +%s)
	say "libyaml: $((t4 - t3)) s"
	build_mimalloc; t5=$(date +%s)
	say "mimalloc: $((t5 - t4)) s"
	cd "$CACHE"

	# The staging prefix is baked into pkg-config and libtool files: point them
	# at the final prefix, and drop the .la files (not needed for static links).
	find "$STAGE" -name '*.la' -exec rm -f {} +
	for f in "$STAGE"/lib/pkgconfig/*.pc; do
		if [ -f "$f" ]; then sed -i "s|$STAGE|$PREFIX|g" "$f"; fi
	done
	rm -rf "${STAGE:?}/share" "${STAGE:?}/bin"
	if grep -rlF "$STAGE" "$STAGE" >"$LOGS/stage-refs.txt" 2>/dev/null; then
		die "staging path left in: $(tr '\n' ' ' <"$LOGS/stage-refs.txt")"
	fi
	echo "$VERSIONS" | sed '/^$/d' >"$STAGE/VERSIONS"
	touch "$STAGE/.complete"
	# .complete is in place before the rename, which is the commit point: a
	# prefix directory never exists half-built. One without .complete can only
	# be debris from outside; replace it.
	if [ -e "$PREFIX" ]; then rm -rf "$PREFIX"; fi
	mv -T "$STAGE" "$PREFIX" || die "cannot rename $STAGE to $PREFIX"
	rm -rf "$WORK" "$CACHE/.lock-$KEY"
	prune_leftovers
	say "done in $(($(date +%s) - start)) s: $PREFIX"
}

# --- step 5: link into BUILD_DIR --------------------------------------------

link_build_dir() {
	b=$1
	mkdir -p "$b" || die "cannot create $b"
	l="$b/deps"
	if [ -L "$l" ]; then
		[ "$(readlink "$l")" = "$PREFIX" ] || {
			ln -s "$PREFIX" "$l.tmp.$$" && mv -T "$l.tmp.$$" "$l"
		} || die "cannot relink $l"
	elif [ -e "$l" ]; then
		die "$l exists and is not a symlink; remove it"
	else
		ln -s "$PREFIX" "$l" || die "cannot create symlink $l"
	fi
	k="$b/deps.key"
	if [ ! -f "$k" ] || [ "$(cat "$k")" != "$KEY" ]; then
		{ echo "$KEY" >"$k.tmp.$$" && mv "$k.tmp.$$" "$k"; } || die "cannot write $k"
	fi
}

# --- main --------------------------------------------------------------------

usage() {
	echo "usage: $0 ensure BUILD_DIR | versions | prefix | key" >&2
	exit 2
}

[ $# -ge 1 ] || usage
case $1 in
ensure)
	[ $# -eq 2 ] || usage
	# made absolute now: building changes the working directory
	mkdir -p "$2" || die "cannot create $2"
	build_dir=$(cd "$2" && pwd) || die "cannot resolve $2"
	ensure_tools
	compute_key
	[ -e "$PREFIX/.complete" ] || build_all
	link_build_dir "$build_dir"
	;;
versions)
	[ $# -eq 1 ] || usage
	resolve_versions
	echo "$VERSIONS" | sed '/^$/d'
	;;
prefix)
	[ $# -eq 1 ] || usage
	compute_key
	echo "$PREFIX"
	;;
key)
	[ $# -eq 1 ] || usage
	compute_key
	echo "$KEY"
	;;
*) usage ;;
esac
