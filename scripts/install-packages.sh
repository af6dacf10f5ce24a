#!/bin/sh
# install-packages.sh - install the Debian packages listed in scripts/packages.txt
# that are not installed yet. Needs root (or nothing to do). Idempotent.
set -eu
here=$(dirname "$0")
missing=""
# A line is PACKAGE, or PACKAGE:COMMAND for a package wanted only when no
# COMMAND is on PATH (another package may bring it).
for entry in $(sed -e 's/#.*//' "$here/packages.txt"); do
	p=${entry%%:*}
	case $entry in
	*:*) command -v "${entry#*:}" >/dev/null 2>&1 && continue ;;
	esac
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0
echo "install-packages: installing:$missing" >&2
if [ "$(id -u)" != 0 ]; then
	echo "install-packages: need root to install:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
