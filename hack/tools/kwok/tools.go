//go:build tools

// Package tools pins kwok and kwokctl, built by hack/build-k8s.sh into bin/k8s/.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
