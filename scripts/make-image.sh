#!/bin/sh
# make-image.sh - build bootccm's container image as an OCI image layout
# archive, with no container engine: GNU tar, gzip, sha256sum, od and the
# other coreutils, printf, sh.
#
# usage: scripts/make-image.sh BINARY OUTPUT.tar [TAG]
# (`make image` runs it on build/bootccm: build/bootccm-image.tar, tag
# bootccm:<the Makefile's VERSION>)
#
# The image holds one file, the fully static BINARY at /usr/local/bin/bootccm
# (mode 0755, owner 0:0), which is also its entrypoint. The output is byte for
# byte the same for the same BINARY and TAG: fixed mtimes (SOURCE_DATE_EPOCH,
# default 0 = 1970-01-01), numeric owner 0:0, sorted entries, gzip -n.
#
# TAG is a tag ("v0.3.1") or a reference ("bootccm:v0.3.1",
# "registry.internal/bootccm:v0.3.1"); default bootccm:<version printed by
# BINARY --version>. index.json carries it as org.opencontainers.image.ref.name
# (what skopeo and umoci select by) and, normalized, as
# io.containerd.image.name (docker.io/library/bootccm:v0.3.1), the name
#   ctr -n k8s.io images import OUTPUT.tar
# registers and the kubelet looks up for "image: bootccm:v0.3.1".
#
# Environment: SOURCE_DATE_EPOCH (seconds; created time and file mtimes),
# IMAGE_ARCH (default: read from BINARY's ELF header; amd64 or arm64).
set -eu

PROG=make-image.sh

die() {
	printf '%s: error: %s\n' "$PROG" "$*" >&2
	exit 1
}

usage() {
	cat <<'EOF'
usage: scripts/make-image.sh BINARY OUTPUT.tar [TAG]

Writes an OCI image layout archive holding BINARY at /usr/local/bin/bootccm.
TAG: a tag or image reference (default bootccm:<BINARY --version>).
Import on a node: ctr -n k8s.io images import OUTPUT.tar
EOF
}

case ${1:-} in
-h | --help)
	usage
	exit 0
	;;
esac
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	usage >&2
	exit 2
fi

BINARY=$1
OUTPUT=$2
TAG=${3:-}

for tool in tar gzip sha256sum od; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed"
done
[ -f "$BINARY" ] || die "binary not found: $BINARY"
[ -r "$BINARY" ] || die "binary not readable: $BINARY"

EPOCH=${SOURCE_DATE_EPOCH:-0}
case $EPOCH in
'' | *[!0-9]*) die "SOURCE_DATE_EPOCH must be a number of seconds, not '$EPOCH'" ;;
esac

# od_u OFFSET COUNT: unsigned little-endian integer of COUNT (1, 2, 4 or 8)
# bytes at OFFSET of BINARY.
od_u() {
	od -An -t "u$2" -j "$1" -N "$2" --endian=little "$BINARY" | tr -d ' \n'
}

# ELF checks: a 64-bit little-endian ELF without a PT_INTERP program header,
# i.e. a static binary that runs in an image with nothing else in it.
magic=$(od -An -c -N 4 "$BINARY" | tr -d ' \n')
[ "$magic" = '177ELF' ] || die "$BINARY is not an ELF executable"
if [ "$(od_u 4 1)" != 2 ] || [ "$(od_u 5 1)" != 1 ]; then
	die "$BINARY is not a 64-bit little-endian ELF"
fi
machine=$(od_u 18 2)
case $machine in
62) elf_arch=amd64 ;;
183) elf_arch=arm64 ;;
*) elf_arch="" ;;
esac
phoff=$(od_u 32 8)
phentsize=$(od_u 54 2)
phnum=$(od_u 56 2)
i=0
while [ "$i" -lt "$phnum" ]; do
	if [ "$(od_u $((phoff + i * phentsize)) 4)" = 3 ]; then
		die "$BINARY is dynamically linked (it has an ELF interpreter); the image needs a fully static binary"
	fi
	i=$((i + 1))
done
ARCH=${IMAGE_ARCH:-$elf_arch}
[ -n "$ARCH" ] || die "unknown ELF machine $machine in $BINARY: set IMAGE_ARCH"

# version_of BIN: the first word of `BIN --version` that looks like a
# version, made a valid tag ([A-Za-z0-9_.-]).
version_of() {
	"$1" --version 2>/dev/null | awk '{
		for (i = 1; i <= NF; i++)
			if ($i ~ /^v?[0-9]+\.[0-9]+/) { print $i; exit }
	}' | tr -c 'A-Za-z0-9_.\n-' '-'
}

if [ -z "$TAG" ]; then
	ver=$(version_of "$BINARY") || ver=""
	[ -n "$ver" ] || die "cannot read a version from '$BINARY --version': give TAG"
	TAG="bootccm:$ver"
fi
# Characters of a reference; also keeps the JSON below free of escapes.
case $TAG in
'' | *[!A-Za-z0-9._:/@+-]*) die "TAG '$TAG' is not a valid image tag or reference" ;;
esac

# normalize_ref REF: the fully qualified name containerd and the kubelet use.
normalize_ref() {
	ref=$1
	case $ref in
	*/*)
		first=${ref%%/*}
		case $first in
		*.* | *:* | localhost) ;;
		*) ref="docker.io/$ref" ;;
		esac
		;;
	*) ref="docker.io/library/$ref" ;;
	esac
	case $ref in
	docker.io/*/*) ;;
	docker.io/*) ref="docker.io/library/${ref#docker.io/}" ;;
	esac
	last=${ref##*/}
	case $last in
	*:* | *@*) ;;
	*) ref="$ref:latest" ;;
	esac
	printf '%s\n' "$ref"
}

case $TAG in
*:* | */* | *@*) IMAGE_NAME=$(normalize_ref "$TAG") ;;
*) IMAGE_NAME=$(normalize_ref "bootccm:$TAG") ;;
esac

CREATED=$(date -u -d "@$EPOCH" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null) ||
	die "cannot format SOURCE_DATE_EPOCH=$EPOCH as a date"

work=$(mktemp -d "${TMPDIR:-/tmp}/make-image.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
umask 022

# Layer: usr/ usr/local/ usr/local/bin/ usr/local/bin/bootccm.
mkdir -p "$work/rootfs/usr/local/bin"
cp "$BINARY" "$work/rootfs/usr/local/bin/bootccm"
chmod 0755 "$work/rootfs/usr" "$work/rootfs/usr/local" \
	"$work/rootfs/usr/local/bin" "$work/rootfs/usr/local/bin/bootccm"
tar --create --file="$work/layer.tar" --directory="$work/rootfs" \
	--format=ustar --sort=name --mtime="@$EPOCH" \
	--owner=0 --group=0 --numeric-owner --no-acls --no-xattrs --no-selinux \
	usr
gzip -n -9 -c "$work/layer.tar" >"$work/layer.tar.gz"

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { wc -c <"$1" | tr -d ' '; }

mkdir -p "$work/oci/blobs/sha256"
# blob FILE: move FILE into blobs/ and print "DIGEST SIZE".
blob() {
	d=$(sha "$1")
	s=$(size "$1")
	mv "$1" "$work/oci/blobs/sha256/$d"
	printf '%s %s\n' "$d" "$s"
}

diff_id=$(sha "$work/layer.tar")
r=$(blob "$work/layer.tar.gz")
layer_digest=${r% *} layer_size=${r#* }

printf '{"architecture":"%s","config":{"Entrypoint":["/usr/local/bin/bootccm"],"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"User":"0:0","WorkingDir":"/"},"created":"%s","history":[{"created":"%s","created_by":"scripts/make-image.sh"}],"os":"linux","rootfs":{"diff_ids":["sha256:%s"],"type":"layers"}}' \
	"$ARCH" "$CREATED" "$CREATED" "$diff_id" >"$work/config.json"
r=$(blob "$work/config.json")
config_digest=${r% *} config_size=${r#* }

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
	"$config_digest" "$config_size" "$layer_digest" "$layer_size" >"$work/manifest.json"
r=$(blob "$work/manifest.json")
manifest_digest=${r% *} manifest_size=${r#* }

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"},"platform":{"architecture":"%s","os":"linux"}}]}' \
	"$manifest_digest" "$manifest_size" "$IMAGE_NAME" "$TAG" "$ARCH" >"$work/oci/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"

find "$work/oci" -type d -exec chmod 0755 {} +
find "$work/oci" -type f -exec chmod 0644 {} +
tar --create --file="$work/image.tar" --directory="$work/oci" \
	--format=ustar --sort=name --mtime="@$EPOCH" \
	--owner=0 --group=0 --numeric-owner --no-acls --no-xattrs --no-selinux \
	blobs index.json oci-layout
mv "$work/image.tar" "$OUTPUT"
printf '%s: wrote %s: %s (%s), manifest sha256:%s\n' \
	"$PROG" "$OUTPUT" "$TAG" "$IMAGE_NAME" "$manifest_digest"
