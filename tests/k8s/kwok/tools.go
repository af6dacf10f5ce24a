//go:build tools

// Package tools pins kwok, which keeps Nodes alive without kubelets. It has a
// module of its own because it requires other k8s.io library versions than
// the Kubernetes release in ../go.mod; scripts/k8s-build.sh builds it.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
