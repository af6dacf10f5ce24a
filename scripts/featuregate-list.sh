#!/bin/sh
# featuregate-list.sh [CLOUD_PROVIDER_VERSION]: print src/config/featuregate_list.h's
# entries: every feature gate the upstream cloud-controller-manager registers
# (k8s.io/cloud-provider/app of that version, default v0.37.2), with the value
# a gate locked to its default takes (else -1). Needs Go and the modules in the
# module cache (GOPROXY=off: no download); the build takes minutes.
set -eu
v=${1:-v0.37.2}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cat >"$d/main.go" <<'GO'
package main

import (
	"fmt"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/cloud-provider/app"
)

func main() {
	for name, spec := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		locked := -1
		if spec.LockToDefault {
			locked = 0
			if spec.Default {
				locked = 1
			}
		}
		fmt.Printf("\t{ \"%s\", %d },\n", name, locked)
	}
}
GO
printf 'module featuregatelist\n\ngo 1.26\n\nrequire k8s.io/cloud-provider %s\n' "$v" >"$d/go.mod"
cd "$d"
GOFLAGS=-mod=mod GOPROXY=off go mod tidy >&2
GOFLAGS=-mod=mod GOPROXY=off go run . | LC_ALL=C sort
