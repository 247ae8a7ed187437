//go:build tools

// Package tools pins the control-plane commands the tests run, so that `go mod tidy` keeps
// their dependencies: kube-apiserver for every cluster-mode test, kube-controller-manager
// and kube-scheduler for the workload cluster (test/helpers/workload-cluster.ts).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
