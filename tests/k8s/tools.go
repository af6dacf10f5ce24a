//go:build tools

// Package tools pins the upstream programs the real-control-plane tests run;
// scripts/k8s-build.sh builds them. Nothing here is compiled into bootccm.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
