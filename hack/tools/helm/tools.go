//go:build tools

// Package tools pins the helm CLI of the same SDK version as oamflow's
// go.mod (helm.sh/helm/v3 v3.16.4), for the Helm benchmark in
// hack/bench/helm:
//
//	cd hack/tools/helm && go build -o ../../../bin/helm helm.sh/helm/v3/cmd/helm
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
