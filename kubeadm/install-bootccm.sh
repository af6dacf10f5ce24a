#!/bin/sh
# install-bootccm.sh - install bootccm as a static pod on a kubeadm
# control-plane node, before `kubeadm init` (preferred) or after it.
#
# Steps, each skipped with "unchanged" when already done (re-running changes
# nothing and says so):
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
# Before step 1 changes anything, the binary is checked to be bootccm and
# the manifest's command line is checked by it (`bootccm --validate`: the
# flags, a kubeconfig like step 2's, the cloud config; nothing started).
#
# Also fills the placeholders of the kubeadm templates: --render-kubeadm-config;
# and removes what the steps installed: --uninstall.
# Run with --help for the options.
set -eu

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
  --bind-port N         the local API server's port (default 6443)
  --kubeadm-config FILE create a missing CA with
                        `kubeadm init phase certs ca --config FILE`
  --no-create-ca        never create a CA: fail if it is missing (a node that
                        joins a cluster: run this after kubeadm join)
  --cert-days N         validity of the client certificate (default 365)
  --no-wait             do not wait for the API server; RBAC left for later
  --wait-timeout SECS   how long to wait for the API server (default 300)
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
                        `bootccm metadata --format=kubelet-flags`
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

is_uint() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	esac
}

if ! is_uint "$BIND_PORT" || [ "$BIND_PORT" -lt 1 ] || [ "$BIND_PORT" -gt 65535 ]; then
	die "--bind-port must be a port number, not '$BIND_PORT'"
fi
if ! is_uint "$CERT_DAYS" || [ "$CERT_DAYS" -lt 1 ]; then
	die "--cert-days must be a positive number, not '$CERT_DAYS'"
fi
is_uint "$WAIT_TIMEOUT" || die "--wait-timeout must be a number of seconds, not '$WAIT_TIMEOUT'"
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
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

CHANGES=0
# changed MESSAGE: record one change (or, in a dry run, one that would be made).
changed() {
	CHANGES=$((CHANGES + 1))
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

# put_file SRC DEST MODE WHAT: install SRC as DEST with MODE unless DEST
# already has the same bytes and mode. Atomic: a temporary file in DEST's
# directory, whose dot name the kubelet's manifest watcher ignores, renamed
# over DEST.
put_file() {
	if [ -f "$2" ] && cmp -s "$1" "$2"; then
		if [ "$(file_mode "$2")" = "$3" ]; then
			say "unchanged: $4 ($2)"
			return 0
		fi
		changed "set mode $3 on $4 ($2)"
		[ "$DRY_RUN" = 1 ] || chmod "$3" "$2"
		return 0
	fi
	if [ -e "$2" ]; then
		changed "update $4 ($2, mode $3)"
	else
		changed "install $4 ($2, mode $3)"
	fi
	[ "$DRY_RUN" = 1 ] && return 0
	mkdir -p "$(dirname "$2")"
	tmp="$(dirname "$2")/.$(basename "$2").tmp.$$"
	rm -f "$tmp"
	(umask 077 && cp "$1" "$tmp")
	chmod "$3" "$tmp"
	mv -f "$tmp" "$2"
}

# make_dir DIR MODE: create DIR with MODE when missing (existing ones are the
# administrator's and are left as they are).
make_dir() {
	[ -d "$1" ] && return 0
	changed "create directory $1 (mode $2)"
	[ "$DRY_RUN" = 1 ] && return 0
	mkdir -p "$1"
	chmod "$2" "$1"
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
# as /usr/local/bin/bootccm.
check_binary() {
	[ -n "$BINARY" ] || return 0
	[ -f "$BINARY" ] || die "bootccm binary not found: $BINARY"
	[ -x "$BINARY" ] || die "$BINARY is not executable: not a bootccm binary"
	is_bootccm "$BINARY" ||
		die "$BINARY is not a bootccm binary ('$BINARY --version' does not say bootccm)"
}

# validate_command: the command line the manifest will run, checked by the
# binary itself before anything changes: `bootccm --validate` parses every
# flag, a kubeconfig like the one step 2 writes (the real one may not exist
# yet) and the cloud config, and starts nothing. Paths are this host's.
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
	[ -z "$CLOUD_CONFIG" ] || [ -f "$CLOUD_CONFIG" ] || die "cloud config not found: $CLOUD_CONFIG"
	render_manifest "$MANIFEST_SRC" "$WORK/validate.yaml"
	kubeconfig_text >"$WORK/validate.conf"
	cc=$CLOUD_CONFIG
	[ -n "$cc" ] || [ ! -f "$P_CLOUD_CONFIG" ] || cc=$P_CLOUD_CONFIG
	if [ -z "$cc" ]; then
		printf '{}\n' >"$WORK/validate-cloud.yaml"
		cc=$WORK/validate-cloud.yaml
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
		inside { exit }' "$WORK/validate.yaml" >"$WORK/validate.args"
	set --
	while IFS= read -r a; do
		case $a in
		--kubeconfig=*) a=--kubeconfig=$WORK/validate.conf ;;
		--cloud-config=*) a=--cloud-config=$cc ;;
		--node-name=*) continue ;;
		esac
		set -- "$@" "$a"
	done <"$WORK/validate.args"
	if ! "$bin" --validate "$@" >"$WORK/validate.out" 2>&1; then
		msg=$(awk '!/^Run / { print; exit }' "$WORK/validate.out")
		die "bootccm refuses the command line the manifest would run: ${msg#bootccm: } (asked $bin --validate)"
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

# ---- --render-kubeadm-config -------------------------------------------------

render_kubeadm_config() {
	[ -f "$RENDER_IN" ] || die "kubeadm template not found: $RENDER_IN"
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
	fi
	BOOTCCM_NODE_IP=
	BOOTCCM_PROVIDER_ID=
	BOOTCCM_NODE_LABELS=
	for f in $KUBELET_FLAGS; do
		case $f in
		--node-ip=*) BOOTCCM_NODE_IP=${f#*=} ;;
		--provider-id=*) BOOTCCM_PROVIDER_ID=${f#*=} ;;
		--node-labels=*) BOOTCCM_NODE_LABELS=${f#*=} ;;
		*) warn "kubelet flag '$f' has no place in the kubeadm template; ignored" ;;
		esac
	done
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
	put_file "$WORK/rendered.yaml" "$RENDER_OUT" 600 "kubeadm configuration"
}

if [ -n "$RENDER_IN" ]; then
	render_kubeadm_config
	exit 0
fi

# ---- 1. cluster CA ----------------------------------------------------------

CA_READY=1
ensure_ca() {
	if [ -f "$P_PKI/ca.crt" ] && [ -f "$P_PKI/ca.key" ]; then
		say "unchanged: cluster CA ($P_PKI/ca.crt)"
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
	if [ -n "$KUBEADM_CONFIG" ]; then
		[ -f "$KUBEADM_CONFIG" ] || die "kubeadm configuration not found: $KUBEADM_CONFIG"
		set -- kubeadm init phase certs ca --config "$KUBEADM_CONFIG"
	else
		set -- kubeadm init phase certs ca --cert-dir "$P_PKI"
	fi
	warn "creating a new cluster CA: right only on the first control-plane node, before 'kubeadm init'"
	changed "create the cluster CA: $*"
	if [ "$DRY_RUN" = 1 ]; then
		CA_READY=0
		return 0
	fi
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

write_kubeconfig() {
	d=$WORK/cert
	mkdir -p "$d"
	openssl genrsa -traditional -out "$d/key" 2048 2>/dev/null ||
		openssl genrsa -out "$d/key" 2048 2>/dev/null ||
		die "openssl could not generate a key"
	openssl req -new -key "$d/key" -subj "/CN=$CCM_USER" -out "$d/csr" ||
		die "openssl could not make the certificate request"
	cat >"$d/ext" <<-EOF
		[v3]
		basicConstraints = critical, CA:FALSE
		keyUsage = critical, digitalSignature, keyEncipherment
		extendedKeyUsage = clientAuth
		authorityKeyIdentifier = keyid
	EOF
	serial=0x$(openssl rand -hex 16)
	openssl x509 -req -in "$d/csr" -CA "$P_PKI/ca.crt" -CAkey "$P_PKI/ca.key" \
		-set_serial "$serial" -days "$CERT_DAYS" -sha256 \
		-extfile "$d/ext" -extensions v3 -out "$d/crt" 2>/dev/null ||
		die "openssl could not sign the client certificate with $P_PKI/ca.key"
	ca_data=$(base64 -w0 <"$P_PKI/ca.crt")
	crt_data=$(base64 -w0 <"$d/crt")
	key_data=$(base64 -w0 <"$d/key")
	(umask 077 && kubeconfig_text "$ca_data" "$crt_data" "$key_data" >"$d/kubeconfig")
	mkdir -p "$(dirname "$P_KUBECONFIG")"
	if [ -f "$P_KUBECONFIG" ]; then
		(umask 077 && cp -p "$P_KUBECONFIG" "$P_KUBECONFIG.old")
		say "previous kubeconfig kept as $P_KUBECONFIG.old"
	fi
	tmp="$(dirname "$P_KUBECONFIG")/.$(basename "$P_KUBECONFIG").tmp.$$"
	(umask 077 && cp "$d/kubeconfig" "$tmp")
	chmod 600 "$tmp"
	mv -f "$tmp" "$P_KUBECONFIG"
}

ensure_kubeconfig() {
	if [ "$CA_READY" = 0 ]; then
		changed "create $P_KUBECONFIG (mode 600) for $CCM_USER, server $SERVER, once the CA exists"
		return 0
	fi
	if ! have_tool openssl "make the kubeconfig's client certificate" ||
		! have_tool base64 "embed the certificates in the kubeconfig"; then
		changed "create or check $P_KUBECONFIG (mode 600) for $CCM_USER, server $SERVER"
		return 0
	fi
	problem=$(kubeconfig_problem)
	if [ -z "$problem" ]; then
		if [ "$(file_mode "$P_KUBECONFIG")" = 600 ]; then
			say "unchanged: kubeconfig for $CCM_USER ($P_KUBECONFIG)"
		else
			changed "set mode 600 on $P_KUBECONFIG"
			[ "$DRY_RUN" = 1 ] || chmod 600 "$P_KUBECONFIG"
		fi
		return 0
	fi
	if [ -f "$P_KUBECONFIG" ]; then
		changed "replace $P_KUBECONFIG: $problem"
	else
		changed "create $P_KUBECONFIG (mode 600) for $CCM_USER, server $SERVER"
	fi
	[ "$DRY_RUN" = 1 ] && return 0
	write_kubeconfig
}

# ---- 3. cloud config --------------------------------------------------------

ensure_cloud_config() {
	make_dir "$P_CLOUD_DIR" 700
	if [ -n "$CLOUD_CONFIG" ]; then
		[ -f "$CLOUD_CONFIG" ] || die "cloud config not found: $CLOUD_CONFIG"
		put_file "$CLOUD_CONFIG" "$P_CLOUD_CONFIG" 600 "cloud config"
	elif [ -f "$P_CLOUD_CONFIG" ]; then
		say "unchanged: cloud config ($P_CLOUD_CONFIG)"
	else
		# The static pod mounts this path with hostPath type File, so it must exist.
		printf '# bootccm cloud config: none given, the provider defaults apply.\n{}\n' >"$WORK/cloud-config.yaml"
		put_file "$WORK/cloud-config.yaml" "$P_CLOUD_CONFIG" 600 "empty cloud config"
	fi
}

# ---- 4. binary --------------------------------------------------------------

ensure_binary() {
	if [ -n "$BINARY" ]; then
		put_file "$BINARY" "$P_BIN" 755 "bootccm binary"
	elif [ -f "$P_BIN" ]; then
		say "unchanged: bootccm binary ($P_BIN)"
	elif [ "$MANIFEST" = hostbinary ]; then
		die "--manifest hostbinary runs $P_BIN, which is not installed: give --binary PATH"
	else
		warn "no --binary: $P_BIN is not installed (the image has its own; 'bootccm metadata' on the host needs it)"
	fi
}

# ---- 4b. image archive ------------------------------------------------------

ensure_image() {
	[ -n "$IMAGE_ARCHIVE" ] || return 0
	[ -f "$IMAGE_ARCHIVE" ] || die "image archive not found: $IMAGE_ARCHIVE"
	if ! have_tool ctr "import $IMAGE_ARCHIVE into containerd"; then
		changed "import $IMAGE_ARCHIVE into containerd (ctr -n k8s.io images import)"
		return 0
	fi
	name=$(normalize_ref "$IMAGE")
	if ctr -n k8s.io images ls -q "name==$name" 2>/dev/null | grep -qFx "$name"; then
		say "unchanged: image $name is in containerd"
		return 0
	fi
	changed "import $IMAGE_ARCHIVE into containerd (ctr -n k8s.io images import)"
	[ "$DRY_RUN" = 1 ] && return 0
	ctr -n k8s.io images import "$IMAGE_ARCHIVE" ||
		die "ctr -n k8s.io images import $IMAGE_ARCHIVE failed"
	ctr -n k8s.io images ls -q "name==$name" 2>/dev/null | grep -qFx "$name" ||
		die "$IMAGE_ARCHIVE does not hold $name (make it with scripts/make-image.sh BINARY OUT.tar $IMAGE)"
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
	[ -f "$MANIFEST_SRC" ] || die "manifest template not found: $MANIFEST_SRC (--source DIR?)"
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

ensure_manifest() {
	src=$MANIFEST_SRC
	[ -f "$src" ] || die "manifest template not found: $src (--source DIR?)"
	render_manifest "$src" "$WORK/bootccm.yaml"
	grep -q -- "- --cloud-provider=$CLOUD_PROVIDER\$" "$WORK/bootccm.yaml" ||
		die "$src has no '- --cloud-provider=' line to set"
	! grep -q 'image: bootccm:VERSION' "$WORK/bootccm.yaml" ||
		die "$src still names the placeholder image bootccm:VERSION"
	# shellcheck disable=SC2016 # $(NODE_NAME) is the kubelet's, literally.
	if [ -n "$EXTRA_ARGS" ] && ! grep -q -- '- --node-name=$(NODE_NAME)' "$src"; then
		die "$src has no '- --node-name=\$(NODE_NAME)' line to add --extra-arg flags after"
	fi
	# The kubelet's manifest directory: 0700, as kubeadm makes it.
	make_dir "$P_MANIFESTS" 700
	put_file "$WORK/bootccm.yaml" "$P_MANIFEST" 600 "static pod manifest"
}

# ---- 6. RBAC ----------------------------------------------------------------

ensure_rbac() {
	rbac=$SOURCE/static-pod/rbac.yaml
	[ -f "$rbac" ] || die "RBAC file not found: $rbac (--source DIR?)"
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
check_binary
check_provider
resolve_image
validate_command
ensure_ca
ensure_kubeconfig
ensure_cloud_config
ensure_binary
ensure_image
ensure_manifest
ensure_rbac
if [ "$DRY_RUN" = 1 ]; then
	say "dry run: $CHANGES change(s) would be made"
elif [ "$CHANGES" = 0 ]; then
	say "nothing changed: bootccm is installed as asked"
else
	say "done: $CHANGES change(s)"
fi
