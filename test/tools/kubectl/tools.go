//go:build tools

// Package tools pins the kubectl command so that `go mod tidy` keeps its dependencies.
package tools

import _ "k8s.io/kubernetes/cmd/kubectl"
