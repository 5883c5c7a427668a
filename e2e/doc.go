// Package e2e holds end-to-end tests against real local clusters. They need
// the binaries of `make k8s-binaries` and take minutes, so they only build
// with the e2e tag:
//
//	go test -tags e2e -count=1 -timeout 20m ./e2e/...
package e2e
