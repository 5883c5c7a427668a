//go:build tools

// Package tools pins controller-gen (deepcopy and CRD generation), a release
// built against k8s.io v0.31 like the main module.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
