#!/bin/sh
# install-bootccm.sh - install bootccm as a static pod on a kubeadm
# control-plane node, before `kubeadm init` (preferred) or after it.
#
# Steps, each skipped with "unchanged" when already done (re-running changes
# nothing and says so):
#   0. with --image-archive, the image imported into containerd
#   1. the cluster CA /etc/kubernetes/pki/ca.{crt,key} exists; when it does
#      not, `kubeadm init phase certs ca` creates it (kubeadm init then uses it)
#   2. /etc/kubernetes/cloud-controller-manager.conf (0600): a client cert
#      CN=system:cloud-controller-manager signed by that CA, server
#      https://127.0.0.1:<bind-port>, tls-server-name kubernetes (kubeadm's
#      serving certificate has no 127.0.0.1); kept while it is valid for the
#      same CA and more than 30 days from expiry
#   3. /etc/kubernetes/bootccm/cloud-config.yaml (0600; {} when none is given)
#   4. the binary /usr/local/bin/bootccm (from --binary)
#   5. /etc/kubernetes/manifests/bootccm.yaml (0600)
#   6. RBAC (static-pod/rbac.yaml) with admin.conf once the API server
#      answers; before kubeadm init, or with --no-wait, this is left for a
#      later run and bootccm waits on 403s meanwhile
#
# Every check comes before the first change: the options (numbers parsed as
# strings against their bounds), every input file (a regular file that can be
# read), every target path, the tools, the binary (it must say it is bootccm)
# and the manifest's command line, checked by the binary against the files as
# they will be installed (`bootccm --validate`: the flags, the kubeconfig, the
# cloud config and the files it names relative to its installed directory;
# nothing started). Steps 0 to 5 then change the node one file at a time,
# each staged beside its target and renamed over it, and journaled: a failure
# halfway (a write, kubeadm, ctr, openssl, a signal) puts back exactly what
# was there (a replaced file is its previous self, with its mode, owner and
# times; a file or directory this run created is removed) and says what it
# restored. Step 6 comes after that point: its failure keeps the installation.
#
# Also fills the placeholders of the kubeadm templates: --render-kubeadm-config;
# and removes what the steps installed: --uninstall.
# Run with --help for the options.
set -eu
# byte-wise character classes and messages, whatever the caller's locale
LC_ALL=C
export LC_ALL

PROG=install-bootccm.sh
HERE=$(cd "$(dirname "$0")" && pwd)

usage() {
	cat <<'EOF'
usage: install-bootccm.sh [OPTION]...
       install-bootccm.sh --render-kubeadm-config TEMPLATE OUTPUT [--kubelet-flags FLAGS]

Install bootccm on this kubeadm control-plane node as a static pod: cluster
CA (created with kubeadm if missing), kubeconfig, cloud config, binary,
manifest, then RBAC once the API server answers. Safe to re-run.

  --binary PATH         install PATH as /usr/local/bin/bootccm
  --manifest KIND       static (image bootccm:VERSION, default), hostbinary
                        (pause image + the host's binary), or a manifest file
  --image REF           image for --manifest static (default bootccm:<version
                        of the binary>)
  --image-archive FILE  import FILE (scripts/make-image.sh output) into
                        containerd first (ctr -n k8s.io images import)
  --pause-image REF     image for --manifest hostbinary
                        (default registry.k8s.io/pause:3.10)
  --cloud-provider NAME a provider the bootccm binary has (default metadata);
                        checked by asking the binary (--binary, else the
                        installed one); without a binary only metadata
  --cloud-config FILE   install FILE as /etc/kubernetes/bootccm/cloud-config.yaml
  --extra-arg ARG       add ARG (e.g. --cluster-cidr=10.244.0.0/16 or
                        --metadata-cloud=openstack) to bootccm's command
                        line; repeatable; --metadata-* ones also apply to
                        the `bootccm metadata` run of --render-kubeadm-config
  --bind-port N         the local API server's port, 1..65535 (default 6443)
  --kubeadm-config FILE create a missing CA with
                        `kubeadm init phase certs ca --config FILE`
  --no-create-ca        never create a CA: fail if it is missing (a node that
                        joins a cluster: run this after kubeadm join)
  --cert-days N         validity of the client certificate in days,
                        1..36500 (default 365)
  --no-wait             do not wait for the API server; RBAC left for later
  --wait-timeout SECS   how long to wait for the API server, 0..86400
                        (default 300)
  --source DIR          where static-pod/ and kubeadm/ are (default: the
                        directory above this script)
  --root DIR            prefix every installed path with DIR
  --dry-run             print every action, change nothing (works without
                        kubeadm, kubectl or ctr: says what they would do)
  --uninstall           remove the manifest (the kubelet stops bootccm), the
                        kubeconfig, the cloud config, the binary and, once the
                        API server answers, the RBAC; the cluster CA stays
  -h, --help            this text

  --render-kubeadm-config TEMPLATE OUTPUT
                        fill ${NAME} placeholders of a kubeadm template:
                        ${BOOTCCM_NODE_IP}, ${BOOTCCM_PROVIDER_ID} and
                        ${BOOTCCM_NODE_LABELS} from the kubelet flags (an empty
                        one drops its kubelet argument), every other one from
                        the environment (unset is an error); OUTPUT mode 0600
  --server-tls-bootstrap
                        kubelet serving certificates from the cluster CA:
                        renders init.yaml's serverTLSBootstrap true and runs
                        bootccm with --controllers=*,csr-approver, which
                        approves them for the addresses it verified
  --kubelet-flags FLAGS the flags to use instead of running
                        `bootccm metadata --format=kubelet-flags`; each is
                        checked: --node-ip (one IPv4 and/or one IPv6
                        address), --provider-id (scheme://id),
                        --node-labels (key=value,... a kubelet may set)

Numbers are decimal, without a sign or leading zeros. Nothing is changed
before every check has passed; a failure while changing puts back what was
there before and says so.
EOF
}

die() {
	printf '%s: error: %s\n' "$PROG" "$*" >&2
	exit 1
}
say() { printf '%s: %s\n' "$PROG" "$*"; }
warn() { printf '%s: warning: %s\n' "$PROG" "$*" >&2; }

# ---- options ---------------------------------------------------------------

ROOT=
BIND_PORT=6443
CLOUD_PROVIDER=metadata
CLOUD_CONFIG=
BINARY=
MANIFEST=static
IMAGE=
IMAGE_ARCHIVE=
PAUSE_IMAGE=
EXTRA_ARGS=
KUBEADM_CONFIG=
CREATE_CA=1
CERT_DAYS=365
DRY_RUN=0
NO_WAIT=0
WAIT_TIMEOUT=300
SOURCE=
RENDER_IN=
RENDER_OUT=
SERVER_TLS_BOOTSTRAP=0
KUBELET_FLAGS=
KUBELET_FLAGS_SET=0
UNINSTALL=0

nl='
'

need_arg() {
	[ $# -ge 2 ] || die "$1 needs a value (see --help)"
}

while [ $# -gt 0 ]; do
	case $1 in
	--*=*)
		opt=${1%%=*}
		val=${1#*=}
		shift
		set -- "$opt" "$val" "$@"
		;;
	esac
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--root) need_arg "$@"; ROOT=$2; shift 2 ;;
	--bind-port) need_arg "$@"; BIND_PORT=$2; shift 2 ;;
	--cloud-provider) need_arg "$@"; CLOUD_PROVIDER=$2; shift 2 ;;
	--cloud-config) need_arg "$@"; CLOUD_CONFIG=$2; shift 2 ;;
	--binary) need_arg "$@"; BINARY=$2; shift 2 ;;
	--manifest) need_arg "$@"; MANIFEST=$2; shift 2 ;;
	--image) need_arg "$@"; IMAGE=$2; shift 2 ;;
	--image-archive) need_arg "$@"; IMAGE_ARCHIVE=$2; shift 2 ;;
	--pause-image) need_arg "$@"; PAUSE_IMAGE=$2; shift 2 ;;
	--extra-arg) need_arg "$@"; EXTRA_ARGS="$EXTRA_ARGS$2$nl"; shift 2 ;;
	--kubeadm-config) need_arg "$@"; KUBEADM_CONFIG=$2; shift 2 ;;
	--no-create-ca) CREATE_CA=0; shift ;;
	--server-tls-bootstrap) SERVER_TLS_BOOTSTRAP=1; shift ;;
	--cert-days) need_arg "$@"; CERT_DAYS=$2; shift 2 ;;
	--no-wait) NO_WAIT=1; shift ;;
	--wait-timeout) need_arg "$@"; WAIT_TIMEOUT=$2; shift 2 ;;
	--source) need_arg "$@"; SOURCE=$2; shift 2 ;;
	--dry-run) DRY_RUN=1; shift ;;
	--uninstall) UNINSTALL=1; shift ;;
	--render-kubeadm-config)
		[ $# -ge 3 ] || die "--render-kubeadm-config needs TEMPLATE and OUTPUT"
		RENDER_IN=$2
		RENDER_OUT=$3
		shift 3
		;;
	--kubelet-flags) need_arg "$@"; KUBELET_FLAGS=$2; KUBELET_FLAGS_SET=1; shift 2 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done

# uint_in VALUE MIN MAX: VALUE is a decimal number from MIN to MAX (each
# below 10^9). Checked as a string before any arithmetic, which would wrap
# past 2^63: digits only, no sign, no leading zero, at most 9 digits.
uint_in() {
	case $1 in
	'' | *[!0-9]* | 0?*) return 1 ;;
	esac
	[ "${#1}" -le 9 ] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]
}

# check_number OPTION VALUE MIN MAX WHAT: refuse VALUE unless uint_in.
check_number() {
	uint_in "$2" "$3" "$4" ||
		die "$1 must be $5 from $3 to $4 (decimal, no leading zeros), not '$2'"
}

check_number --bind-port "$BIND_PORT" 1 65535 "a port number"
# 100 years; openssl takes more, but a client certificate outliving its CA
# (kubeadm's is valid for 10 years) is refused by the API server anyway
check_number --cert-days "$CERT_DAYS" 1 36500 "a number of days"
check_number --wait-timeout "$WAIT_TIMEOUT" 0 86400 "a number of seconds"
case $CLOUD_PROVIDER in
'' | *[!a-z0-9-]*) die "--cloud-provider must be a provider name (lower-case letters, digits, '-'), not '$CLOUD_PROVIDER'" ;;
esac
for ref in "$IMAGE" "$PAUSE_IMAGE"; do
	case $ref in
	*[!A-Za-z0-9._:/@+-]*) die "'$ref' is not an image reference" ;;
	esac
done
# --server-tls-bootstrap: the kubelets' serving certificate requests need
# bootccm's approver; a --controllers of one's own must name it.
if [ "$SERVER_TLS_BOOTSTRAP" = 1 ]; then
	case $nl$EXTRA_ARGS in
	*"$nl--controllers="*)
		case $EXTRA_ARGS in
		*csr-approver*) ;;
		*) die "--server-tls-bootstrap needs csr-approver in --extra-arg --controllers=... (e.g. --controllers=*,csr-approver)" ;;
		esac ;;
	*) EXTRA_ARGS="$EXTRA_ARGS--controllers=*,csr-approver$nl" ;;
	esac
fi
set -f
old_ifs=$IFS
IFS=$nl
for a in $EXTRA_ARGS; do
	case $a in
	--*) ;;
	*) die "--extra-arg '$a' must be a flag starting with --" ;;
	esac
	case $a in
	*[\"\\]*) die "--extra-arg '$a' must not contain quotes or backslashes" ;;
	esac
done
IFS=$old_ifs
set +f

[ -n "$SOURCE" ] || SOURCE=$(cd "$HERE/.." && pwd)
if [ -n "$ROOT" ]; then
	[ -d "$ROOT" ] || die "--root $ROOT is not a directory"
	ROOT=$(cd "$ROOT" && pwd)
	[ "$ROOT" != / ] || ROOT=
fi
tab=$(printf '\t')
# The change journal holds paths a line each, fields split on tabs.
for p in "$ROOT" "$RENDER_OUT"; do
	case $p in
	*"$tab"* | *"$nl"*) die "'$p': a path with a tab or a line break is not supported" ;;
	esac
done

P_ETC=$ROOT/etc/kubernetes
P_PKI=$P_ETC/pki
P_KUBECONFIG=$P_ETC/cloud-controller-manager.conf
P_CLOUD_DIR=$P_ETC/bootccm
P_CLOUD_CONFIG=$P_CLOUD_DIR/cloud-config.yaml
P_MANIFESTS=$P_ETC/manifests
P_MANIFEST=$P_MANIFESTS/bootccm.yaml
P_ADMIN=$P_ETC/admin.conf
P_BIN=$ROOT/usr/local/bin/bootccm

CCM_USER=system:cloud-controller-manager
SERVER="https://127.0.0.1:$BIND_PORT"
TLS_SERVER_NAME=kubernetes
RENEW_BEFORE_S=2592000 # 30 days

WORK=$(mktemp -d "${TMPDIR:-/tmp}/install-bootccm.XXXXXX")
JOURNAL=$WORK/journal
CHANGING=0 # 1 from the first change until commit_changes: a failure rolls back
STEP=      # what is being changed, for the rollback's message
trap on_exit EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

CHANGES=0
# changed MESSAGE: record one change (or, in a dry run, one that would be made).
changed() {
	CHANGES=$((CHANGES + 1))
	STEP=$*
	if [ "$DRY_RUN" = 1 ]; then
		say "would $*"
	else
		say "$*"
	fi
}

need_tool() {
	command -v "$1" >/dev/null 2>&1 || die "$1 is not installed; it is needed to $2"
}

# have_tool TOOL WHY: in a dry run, a missing TOOL is said and the caller
# only reports what it would do (status 1); otherwise need_tool.
have_tool() {
	if [ "$DRY_RUN" = 1 ] && ! command -v "$1" >/dev/null 2>&1; then
		warn "$1 is not installed: it is needed to $2"
		return 1
	fi
	need_tool "$1" "$2"
}

file_mode() { stat -c %a "$1"; }

# ---- checks: nothing below changes anything ----------------------------------

# need_file PATH WHAT: PATH is a regular file (or a link to one) this user
# can read; a FIFO or a device would block or never end.
need_file() {
	if [ ! -e "$1" ]; then
		die "$2 not found: $1"
	elif [ ! -f "$1" ]; then
		die "$2 $1 is not a regular file"
	elif [ ! -r "$1" ]; then
		die "$2 $1 cannot be read"
	fi
}

# check_target PATH: PATH, which a step may replace, is absent or a regular
# file (a link to one is replaced by the file), and the nearest directory
# that exists on its way can be written (a read-only file system is not).
check_target() {
	if [ -e "$1" ] || [ -L "$1" ]; then
		[ -f "$1" ] || [ -L "$1" ] ||
			die "$1 is in the way: it is not a regular file (this would replace it)"
	fi
	check_dir "$(dirname "$1")"
}

# check_dir DIR: DIR is a directory, or can be made: its nearest existing
# ancestor is a directory that can be written.
check_dir() {
	d=$1
	while [ ! -d "$d" ]; do
		if [ -e "$d" ] || [ -L "$d" ]; then
			die "$d is in the way: it is not a directory"
		fi
		d=$(dirname "$d")
	done
	[ -w "$d" ] || die "$d cannot be written (a read-only file system?)"
}

# ---- changes: journaled, undone on a failure -----------------------------------

# The journal holds one undo action a line, OP<TAB>PATH[<TAB>ARG], undone
# last first: tmp (a staging file, removed), remove (a file this run made),
# restore (PATH's previous version, kept as the hard link ARG), mode (PATH's
# previous mode ARG), rmdir (a directory this run made), mtime (a directory's
# modification time, kept on the reference file ARG), image (a note).
journal() {
	printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >>"$JOURNAL"
}

begin_changes() {
	: >"$JOURNAL"
	GUARDED=
	GUARD_N=0
	CHANGING=1
}

# commit_changes: every change is in place; the kept versions go.
commit_changes() {
	while IFS=$tab read -r op path arg; do
		case $op in
		restore) rm -f "$arg" ;;
		esac
	done <"$JOURNAL"
	CHANGING=0
	: >"$JOURNAL"
}

# guard_dir DIR: DIR's modification time, kept once, before the run's first
# change inside it, so a rollback leaves DIR as it found it.
guard_dir() {
	case $nl$GUARDED in
	*"$nl$1$nl"*) return 0 ;;
	esac
	[ -d "$1" ] || return 0
	GUARD_N=$((GUARD_N + 1))
	ref=$WORK/mtime.$GUARD_N
	touch -r "$1" "$ref"
	journal mtime "$1" "$ref"
	GUARDED="$GUARDED$1$nl"
}

# missing_dirs DIR: MISSING becomes DIR and its ancestors that do not exist,
# the top one first, a line each; the nearest one that does is guarded.
missing_dirs() {
	d=$1
	MISSING=
	while [ ! -d "$d" ]; do
		MISSING="$d$nl$MISSING"
		d=$(dirname "$d")
	done
	guard_dir "$d"
}

# make_parents DIR: make DIR and its missing ancestors (mode from the
# umask), each journaled.
make_parents() {
	missing_dirs "$1"
	old_ifs=$IFS
	IFS=$nl
	set -f
	for m in $MISSING; do
		mkdir "$m"
		journal rmdir "$m"
	done
	set +f
	IFS=$old_ifs
}

# keep_path PATH: journal how to put PATH back: its present version kept as
# a hard link beside it (a copy where links cannot be made), or its removal.
keep_path() {
	if [ -e "$1" ] || [ -L "$1" ]; then
		bak=$(dirname "$1")/.$(basename "$1").bak.$$
		journal tmp "$bak"
		rm -f "$bak"
		ln -P "$1" "$bak" 2>/dev/null || cp -pP "$1" "$bak"
		journal restore "$1" "$bak"
	else
		journal remove "$1"
	fi
}

# expect_paths DIR FILE...: journal DIR/FILE..., which a command other than
# this script is about to create or replace (kubeadm), and the directories
# on the way to DIR it may make.
expect_paths() {
	ep_dir=$1
	shift
	missing_dirs "$ep_dir"
	old_ifs=$IFS
	IFS=$nl
	set -f
	for m in $MISSING; do
		journal rmdir "$m"
	done
	set +f
	IFS=$old_ifs
	guard_dir "$ep_dir"
	for f in "$@"; do
		keep_path "$ep_dir/$f"
	done
}

# write_file SRC DEST MODE: DEST becomes a copy of SRC with MODE, undoably:
# the copy is made as a temporary file beside DEST, whose dot name the
# kubelet's manifest watcher ignores; DEST's present version is kept as a
# hard link beside it (a copy where links cannot be made); the temporary
# file is renamed over DEST, so DEST is never missing or half written.
write_file() {
	dir=$(dirname "$2")
	make_parents "$dir"
	guard_dir "$dir"
	tmp=$dir/.$(basename "$2").tmp.$$
	journal tmp "$tmp"
	rm -f "$tmp"
	(umask 077 && cp "$1" "$tmp")
	chmod "$3" "$tmp"
	keep_path "$2"
	mv -f "$tmp" "$2"
}

# set_mode PATH MODE: chmod, undoably.
set_mode() {
	journal mode "$1" "$(file_mode "$1")"
	chmod "$2" "$1"
}

# put_file SRC DEST MODE WHAT: install SRC as DEST with MODE unless DEST
# already has the same bytes and mode.
put_file() {
	if [ -f "$2" ] && cmp -s "$1" "$2"; then
		if [ "$(file_mode "$2")" = "$3" ]; then
			say "unchanged: $4 ($2)"
			return 0
		fi
		changed "set mode $3 on $4 ($2)"
		[ "$DRY_RUN" = 1 ] || set_mode "$2" "$3"
		return 0
	fi
	if [ -e "$2" ]; then
		changed "update $4 ($2, mode $3)"
	else
		changed "install $4 ($2, mode $3)"
	fi
	[ "$DRY_RUN" = 1 ] || write_file "$1" "$2" "$3"
}

# make_dir DIR MODE: create DIR with MODE when missing (existing ones are the
# administrator's and are left as they are).
make_dir() {
	[ -d "$1" ] && return 0
	changed "create directory $1 (mode $2)"
	[ "$DRY_RUN" = 1 ] && return 0
	make_parents "$1"
	chmod "$2" "$1"
}

# rollback: undo the journal, last change first, saying what was restored;
# every action is tried, and one that fails is named with what is left.
rollback() {
	printf '%s: error: the installation stopped while it was changing this node (%s): putting back what was there before\n' \
		"$PROG" "${STEP:-starting}" >&2
	awk '{ line[NR] = $0 } END { for (i = NR; i > 0; i--) print line[i] }' \
		"$JOURNAL" >"$WORK/undo"
	left=0
	while IFS=$tab read -r op path arg; do
		case $op in
		tmp)
			rm -f "$path"
			;;
		remove)
			if [ -e "$path" ] || [ -L "$path" ]; then
				if rm -f "$path"; then
					warn "rollback: removed $path (it did not exist before)"
				else
					warn "rollback: could not remove $path (it did not exist before)"
					left=1
				fi
			fi
			;;
		restore)
			if [ "$(stat -c %d:%i "$arg")" = "$(stat -c %d:%i "$path" 2>/dev/null)" ]; then
				# the failure came before the new version replaced it
				rm -f "$arg"
				warn "rollback: $path is as it was (it had not been replaced yet)"
			elif mv -f "$arg" "$path"; then
				warn "rollback: restored $path (its previous contents, mode and owner)"
			else
				warn "rollback: could not restore $path: its previous version is $arg"
				left=1
			fi
			;;
		mode)
			if chmod "$arg" "$path"; then
				warn "rollback: restored mode $arg of $path"
			else
				warn "rollback: could not restore mode $arg of $path"
				left=1
			fi
			;;
		rmdir)
			[ -d "$path" ] || continue
			if rmdir "$path" 2>/dev/null; then
				warn "rollback: removed directory $path (it did not exist before)"
			else
				warn "rollback: kept directory $path: something else is in it now"
				left=1
			fi
			;;
		mtime)
			touch -m -r "$arg" "$path" 2>/dev/null || :
			;;
		image)
			warn "rollback: the image $path imported into containerd stays (not in use; remove it with: ctr -n k8s.io images rm $path)"
			;;
		esac
	done <"$WORK/undo"
	if [ "$left" = 0 ]; then
		warn "rollback: done: every file is as it was before this run"
	else
		warn "rollback: incomplete: see the lines above"
	fi
}

on_exit() {
	rc=$?
	set +e
	trap '' HUP INT TERM
	if [ "$CHANGING" = 1 ]; then
		[ "$rc" != 0 ] || rc=1
		rollback
	fi
	rm -rf "$WORK"
	exit "$rc"
}

# version_of BIN: first word of `BIN --version` that looks like a version,
# made a valid image tag.
version_of() {
	"$1" --version 2>/dev/null | awk '{
		for (i = 1; i <= NF; i++)
			if ($i ~ /^v?[0-9]+\.[0-9]+/) { print $i; exit }
	}' | tr -c 'A-Za-z0-9_.\n-' '-'
}

# normalize_ref REF: the fully qualified image name containerd stores.
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
	case ${ref##*/} in
	*:* | *@*) ;;
	*) ref="$ref:latest" ;;
	esac
	printf '%s\n' "$ref"
}

# kubeconfig_text [CA_DATA CERT_DATA KEY_DATA]: the kubeconfig step 2
# writes, with the CA and the client certificate and key (base64); without
# them, the same without credentials (what --validate is given before step 2).
kubeconfig_text() {
	printf 'apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n'
	[ -z "${1:-}" ] || printf '    certificate-authority-data: %s\n' "$1"
	cat <<-EOF
		    server: $SERVER
		    tls-server-name: $TLS_SERVER_NAME
		  name: kubernetes
		contexts:
		- context:
		    cluster: kubernetes
		    user: $CCM_USER
		  name: $CCM_USER@kubernetes
		current-context: $CCM_USER@kubernetes
		preferences: {}
		users:
		- name: $CCM_USER
	EOF
	if [ -n "${2:-}" ]; then
		printf '  user:\n    client-certificate-data: %s\n    client-key-data: %s\n' "$2" "$3"
	else
		printf '  user: {}\n'
	fi
}

# is_bootccm BIN: BIN runs and says it is bootccm.
is_bootccm() {
	[ -f "$1" ] && [ -x "$1" ] || return 1
	v=$("$1" --version 2>/dev/null | awk 'NR == 1') || v=
	case $v in
	"bootccm "*) return 0 ;;
	esac
	return 1
}

# check_binary: refuse a --binary that is not bootccm before it is installed
# as /usr/local/bin/bootccm, and a manifest that runs the host's binary when
# there is none.
check_binary() {
	if [ -z "$BINARY" ]; then
		if [ "$MANIFEST" = hostbinary ] && [ ! -f "$P_BIN" ]; then
			die "--manifest hostbinary runs $P_BIN, which is not installed: give --binary PATH"
		fi
		return 0
	fi
	[ -e "$BINARY" ] || die "bootccm binary not found: $BINARY"
	[ -f "$BINARY" ] || die "$BINARY is not a regular file: not a bootccm binary"
	[ -x "$BINARY" ] || die "$BINARY is not executable: not a bootccm binary"
	is_bootccm "$BINARY" ||
		die "$BINARY is not a bootccm binary ('$BINARY --version' does not say bootccm)"
	check_target "$P_BIN"
}

# swap_paths: stdin with the staging paths replaced by the ones the user
# knows: the staged cloud config by its source, the staging directory by
# the installed one.
swap_paths() {
	A=$CC_STAGED B=$CC_SHOWN C=$WORK/cc/ D=$P_CLOUD_DIR/ awk '
		function swap(s, from, to,    out, i) {
			out = ""
			while ((i = index(s, from)) > 0) {
				out = out substr(s, 1, i - 1) to
				s = substr(s, i + length(from))
			}
			return out s
		}
		{ print swap(swap($0, ENVIRON["A"], ENVIRON["B"]), ENVIRON["C"], ENVIRON["D"]) }'
}

# validate_command: the command line the manifest will run, checked by the
# binary itself before anything changes: `bootccm --validate` parses every
# flag, the kubeconfig step 2 will leave (one like it without credentials
# when the CA does not exist yet) and the cloud config as step 3 will
# install it, and starts nothing. The cloud config is looked at from a
# directory that mirrors the installed one, so the files it names relative
# to itself are those the pod will find.
validate_command() {
	bin=
	if [ -n "$BINARY" ]; then
		bin=$BINARY
	elif is_bootccm "$P_BIN"; then
		bin=$P_BIN
	fi
	if [ -z "$bin" ]; then
		warn "no bootccm binary here to check the command line with (give --binary PATH)"
		return 0
	fi
	kc=$KC_VALIDATE
	if [ -z "$kc" ]; then
		kubeconfig_text >"$WORK/validate.conf"
		kc=$WORK/validate.conf
	fi
	# the command's flags, one a line, as the manifest lists them
	awk '
		/^[ \t]*command:[ \t]*$/ { inside = 1; next }
		inside && /^[ \t]*#/ { next }
		inside && /^[ \t]*- / {
			a = $0; sub(/^[ \t]*- /, "", a); sub(/[ \t]+$/, "", a)
			if (a ~ /^".*"$/) a = substr(a, 2, length(a) - 2)
			if (a ~ /^--/) print a
			next
		}
		inside { exit }' "$WORK/bootccm.yaml" >"$WORK/validate.args"
	set --
	while IFS= read -r a; do
		case $a in
		--kubeconfig=*) a=--kubeconfig=$kc ;;
		--cloud-config=*) a=--cloud-config=$CC_STAGED ;;
		--node-name=*) continue ;;
		esac
		set -- "$@" "$a"
	done <"$WORK/validate.args"
	if ! "$bin" --validate "$@" >"$WORK/validate.out" 2>&1; then
		msg=$(awk '!/^Run / { print; exit }' "$WORK/validate.out" | swap_paths)
		die "bootccm refuses the command line the manifest would run: ${msg#bootccm: } (asked $bin --validate; files the cloud config names relative to itself are looked up in $P_CLOUD_DIR, where it is installed and which the pod mounts)"
	fi
}

# check_provider: refuse a --cloud-provider the binary does not have. bootccm
# checks its flags before anything else and exits 2 naming the known
# providers; `check-kubeconfig` does the same checks and, given a kubeconfig
# that does not exist, stops there without touching the network.
check_provider() {
	bin=
	if [ -n "$BINARY" ] && [ -x "$BINARY" ]; then
		bin=$BINARY
	elif [ -x "$P_BIN" ]; then
		bin=$P_BIN
	fi
	if [ -z "$bin" ]; then
		[ "$CLOUD_PROVIDER" = metadata ] ||
			die "--cloud-provider $CLOUD_PROVIDER: no bootccm binary to ask whether it has that provider (give --binary PATH); without one only 'metadata' is accepted"
		return 0
	fi
	rc=0
	msg=$("$bin" check-kubeconfig "--cloud-provider=$CLOUD_PROVIDER" \
		--kubeconfig="$WORK/no-kubeconfig" 2>&1 >/dev/null) || rc=$?
	if [ "$rc" = 2 ]; then
		msg=${msg%%"$nl"*}
		die "${msg#bootccm: } (asked $bin)"
	fi
}

# ---- kubelet flags -----------------------------------------------------------

# is_ipv4 S: S is a dotted-quad IPv4 address: four decimal octets 0..255,
# without leading zeros (which some parsers read as octal).
is_ipv4() {
	case $1 in
	'' | *[!0-9.]* | .* | *. | *..*) return 1 ;;
	esac
	ip4_ifs=$IFS
	IFS=.
	# shellcheck disable=SC2086 # split on dots; only digits and dots here
	set -- $1
	IFS=$ip4_ifs
	[ $# = 4 ] || return 1
	for ip4_o in "$@"; do
		case $ip4_o in
		0?* | ????*) return 1 ;;
		esac
		[ "$ip4_o" -le 255 ] || return 1
	done
}

# ipv6_groups S: print the eight 16-bit groups of IPv6 address S as decimal
# numbers, one line; status 1 when S is not an IPv6 address (RFC 4291 text
# forms: hex groups of 1 to 4 digits, at most one "::", an IPv4 address in
# the last 32 bits; no zone).
ipv6_groups() {
	ip6_a=$1
	case $ip6_a in
	'' | *[!0-9A-Fa-f:.]* | *:::* | *::*::*) return 1 ;;
	esac
	[ "${#ip6_a}" -le 45 ] || return 1
	ip6_tail=
	case $ip6_a in
	*.*)
		ip6_v4=${ip6_a##*:}
		[ "$ip6_v4" != "$ip6_a" ] && is_ipv4 "$ip6_v4" || return 1
		ip6_tail=$(printf '%s\n' "$ip6_v4" | awk -F. '{ print $1 * 256 + $2, $3 * 256 + $4 }')
		ip6_a=${ip6_a%:*}:
		case $ip6_a in
		*[!:]:) ip6_a=${ip6_a%:} ;;
		esac
		;;
	esac
	case $ip6_a in
	:[!:]* | *[!:]:) return 1 ;;
	esac
	printf '%s\n' "$ip6_a" | awk -v tail="$ip6_tail" '
		function group(g) {
			if (g !~ /^[0-9A-Fa-f]+$/ || length(g) > 4) exit 1
			return g
		}
		{
			want = tail == "" ? 8 : 6
			i = index($0, "::")
			if (i) { head = substr($0, 1, i - 1); rest = substr($0, i + 2) }
			else { head = $0; rest = "" }
			nh = head == "" ? 0 : split(head, h, ":")
			nr = rest == "" ? 0 : split(rest, r, ":")
			if (i ? nh + nr >= want : nh != want) exit 1
			out = ""
			for (k = 1; k <= nh; k++) out = out " " group(h[k])
			for (k = nh + nr; k < want; k++) out = out " 0"
			for (k = 1; k <= nr; k++) out = out " " group(r[k])
			n = split(out, g, " ")
			line = ""
			for (k = 1; k <= n; k++) {
				v = 0; s = tolower(g[k])
				for (j = 1; j <= length(s); j++) v = v * 16 + index("0123456789abcdef", substr(s, j, 1)) - 1
				line = line (k > 1 ? " " : "") v
			}
			if (tail != "") line = line " " tail
			print line
		}'
}

# for_each_item LIST FUNC: FUNC on each comma-separated element of LIST,
# stopping at the first that fails (NIP_WHY says why); an empty element fails.
for_each_item() {
	case $1 in
	'' | ,* | *, | *,,*) NIP_WHY="an empty element in '$1'"; return 1 ;;
	esac
	fe_func=$2
	fe_ifs=$IFS
	IFS=,
	set -f
	# shellcheck disable=SC2086 # split on commas
	set -- $1
	set +f
	IFS=$fe_ifs
	for fe_item in "$@"; do
		"$fe_func" "$fe_item" || return 1
	done
}

# check_node_ip VALUE: the kubelet's --node-ip: one address, or an IPv4 and
# an IPv6 one, comma-separated; unspecified (0.0.0.0, ::) alone only; never
# loopback, link-local or multicast, which the kubelet refuses.
check_node_ip() {
	nip_v4=0
	nip_v6=0
	nip_n=0
	nip_unspec=0
	for_each_item "$1" node_ip_item || return 1
	if [ "$nip_n" -gt 2 ] || [ "$nip_v4" -gt 1 ] || [ "$nip_v6" -gt 1 ]; then
		NIP_WHY="at most one IPv4 and one IPv6 address"
		return 1
	fi
	if [ "$nip_n" = 2 ] && [ "$nip_unspec" = 1 ]; then
		NIP_WHY="an unspecified address (0.0.0.0, ::) only alone"
		return 1
	fi
}

# node_ip_item ADDRESS: one address of --node-ip, counted by family.
node_ip_item() {
	nip_a=$1
	nip_n=$((nip_n + 1))
	if is_ipv4 "$nip_a"; then
		nip_v4=$((nip_v4 + 1))
		nip_first=${nip_a%%.*}
		nip_second=${nip_a#*.}
		nip_second=${nip_second%%.*}
		[ "$nip_a" != 0.0.0.0 ] || nip_unspec=1
		[ "$nip_first" != 127 ] || { NIP_WHY="'$nip_a' is a loopback address"; return 1; }
		[ "$nip_first" -lt 224 ] || [ "$nip_first" -gt 239 ] ||
			{ NIP_WHY="'$nip_a' is a multicast address"; return 1; }
		[ "$nip_first.$nip_second" != 169.254 ] ||
			{ NIP_WHY="'$nip_a' is a link-local address"; return 1; }
	elif nip_g=$(ipv6_groups "$nip_a"); then
		nip_v6=$((nip_v6 + 1))
		case $nip_g in
		"0 0 0 0 0 0 0 0") nip_unspec=1 ;;
		"0 0 0 0 0 0 0 1") NIP_WHY="'$nip_a' is a loopback address"; return 1 ;;
		esac
		nip_g1=${nip_g%% *}
		[ "$nip_g1" -lt 65280 ] || { NIP_WHY="'$nip_a' is a multicast address"; return 1; }
		[ "$nip_g1" -lt 65152 ] || [ "$nip_g1" -gt 65215 ] ||
			{ NIP_WHY="'$nip_a' is a link-local address"; return 1; }
	else
		NIP_WHY="'$nip_a' is not an IPv4 or IPv6 address"
		return 1
	fi
}

# is_label_name S: a label name, or a non-empty label value: at most 63
# of [-A-Za-z0-9_.], alphanumeric at both ends.
is_label_name() {
	case $1 in
	'' | *[!-A-Za-z0-9_.]* | [!A-Za-z0-9]* | *[!A-Za-z0-9]) return 1 ;;
	esac
	[ "${#1}" -le 63 ]
}

# is_dns_subdomain S: a DNS-1123 subdomain: at most 253 of [a-z0-9.-],
# dot-separated parts alphanumeric at both ends.
is_dns_subdomain() {
	case $1 in
	'' | *[!a-z0-9.-]* | [!a-z0-9]* | *[!a-z0-9] | *.[!a-z0-9]* | *[!a-z0-9].*) return 1 ;;
	esac
	[ "${#1}" -le 253 ]
}

# kubelet_may_set KEY: KEY is outside kubernetes.io and k8s.io, or one of
# the labels the kubelet sets on itself (it refuses to start on any other
# of theirs in --node-labels, and NodeRestriction would refuse them).
kubelet_may_set() {
	case ${1%/*} in
	*/* | "$1") return 0 ;;
	kubernetes.io | k8s.io | *.kubernetes.io | *.k8s.io) ;;
	*) return 0 ;;
	esac
	case $1 in
	kubernetes.io/hostname | kubernetes.io/os | kubernetes.io/arch | \
		beta.kubernetes.io/os | beta.kubernetes.io/arch | \
		topology.kubernetes.io/zone | topology.kubernetes.io/region | \
		failure-domain.beta.kubernetes.io/zone | failure-domain.beta.kubernetes.io/region | \
		node.kubernetes.io/instance-type | beta.kubernetes.io/instance-type | \
		kubelet.kubernetes.io/* | *.kubelet.kubernetes.io/* | \
		node.kubernetes.io/* | *.node.kubernetes.io/*)
		return 0 ;;
	esac
	return 1
}

# check_node_labels VALUE: key=value,... with Kubernetes label syntax
# (key: [DNS-1123 subdomain/]name; value: empty or a name), each key once,
# each one the kubelet may set.
check_node_labels() {
	lbl_seen=$nl
	for_each_item "$1" node_label_item
}

# node_label_item KEY=VALUE: one label of --node-labels.
node_label_item() {
	lbl=$1
	case $lbl in
	*=*) ;;
	*) NIP_WHY="'$lbl' is not key=value"; return 1 ;;
	esac
	lbl_k=${lbl%%=*}
	lbl_v=${lbl#*=}
	lbl_name=${lbl_k##*/}
	if [ "$lbl_name" != "$lbl_k" ]; then
		lbl_prefix=${lbl_k%/*}
		is_dns_subdomain "$lbl_prefix" ||
			{ NIP_WHY="label key '$lbl_k': the prefix is not a DNS subdomain (lower-case, at most 253)"; return 1; }
	fi
	is_label_name "$lbl_name" ||
		{ NIP_WHY="label key '$lbl_k': the name is not 1 to 63 of [-A-Za-z0-9_.], alphanumeric at both ends"; return 1; }
	[ -z "$lbl_v" ] || is_label_name "$lbl_v" ||
		{ NIP_WHY="label '$lbl_k': the value '$lbl_v' is not at most 63 of [-A-Za-z0-9_.], alphanumeric at both ends"; return 1; }
	kubelet_may_set "$lbl_k" ||
		{ NIP_WHY="label '$lbl_k' is under kubernetes.io or k8s.io and not one a kubelet may set on itself"; return 1; }
	case $lbl_seen in
	*"$nl$lbl_k$nl"*) NIP_WHY="label '$lbl_k' given twice"; return 1 ;;
	esac
	lbl_seen="$lbl_seen$lbl_k$nl"
}

# check_provider_id VALUE: scheme://id, as every cloud provider writes it
# (aws:///zone/i-0abc, hcloud://123, static://name): at most 511 bytes, a
# lower-case URI scheme, then printable ASCII without blanks, quotes,
# backslashes or glob characters.
check_provider_id() {
	[ "${#1}" -le 511 ] || { NIP_WHY="longer than 511 bytes"; return 1; }
	case $1 in
	[a-z]*://?*) ;;
	*) NIP_WHY="'$1' is not scheme://id"; return 1 ;;
	esac
	case ${1%%://*} in
	*[!a-z0-9+.-]*) NIP_WHY="'$1': the scheme is not [a-z][a-z0-9+.-]*"; return 1 ;;
	esac
	case ${1#*://} in
	*[!!-~]* | *[]\"\'\\\$\`*?[{}]*)
		NIP_WHY="'$1' has a blank, a quote, a backslash, a glob character or a byte outside printable ASCII"
		return 1 ;;
	esac
}

# check_kubelet_flags FLAGS FROM: refuse, naming the flag and its value, a
# kubelet flag whose value the kubelet would refuse or that would render
# into a broken kubeadm configuration; each flag at most once.
check_kubelet_flags() {
	kf_seen=$nl
	set -f
	for f in $1; do
		case $f in
		--node-ip=* | --provider-id=* | --node-labels=*) ;;
		*) continue ;;
		esac
		kf_name=${f%%=*}
		kf_val=${f#*=}
		case $kf_seen in
		*"$nl$kf_name$nl"*) die "$2: $kf_name is given twice" ;;
		esac
		kf_seen="$kf_seen$kf_name$nl"
		[ -n "$kf_val" ] || continue
		NIP_WHY=
		case $kf_name in
		--node-ip) check_node_ip "$kf_val" || die "$2: $f: $NIP_WHY" ;;
		--provider-id) check_provider_id "$kf_val" || die "$2: $f: $NIP_WHY" ;;
		--node-labels) check_node_labels "$kf_val" || die "$2: $f: $NIP_WHY" ;;
		esac
	done
	set +f
}

# ---- --render-kubeadm-config -------------------------------------------------

render_kubeadm_config() {
	need_file "$RENDER_IN" "kubeadm template"
	check_target "$RENDER_OUT"
	from="--kubelet-flags"
	if [ "$KUBELET_FLAGS_SET" = 0 ]; then
		bin=$BINARY
		[ -n "$bin" ] || bin=$P_BIN
		[ -x "$bin" ] || bin=$(command -v bootccm 2>/dev/null) ||
			die "no bootccm binary to run 'bootccm metadata' (give --binary PATH or --kubelet-flags FLAGS)"
		# The --metadata-* flags given for the manifest (an unusual cloud or
		# endpoint) apply to this lookup too.
		md_args=
		set -f
		old_ifs=$IFS
		IFS=$nl
		for a in $EXTRA_ARGS; do
			case $a in
			--metadata-*) md_args="$md_args$a$nl" ;;
			esac
		done
		# shellcheck disable=SC2086 # split on line breaks only
		KUBELET_FLAGS=$("$bin" metadata $md_args --format=kubelet-flags) ||
			die "'$bin metadata $(printf '%s' "$md_args" | tr '\n' ' ')--format=kubelet-flags' failed: the node's facts are unknown"
		IFS=$old_ifs
		set +f
		from="'$bin metadata --format=kubelet-flags' printed"
	fi
	check_kubelet_flags "$KUBELET_FLAGS" "$from"
	BOOTCCM_NODE_IP=
	BOOTCCM_PROVIDER_ID=
	BOOTCCM_NODE_LABELS=
	set -f
	for f in $KUBELET_FLAGS; do
		case $f in
		--node-ip=*) BOOTCCM_NODE_IP=${f#*=} ;;
		--provider-id=*) BOOTCCM_PROVIDER_ID=${f#*=} ;;
		--node-labels=*) BOOTCCM_NODE_LABELS=${f#*=} ;;
		*) warn "kubelet flag '$f' has no place in the kubeadm template; ignored" ;;
		esac
	done
	set +f
	[ -n "$BOOTCCM_NODE_IP" ] ||
		warn "no --node-ip in the kubelet flags: the kubelet registers without addresses until bootccm initializes the node"
	BOOTCCM_SERVER_TLS_BOOTSTRAP=false
	[ "$SERVER_TLS_BOOTSTRAP" = 1 ] && BOOTCCM_SERVER_TLS_BOOTSTRAP=true
	export BOOTCCM_NODE_IP BOOTCCM_PROVIDER_ID BOOTCCM_NODE_LABELS BOOTCCM_SERVER_TLS_BOOTSTRAP
	# ${NAME} -> its value (comment lines are copied as they are). A BOOTCCM_* placeholder that is empty, alone on a
	# `value:` line right after `- name:`, drops that argument (both lines).
	# Values go inside YAML double quotes, so quotes, backslashes and line
	# breaks are refused.
	if ! awk '
		function fail(msg) { print msg > "/dev/stderr"; bad = 1 }
		{
			line = $0; out = ""; drop = 0
			if (line ~ /^[ \t]*#/) line = ""
			while (match(line, /\$\{[A-Za-z_][A-Za-z0-9_]*\}/)) {
				name = substr(line, RSTART + 2, RLENGTH - 3)
				if (!(name in ENVIRON)) { missing[name] = 1; val = "" }
				else val = ENVIRON[name]
				if (val ~ /["\\\n]/) fail("value of " name " contains a quote, backslash or line break")
				if (val == "" && name ~ /^BOOTCCM_/ && $0 ~ /^[ \t]*value:[ \t]*"\$\{[A-Z_]+\}"[ \t]*$/ && held ~ /^[ \t]*- name:/)
					drop = 1
				out = out substr(line, 1, RSTART - 1) val
				line = substr(line, RSTART + RLENGTH)
			}
			out = ($0 ~ /^[ \t]*#/) ? $0 : out line
			if (drop) { have = 0; next }
			if (have) print held
			held = out; have = 1
		}
		END {
			if (have) print held
			n = 0
			for (m in missing) { list = list " " m; n++ }
			if (n) fail("unset placeholder(s):" list " (export them before rendering)")
			exit bad
		}' "$RENDER_IN" >"$WORK/rendered.yaml"; then
		die "cannot render $RENDER_IN"
	fi
	if [ "$DRY_RUN" = 1 ]; then
		say "would write $RENDER_OUT (mode 0600):"
		cat "$WORK/rendered.yaml"
		return 0
	fi
	begin_changes
	put_file "$WORK/rendered.yaml" "$RENDER_OUT" 600 "kubeadm configuration"
	commit_changes
}

if [ -n "$RENDER_IN" ]; then
	render_kubeadm_config
	exit 0
fi

# ---- 0. image archive -------------------------------------------------------

IMAGE_ACTION=none # none, unknown (no ctr, dry run), keep, import
check_image() {
	[ -n "$IMAGE_ARCHIVE" ] || return 0
	need_file "$IMAGE_ARCHIVE" "image archive"
	[ -s "$IMAGE_ARCHIVE" ] || die "image archive $IMAGE_ARCHIVE is empty"
	dd if="$IMAGE_ARCHIVE" of=/dev/null bs=512 count=1 2>/dev/null ||
		die "image archive $IMAGE_ARCHIVE cannot be read"
	if ! have_tool ctr "import $IMAGE_ARCHIVE into containerd"; then
		IMAGE_ACTION=unknown
		return 0
	fi
	IMAGE_NAME=$(normalize_ref "$IMAGE")
	if ctr -n k8s.io images ls -q "name==$IMAGE_NAME" 2>/dev/null | grep -qFx "$IMAGE_NAME"; then
		IMAGE_ACTION=keep
	else
		IMAGE_ACTION=import
	fi
}

# ensure_image: first of the changes, so a failed import leaves every file
# as it was.
ensure_image() {
	case $IMAGE_ACTION in
	none) return 0 ;;
	keep)
		say "unchanged: image $IMAGE_NAME is in containerd"
		return 0
		;;
	esac
	changed "import $IMAGE_ARCHIVE into containerd (ctr -n k8s.io images import)"
	[ "$DRY_RUN" = 0 ] && [ "$IMAGE_ACTION" = import ] || return 0
	ctr -n k8s.io images import "$IMAGE_ARCHIVE" ||
		die "ctr -n k8s.io images import $IMAGE_ARCHIVE failed"
	journal image "$IMAGE_NAME"
	ctr -n k8s.io images ls -q "name==$IMAGE_NAME" 2>/dev/null | grep -qFx "$IMAGE_NAME" ||
		die "$IMAGE_ARCHIVE does not hold $IMAGE_NAME (make it with scripts/make-image.sh BINARY OUT.tar $IMAGE)"
}

# ---- 1. cluster CA ----------------------------------------------------------

CA_STATE=present # present, or create (with kubeadm)
check_ca() {
	if [ -f "$P_PKI/ca.crt" ] && [ -f "$P_PKI/ca.key" ]; then
		return 0
	fi
	if [ -f "$P_PKI/ca.crt" ]; then
		die "$P_PKI/ca.crt exists but $P_PKI/ca.key does not: the client certificate cannot be signed here; copy ca.key from the first control-plane node or run this there"
	fi
	if [ "$CREATE_CA" = 0 ]; then
		die "no cluster CA at $P_PKI/ca.crt (--no-create-ca): on a node joining a cluster, run this after 'kubeadm join --control-plane'"
	fi
	if [ "$DRY_RUN" = 1 ] && ! command -v kubeadm >/dev/null 2>&1; then
		warn "kubeadm is not installed: it is needed to create the cluster CA (or run this after 'kubeadm init')"
	else
		command -v kubeadm >/dev/null 2>&1 ||
			die "no cluster CA at $P_PKI/ca.crt and kubeadm is not installed to create one: install kubeadm, or run this after 'kubeadm init'"
	fi
	[ -z "$KUBEADM_CONFIG" ] || need_file "$KUBEADM_CONFIG" "kubeadm configuration"
	check_target "$P_PKI/ca.crt"
	check_target "$P_PKI/ca.key"
	CA_STATE=create
}

ensure_ca() {
	if [ "$CA_STATE" = present ]; then
		say "unchanged: cluster CA ($P_PKI/ca.crt)"
		return 0
	fi
	if [ -n "$KUBEADM_CONFIG" ]; then
		set -- kubeadm init phase certs ca --config "$KUBEADM_CONFIG"
	else
		set -- kubeadm init phase certs ca --cert-dir "$P_PKI"
	fi
	warn "creating a new cluster CA: right only on the first control-plane node, before 'kubeadm init'"
	changed "create the cluster CA: $*"
	[ "$DRY_RUN" = 0 ] || return 0
	expect_paths "$P_PKI" ca.crt ca.key
	"$@" || die "'$*' failed"
	if [ ! -f "$P_PKI/ca.crt" ] || [ ! -f "$P_PKI/ca.key" ]; then
		die "'$*' did not create $P_PKI/ca.crt and ca.key (certificatesDir in $KUBEADM_CONFIG?)"
	fi
}

# ---- 2. kubeconfig ----------------------------------------------------------

# kc_field NAME FILE: value of the first "NAME: value" line, quotes removed.
kc_field() {
	awk -v k="$1:" '$1 == k { v = $2; gsub(/^["'\'']|["'\'']$/, "", v); print v; exit }' "$2"
}

# kubeconfig_problem: print why the existing kubeconfig must be replaced;
# print nothing when it is fine.
kubeconfig_problem() {
	kc=$P_KUBECONFIG
	[ -f "$kc" ] || {
		echo "it does not exist"
		return 0
	}
	v=$(kc_field server "$kc")
	[ "$v" = "$SERVER" ] || {
		echo "its server is '$v', not $SERVER"
		return 0
	}
	v=$(kc_field tls-server-name "$kc")
	[ "$v" = "$TLS_SERVER_NAME" ] || {
		echo "its tls-server-name is '$v', not $TLS_SERVER_NAME"
		return 0
	}
	kc_field certificate-authority-data "$kc" | base64 -d >"$WORK/kc-ca.crt" 2>/dev/null || :
	kc_field client-certificate-data "$kc" | base64 -d >"$WORK/kc.crt" 2>/dev/null || :
	kc_field client-key-data "$kc" | base64 -d >"$WORK/kc.key" 2>/dev/null || :
	a=$(openssl x509 -noout -fingerprint -sha256 -in "$WORK/kc-ca.crt" 2>/dev/null) || a=none
	b=$(openssl x509 -noout -fingerprint -sha256 -in "$P_PKI/ca.crt")
	[ "$a" = "$b" ] || {
		echo "its certificate-authority-data is not $P_PKI/ca.crt"
		return 0
	}
	subj=$(openssl x509 -noout -subject -nameopt RFC2253 -in "$WORK/kc.crt" 2>/dev/null) || subj=none
	[ "$subj" = "subject=CN=$CCM_USER" ] || {
		echo "its client certificate is not for CN=$CCM_USER ($subj)"
		return 0
	}
	openssl verify -CAfile "$P_PKI/ca.crt" -purpose sslclient "$WORK/kc.crt" >/dev/null 2>&1 || {
		echo "its client certificate is not valid for client auth under $P_PKI/ca.crt"
		return 0
	}
	openssl x509 -noout -checkend "$RENEW_BEFORE_S" -in "$WORK/kc.crt" >/dev/null 2>&1 || {
		echo "its client certificate expires within 30 days"
		return 0
	}
	a=$(openssl x509 -noout -pubkey -in "$WORK/kc.crt" 2>/dev/null) || a=none
	b=$(openssl pkey -pubout -in "$WORK/kc.key" 2>/dev/null) || b=other
	[ "$a" = "$b" ] || {
		echo "its client key does not match its certificate"
		return 0
	}
}

# make_kubeconfig: a new key, its certificate signed by the cluster CA and
# the kubeconfig holding them, in $WORK/cert/kubeconfig (nothing installed).
make_kubeconfig() {
	d=$WORK/cert
	mkdir -p "$d"
	openssl genrsa -traditional -out "$d/key" 2048 2>/dev/null ||
		openssl genrsa -out "$d/key" 2048 2>/dev/null ||
		die "openssl could not generate a key"
	openssl req -new -key "$d/key" -subj "/CN=$CCM_USER" -out "$d/csr" ||
		die "openssl could not make the certificate request"
	cat >"$d/ext" <<-EOT
		[v3]
		basicConstraints = critical, CA:FALSE
		keyUsage = critical, digitalSignature, keyEncipherment
		extendedKeyUsage = clientAuth
		authorityKeyIdentifier = keyid
	EOT
	serial=0x$(openssl rand -hex 16)
	openssl x509 -req -in "$d/csr" -CA "$P_PKI/ca.crt" -CAkey "$P_PKI/ca.key" \
		-set_serial "$serial" -days "$CERT_DAYS" -sha256 \
		-extfile "$d/ext" -extensions v3 -out "$d/crt" 2>/dev/null ||
		die "openssl could not sign the client certificate with $P_PKI/ca.key"
	# CERT_DAYS <= 36500: the product fits any shell's arithmetic
	openssl x509 -noout -checkend $((CERT_DAYS * 86400)) -in "$P_PKI/ca.crt" >/dev/null 2>&1 ||
		warn "the client certificate (--cert-days $CERT_DAYS) outlives the cluster CA $P_PKI/ca.crt: it stops working when the CA expires"
	ca_data=$(base64 -w0 <"$P_PKI/ca.crt")
	crt_data=$(base64 -w0 <"$d/crt")
	key_data=$(base64 -w0 <"$d/key")
	(umask 077 && kubeconfig_text "$ca_data" "$crt_data" "$key_data" >"$d/kubeconfig")
}

KC_ACTION=   # keep, new, create (after the CA), unknown (no tools, dry run)
KC_VALIDATE= # the kubeconfig --validate is given ("": one without credentials)
check_kubeconfig() {
	check_target "$P_KUBECONFIG"
	# replacing it keeps the present one as .old
	[ ! -f "$P_KUBECONFIG" ] || check_target "$P_KUBECONFIG.old"
	if [ "$CA_STATE" = create ]; then
		KC_ACTION=create
		if [ "$DRY_RUN" = 0 ]; then
			need_tool openssl "make the kubeconfig's client certificate"
			need_tool base64 "embed the certificates in the kubeconfig"
		fi
		return 0
	fi
	if ! have_tool openssl "make the kubeconfig's client certificate" ||
		! have_tool base64 "embed the certificates in the kubeconfig"; then
		KC_ACTION=unknown
		return 0
	fi
	KC_PROBLEM=$(kubeconfig_problem)
	if [ -z "$KC_PROBLEM" ]; then
		KC_ACTION=keep
		KC_VALIDATE=$P_KUBECONFIG
		return 0
	fi
	# signed now: a CA key openssl cannot use stops the run before a change
	make_kubeconfig
	KC_ACTION=new
	KC_VALIDATE=$WORK/cert/kubeconfig
}

ensure_kubeconfig() {
	case $KC_ACTION in
	unknown)
		changed "create or check $P_KUBECONFIG (mode 600) for $CCM_USER, server $SERVER"
		return 0
		;;
	keep)
		if [ "$(file_mode "$P_KUBECONFIG")" = 600 ]; then
			say "unchanged: kubeconfig for $CCM_USER ($P_KUBECONFIG)"
		else
			changed "set mode 600 on $P_KUBECONFIG"
			[ "$DRY_RUN" = 1 ] || set_mode "$P_KUBECONFIG" 600
		fi
		return 0
		;;
	create)
		if [ "$DRY_RUN" = 1 ]; then
			changed "create $P_KUBECONFIG (mode 600) for $CCM_USER, server $SERVER, once the CA exists"
			return 0
		fi
		if [ -f "$P_KUBECONFIG" ]; then
			changed "replace $P_KUBECONFIG: the cluster CA is new"
		else
			changed "create $P_KUBECONFIG (mode 600) for $CCM_USER, server $SERVER"
		fi
		make_kubeconfig
		;;
	new)
		if [ -f "$P_KUBECONFIG" ]; then
			changed "replace $P_KUBECONFIG: $KC_PROBLEM"
		else
			changed "create $P_KUBECONFIG (mode 600) for $CCM_USER, server $SERVER"
		fi
		[ "$DRY_RUN" = 0 ] || return 0
		;;
	esac
	if [ -f "$P_KUBECONFIG" ]; then
		write_file "$P_KUBECONFIG" "$P_KUBECONFIG.old" 600
		say "previous kubeconfig kept as $P_KUBECONFIG.old"
	fi
	write_file "$WORK/cert/kubeconfig" "$P_KUBECONFIG" 600
}

# ---- 3. cloud config --------------------------------------------------------

# check_cloud_config: the cloud config as step 3 will leave it, staged as
# $CC_STAGED (what --validate reads and step 3 installs) in a directory that
# links to everything else in the installed one: files it names relative to
# itself (the static provider's inventory, hcloud's tokenFile) resolve as
# they will once it is installed, not beside its source. CC_SHOWN is the
# path messages name.
CLOUD_CONFIG_MAX=1048576 # bytes: bootccm's own cap (CLOUDCONFIG_FILE_MAX)
check_cloud_config() {
	if [ -n "$CLOUD_CONFIG" ]; then
		need_file "$CLOUD_CONFIG" "cloud config"
		[ "$(stat -L -c %s "$CLOUD_CONFIG")" -le "$CLOUD_CONFIG_MAX" ] ||
			die "cloud config $CLOUD_CONFIG is larger than $CLOUD_CONFIG_MAX bytes, which bootccm refuses"
	fi
	check_target "$P_CLOUD_CONFIG"
	mkdir "$WORK/cc"
	CC_STAGED=$WORK/cc/cloud-config.yaml
	if [ -n "$CLOUD_CONFIG" ]; then
		cp "$CLOUD_CONFIG" "$CC_STAGED"
		CC_SHOWN=$CLOUD_CONFIG
	elif [ -f "$P_CLOUD_CONFIG" ]; then
		cp "$P_CLOUD_CONFIG" "$CC_STAGED"
		CC_SHOWN=$P_CLOUD_CONFIG
	else
		# The static pod mounts this path with hostPath type File, so it must exist.
		printf '# bootccm cloud config: none given, the provider defaults apply.\n{}\n' >"$CC_STAGED"
		CC_SHOWN=$P_CLOUD_CONFIG
	fi
	for f in "$P_CLOUD_DIR"/* "$P_CLOUD_DIR"/.[!.]* "$P_CLOUD_DIR"/..?*; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		[ "$f" != "$P_CLOUD_CONFIG" ] || continue
		ln -s "$f" "$WORK/cc/${f##*/}"
	done
}

ensure_cloud_config() {
	make_dir "$P_CLOUD_DIR" 700
	if [ -n "$CLOUD_CONFIG" ]; then
		put_file "$CC_STAGED" "$P_CLOUD_CONFIG" 600 "cloud config"
	elif [ -f "$P_CLOUD_CONFIG" ]; then
		say "unchanged: cloud config ($P_CLOUD_CONFIG)"
	else
		put_file "$CC_STAGED" "$P_CLOUD_CONFIG" 600 "empty cloud config"
	fi
}

# ---- 4. binary --------------------------------------------------------------

ensure_binary() {
	if [ -n "$BINARY" ]; then
		put_file "$BINARY" "$P_BIN" 755 "bootccm binary"
	elif [ -f "$P_BIN" ]; then
		say "unchanged: bootccm binary ($P_BIN)"
	else
		warn "no --binary: $P_BIN is not installed (the image has its own; 'bootccm metadata' on the host needs it)"
	fi
}

# ---- 5. manifest ------------------------------------------------------------

# render_manifest SRC OUT: the manifest with this installation's image,
# provider and extra flags.
render_manifest() {
	awk -v provider="$CLOUD_PROVIDER" -v image="$IMAGE" -v pause="$PAUSE_IMAGE" \
		-v extra="$EXTRA_ARGS" '
		/^[ \t]*- --cloud-provider=/ { sub(/=.*/, "=" provider) }
		/^[ \t]*image: bootccm:VERSION[ \t]*$/ && image != "" { sub(/bootccm:VERSION/, image) }
		/^[ \t]*image: registry\.k8s\.io\/pause:/ && pause != "" { sub(/registry\.k8s\.io\/pause:[^ \t]*/, pause) }
		{ print }
		/^[ \t]*- --node-name=\$\(NODE_NAME\)[ \t]*$/ {
			indent = $0; sub(/-.*/, "", indent)
			n = split(extra, a, "\n")
			for (i = 1; i <= n; i++) if (a[i] != "") print indent "- \"" a[i] "\""
		}' "$1" >"$2"
}

# resolve_image: the image the manifest runs, when its template names the
# placeholder bootccm:VERSION: --image, else bootccm:<the binary's version>.
resolve_image() {
	case $MANIFEST in
	static) MANIFEST_SRC=$SOURCE/static-pod/bootccm.yaml ;;
	hostbinary) MANIFEST_SRC=$SOURCE/static-pod/bootccm-hostbinary.yaml ;;
	*/*) MANIFEST_SRC=$MANIFEST ;;
	*) die "--manifest must be static, hostbinary or a file path, not '$MANIFEST'" ;;
	esac
	[ -e "$MANIFEST_SRC" ] || die "manifest template not found: $MANIFEST_SRC (--source DIR?)"
	need_file "$MANIFEST_SRC" "manifest template"
	if ! grep -q 'image: bootccm:VERSION' "$MANIFEST_SRC"; then
		[ -z "$IMAGE_ARCHIVE" ] ||
			die "--image-archive is for a manifest that runs the bootccm image (--manifest static)"
		return 0
	fi
	[ -z "$IMAGE" ] || return 0
	bin=$P_BIN
	[ -z "$BINARY" ] || bin=$BINARY
	[ -x "$bin" ] ||
		die "the image tag comes from 'bootccm --version', but there is no binary to ask: give --image REF or --binary PATH"
	ver=$(version_of "$bin") || ver=
	[ -n "$ver" ] || die "cannot read a version from '$bin --version': give --image REF"
	IMAGE=bootccm:$ver
}

# check_manifest: the manifest rendered into $WORK/bootccm.yaml, and the
# template checked to have the lines it needs.
check_manifest() {
	src=$MANIFEST_SRC
	check_target "$P_MANIFEST"
	render_manifest "$src" "$WORK/bootccm.yaml"
	grep -q -- "- --cloud-provider=$CLOUD_PROVIDER\$" "$WORK/bootccm.yaml" ||
		die "$src has no '- --cloud-provider=' line to set"
	! grep -q 'image: bootccm:VERSION' "$WORK/bootccm.yaml" ||
		die "$src still names the placeholder image bootccm:VERSION"
	# shellcheck disable=SC2016 # $(NODE_NAME) is the kubelet's, literally.
	if [ -n "$EXTRA_ARGS" ] && ! grep -q -- '- --node-name=$(NODE_NAME)' "$src"; then
		die "$src has no '- --node-name=\$(NODE_NAME)' line to add --extra-arg flags after"
	fi
}

ensure_manifest() {
	# The kubelet's manifest directory: 0700, as kubeadm makes it.
	make_dir "$P_MANIFESTS" 700
	put_file "$WORK/bootccm.yaml" "$P_MANIFEST" 600 "static pod manifest"
}

# ---- 6. RBAC ----------------------------------------------------------------

check_rbac() {
	need_file "$SOURCE/static-pod/rbac.yaml" "RBAC file"
	if [ "$NO_WAIT" = 0 ] && [ "$DRY_RUN" = 0 ] && [ -f "$P_ADMIN" ]; then
		need_tool kubectl "apply $SOURCE/static-pod/rbac.yaml"
	fi
}

ensure_rbac() {
	rbac=$SOURCE/static-pod/rbac.yaml
	if [ "$NO_WAIT" = 1 ]; then
		say "RBAC not applied (--no-wait): once the API server answers, run this again or: kubectl --kubeconfig $P_ADMIN apply -f $rbac"
		return 0
	fi
	if [ ! -f "$P_ADMIN" ]; then
		say "RBAC not applied: no $P_ADMIN yet (before kubeadm init); run this again after kubeadm init. Until then bootccm retries on 403s."
		return 0
	fi
	if ! have_tool kubectl "apply $rbac" || [ "$DRY_RUN" = 1 ]; then
		say "would wait up to ${WAIT_TIMEOUT}s for the API server, then run: kubectl --kubeconfig $P_ADMIN apply -f $rbac"
		return 0
	fi
	say "waiting up to ${WAIT_TIMEOUT}s for the API server (kubectl --kubeconfig $P_ADMIN get --raw /readyz)"
	start=$(date +%s)
	until kubectl --kubeconfig "$P_ADMIN" --request-timeout=5s get --raw /readyz >/dev/null 2>&1; do
		[ $(($(date +%s) - start)) -lt "$WAIT_TIMEOUT" ] ||
			die "the API server did not answer within ${WAIT_TIMEOUT}s: RBAC not applied (everything else is installed); run this again later"
		sleep 5
	done
	kubectl --kubeconfig "$P_ADMIN" apply -f "$rbac" ||
		die "kubectl apply -f $rbac failed"
}

# ---- --uninstall ------------------------------------------------------------

# remove_file PATH WHAT: remove PATH when it exists.
remove_file() {
	if [ -e "$1" ] || [ -L "$1" ]; then
		changed "remove $2 ($1)"
		[ "$DRY_RUN" = 1 ] || rm -f "$1"
	fi
}

# remove_rbac: delete what static-pod/rbac.yaml created, with admin.conf,
# once the API server answers; otherwise say how.
remove_rbac() {
	rbac=$SOURCE/static-pod/rbac.yaml
	[ -f "$rbac" ] || die "RBAC file not found: $rbac (--source DIR?)"
	howto="kubectl --kubeconfig $P_ADMIN delete --ignore-not-found -f $rbac"
	if [ "$NO_WAIT" = 1 ] || [ ! -f "$P_ADMIN" ]; then
		say "RBAC not removed (--no-wait, or no $P_ADMIN): run $howto"
		return 0
	fi
	if ! have_tool kubectl "delete $rbac" || [ "$DRY_RUN" = 1 ]; then
		say "would run: $howto"
		return 0
	fi
	if ! kubectl --kubeconfig "$P_ADMIN" --request-timeout=5s get --raw /readyz >/dev/null 2>&1; then
		say "RBAC not removed: the API server does not answer; later run: $howto"
		return 0
	fi
	kubectl --kubeconfig "$P_ADMIN" delete --ignore-not-found -f "$rbac" ||
		die "kubectl delete -f $rbac failed"
}

# only_cloud_config DIR: DIR holds nothing but (maybe) the cloud config.
only_cloud_config() {
	for f in "$1"/* "$1"/.[!.]* "$1"/..?*; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		[ "$f" = "$P_CLOUD_CONFIG" ] || return 1
	done
	return 0
}

uninstall() {
	# the manifest first: the kubelet stops the pod, which hands the Lease over
	remove_file "$P_MANIFEST" "static pod manifest"
	remove_file "$P_KUBECONFIG" "kubeconfig"
	remove_file "$P_KUBECONFIG.old" "previous kubeconfig"
	remove_file "$P_CLOUD_CONFIG" "cloud config"
	if [ -d "$P_CLOUD_DIR" ]; then
		if only_cloud_config "$P_CLOUD_DIR"; then
			changed "remove directory $P_CLOUD_DIR"
			[ "$DRY_RUN" = 1 ] || rmdir "$P_CLOUD_DIR"
		else
			say "kept: $P_CLOUD_DIR holds other files"
		fi
	fi
	if [ -e "$P_BIN" ] && ! is_bootccm "$P_BIN"; then
		say "kept: $P_BIN is not a bootccm binary"
	else
		remove_file "$P_BIN" "bootccm binary"
	fi
	remove_rbac
	say "not removed: the cluster CA ($P_PKI) and any bootccm image in containerd (ctr -n k8s.io images rm ...)"
	if [ "$DRY_RUN" = 1 ]; then
		say "dry run: $CHANGES change(s) would be made"
	elif [ "$CHANGES" = 0 ]; then
		say "nothing to remove: bootccm is not installed here"
	else
		say "done: $CHANGES change(s)"
	fi
}

# ---- main -------------------------------------------------------------------

[ "$DRY_RUN" = 1 ] && say "dry run: nothing will be changed"
[ -n "$ROOT" ] && say "installing under $ROOT"
if [ "$UNINSTALL" = 1 ]; then
	uninstall
	exit 0
fi
# Every check, before the first change.
check_binary
check_provider
resolve_image
check_manifest
check_cloud_config
check_ca
check_kubeconfig
validate_command
check_image
check_rbac
# The changes: a failure from here to commit_changes puts everything back.
[ "$DRY_RUN" = 1 ] || begin_changes
ensure_image
ensure_ca
ensure_kubeconfig
ensure_cloud_config
ensure_binary
ensure_manifest
[ "$DRY_RUN" = 1 ] || commit_changes
ensure_rbac
if [ "$DRY_RUN" = 1 ]; then
	say "dry run: $CHANGES change(s) would be made"
elif [ "$CHANGES" = 0 ]; then
	say "nothing changed: bootccm is installed as asked"
else
	say "done: $CHANGES change(s)"
fi
