//go:build tools

// Package tools pins etcd, built by hack/build-k8s.sh into bin/k8s/.
package tools

import _ "go.etcd.io/etcd/server/v3"
