#!/bin/sh
# k8s-build.sh - build the upstream Kubernetes programs the real-control-plane
# tests run (kube-apiserver, kube-controller-manager, kubectl, etcd, kwok) from
# the Go modules pinned in tests/k8s/, and the peers bootccm is measured
# against (bench/peers/*/: one wrapper module each), into a cache outside the
# source tree.
#
#   scripts/k8s-build.sh [ensure]   build what the cache lacks, print one line
#                                   per binary ("k8s: NAME VERSION: build" or
#                                   "... cached"); copy kwok's Stage files and
#                                   the peers' upstream manifests
#   scripts/k8s-build.sh kubectl    print kubectl's path, built first if the
#                                   cache lacks it (ensure builds it first
#                                   too, under a lock of its own, so the
#                                   suites that only need kubectl wait for
#                                   it alone)
#   scripts/k8s-build.sh bindir     print the bin directory (does not build)
#   scripts/k8s-build.sh pin        print the pin (does not build)
#   scripts/k8s-build.sh peersdir   print the peers' directory (does not build)
#
# Cache: ${BOOTCCM_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bootccm/k8s}/<pin>/bin
# and <pin>/kwok-stages.
# The pin is the Kubernetes release plus a hash of tests/k8s/{go.mod,go.sum,
# tools.go}, tests/k8s/kwok/{go.mod,go.sum,tools.go}, the build recipe below
# (RECIPE: the go build flags) and the Go version, so moving any pinned
# version, a build flag or the toolchain builds a fresh directory, and an edit
# of this script elsewhere does not. The peers have a pin of their own beside
# it, the same hash over bench/peers/*/{go.mod,go.sum,tools.go}, RECIPE and
# the Go version:
# <cache>/peers/<hash>/bin/NAME and <cache>/peers/<hash>/manifests/NAME/.
# See docs/build.md.
#
# Environment: K8S_BUILD_NICE (19) is the niceness of every go build, so the
# build yields the CPU to whatever else the machine runs; K8S_BUILD_P (unset)
# is passed as go build -p to bound parallel compiles (and memory); GO is the
# go command (/usr/local/go/bin/go, else go on PATH).
set -eu

me=k8s
die() { echo "$me: error: $*" >&2; exit 1; }
say() { echo "$me: $*" >&2; }

self_dir=$(cd "$(dirname "$0")" && pwd) || die "cannot locate scripts directory"
top=$(cd "$self_dir/.." && pwd)
MOD="$top/tests/k8s"
KWOK_MOD="$MOD/kwok"
PEERS_MOD="$top/bench/peers"
# The peers, one line each: NAME (the binary), its wrapper module under
# PEERS_MOD, the module it pins, the main package, and the directory of that
# module whose manifests (RBAC, ConfigMap examples) are kept beside it.
PEERS="kube-vip-cloud-provider kube-vip github.com/kube-vip/kube-vip-cloud-provider github.com/kube-vip/kube-vip-cloud-provider manifest"

PATH="/usr/local/go/bin:$PATH"
export PATH
GO=${GO:-go}
command -v "$GO" >/dev/null 2>&1 || die "no go command (install Go at /usr/local/go)"

# The pinned go.sum is complete: builds never edit go.mod or go.sum, and the
# toolchain is the installed one, never a downloaded one.
export GOTOOLCHAIN=local
export GOFLAGS="-mod=readonly -buildvcs=false"
# Static binaries, like the release builds; no C toolchain involved.
export CGO_ENABLED=0
export LC_ALL=C

NICE=${K8S_BUILD_NICE:-19}
PFLAG=${K8S_BUILD_P:+-p $K8S_BUILD_P}

CACHE=${BOOTCCM_K8S_CACHE:-${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}/bootccm/k8s}
case $CACHE in /*) ;; *) CACHE="$PWD/$CACHE" ;; esac

# peer_files: the wrapper modules' pinned files, one path a line
peer_files() {
	echo "$PEERS" | while read -r _ sub _ _ _; do
		for f in go.mod go.sum tools.go; do echo "$PEERS_MOD/$sub/$f"; done
	done
}

for f in "$MOD/go.mod" "$MOD/go.sum" "$MOD/tools.go" \
	"$KWOK_MOD/go.mod" "$KWOK_MOD/go.sum" "$KWOK_MOD/tools.go" $(peer_files); do
	[ -r "$f" ] || die "cannot read $f"
done

# modver DIR MODULE: the version DIR's go.mod selects for MODULE.
modver() {
	(cd "$1" && "$GO" list -m -f '{{.Version}}' "$2") || die "cannot resolve $2 in $1"
}

KUBE_VERSION=$(modver "$MOD" k8s.io/kubernetes)
ETCD_VERSION=$(modver "$MOD" go.etcd.io/etcd/server/v3)
KWOK_VERSION=$(modver "$KWOK_MOD" sigs.k8s.io/kwok)
GO_VERSION=$("$GO" env GOVERSION)

# RECIPE: how every program is built, the part of this script the pins
# cover (build() and kube_ldflags() below must say what it says).
RECIPE="CGO_ENABLED=$CGO_ENABLED GOFLAGS=$GOFLAGS go build -trimpath -ldflags '-s -w'
kube: -X gitVersion gitMajor gitMinor gitCommit= gitTreeState=clean buildDate=<release time>
in k8s.io/component-base/version and k8s.io/client-go/pkg/version"

# hash FILE...: 12 hex digits of the files, RECIPE and the Go version
hash() {
	cat "$@" | { cat; echo "$RECIPE"; echo "$GO_VERSION"; } | sha256sum | cut -c1-12
}

pin() {
	echo "$KUBE_VERSION-$(hash "$MOD/go.mod" "$MOD/go.sum" "$MOD/tools.go" \
		"$KWOK_MOD/go.mod" "$KWOK_MOD/go.sum" "$KWOK_MOD/tools.go")"
}

PIN=$(pin)
DIR="$CACHE/$PIN"
BIN="$DIR/bin"
# shellcheck disable=SC2046 # one path a line, no spaces
PEERS_DIR="$CACHE/peers/$(hash $(peer_files))"

case ${1:-ensure} in
ensure | kubectl) ;;
bindir) echo "$BIN"; exit 0 ;;
pin) echo "$PIN"; exit 0 ;;
peersdir) echo "$PEERS_DIR"; exit 0 ;;
*) die "usage: $0 [ensure|kubectl|bindir|pin|peersdir]" ;;
esac

# Version stamps, as the release build (hack/lib/version.sh) sets them in both
# version packages. The module zip carries no git metadata: the commit is left
# empty rather than invented, the tree is clean (go.sum verifies the zip), and
# the build date is the release's time from the module proxy, so a rebuild of
# the same pin gives the same bytes.
kube_ldflags() {
	v=${KUBE_VERSION#v}
	major=${v%%.*}
	rest=${v#*.}
	minor=${rest%%.*}
	date=$(cd "$MOD" && "$GO" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes) \
		|| die "cannot read the release time of k8s.io/kubernetes"
	flags="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags="$flags -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major"
		flags="$flags -X $pkg.gitMinor=$minor -X $pkg.gitCommit="
		flags="$flags -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
	done
	echo "$flags"
}

# build NAME VERSION MODDIR PACKAGE LDFLAGS [BINDIR]
build() {
	name=$1 ver=$2 dir=$3 pkg=$4 ldflags=$5 out=${6:-$BIN}
	if [ -x "$out/$name" ]; then
		say "$name $ver: cached"
		return 0
	fi
	say "$name $ver: build"
	t0=$(date +%s)
	# shellcheck disable=SC2086 # PFLAG is empty or "-p N"
	(cd "$dir" && nice -n "$NICE" "$GO" build $PFLAG -trimpath -ldflags "$ldflags" \
		-o "$out/.$name.tmp" "$pkg") || { rm -f "$out/.$name.tmp"; die "$name $ver: go build $pkg failed"; }
	mv -f "$out/.$name.tmp" "$out/$name"
	say "$name $ver: built in $(($(date +%s) - t0)) s"
}

# copy_tree WHAT VERSION SRC DEST: SRC's copy at DEST (made whole, then
# moved into place), unless DEST exists
copy_tree() {
	if [ -d "$4" ]; then
		say "$1 $2: cached"
		return 0
	fi
	say "$1 $2: copy"
	rm -rf "$4.tmp"
	if ! { cp -R "$3" "$4.tmp" && chmod -R u+w "$4.tmp" && mv "$4.tmp" "$4"; }; then
		die "cannot copy $3"
	fi
}

# moddir MODDIR MODULE: where the module cache holds MODULE for MODDIR
moddir() {
	(cd "$1" && "$GO" list -m -f '{{.Dir}}' "$2") || die "cannot locate the $2 module"
}

# lock FILE FD: one build at a time of what FILE guards; a second caller
# waits and then finds the binaries. Every binary is moved into place only
# when complete, so an interrupted build resumes with the binaries it lacks.
lock() {
	command -v flock >/dev/null 2>&1 || return 0
	eval "exec $2>\"\$1\""
	flock "$2" || die "cannot lock $1"
}

mkdir -p "$BIN" || die "cannot create $BIN"
KUBE_LDFLAGS=$(kube_ldflags)

# kubectl first, under a lock of its own: the suites that run kubectl
# against the stand-ins wait for it alone, not for the whole build
lock "$DIR/.lock-kubectl" 7
build kubectl "$KUBE_VERSION" "$MOD" k8s.io/kubernetes/cmd/kubectl "$KUBE_LDFLAGS"
exec 7>&-
if [ "${1:-ensure}" = kubectl ]; then
	echo "$BIN/kubectl"
	exit 0
fi

lock "$DIR/.lock" 9
build kube-apiserver "$KUBE_VERSION" "$MOD" k8s.io/kubernetes/cmd/kube-apiserver "$KUBE_LDFLAGS"
build kube-controller-manager "$KUBE_VERSION" "$MOD" k8s.io/kubernetes/cmd/kube-controller-manager "$KUBE_LDFLAGS"
# The etcd server module's root package is etcd's main; built as a dependency
# it needs no main of ours (the etcd root module's replace directives make
# "go install go.etcd.io/etcd/v3" refuse).
build etcd "$ETCD_VERSION" "$MOD" go.etcd.io/etcd/server/v3 "-s -w"
build kwok "$KWOK_VERSION" "$KWOK_MOD" sigs.k8s.io/kwok/cmd/kwok "-s -w"

# kwok has no built-in stages ("no stages found" without --config): keep the
# release's own Stage files (node-initialize, heartbeats, pod lifecycles...)
# beside the binaries, <pin>/kwok-stages/{node,pod}/..., for the tests to
# pass (or adapt) with --config.
copy_tree "kwok stages" "$KWOK_VERSION" \
	"$(moddir "$KWOK_MOD" sigs.k8s.io/kwok)/kustomize/stage" "$DIR/kwok-stages"

# The peers, under a pin of their own (moving a peer leaves the upstream
# programs cached), with the same flags and niceness. Their upstream
# manifests (the RBAC they ship) are kept beside them for the tests.
mkdir -p "$PEERS_DIR/bin" "$PEERS_DIR/manifests" || die "cannot create $PEERS_DIR"
lock "$PEERS_DIR/.lock" 8
echo "$PEERS" | while read -r name sub module pkg manifests; do
	ver=$(modver "$PEERS_MOD/$sub" "$module")
	build "$name" "$ver" "$PEERS_MOD/$sub" "$pkg" "-s -w" "$PEERS_DIR/bin"
	copy_tree "$name manifests" "$ver" "$(moddir "$PEERS_MOD/$sub" "$module")/$manifests" \
		"$PEERS_DIR/manifests/$name"
done
