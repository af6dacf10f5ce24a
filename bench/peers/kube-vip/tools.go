//go:build tools

// Package tools pins kube-vip-cloud-provider, the IP-pool LoadBalancer
// provider the static provider is measured against. A module of its own keeps
// its dependency graph apart from the other peers and from tests/k8s/go.mod;
// scripts/k8s-build.sh builds it.
package tools

import (
	_ "github.com/kube-vip/kube-vip-cloud-provider"
)
