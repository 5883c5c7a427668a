//go:build tools

// Package tools pins the Kubernetes control-plane components that
// hack/build-k8s.sh builds from upstream sources into bin/k8s/.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
