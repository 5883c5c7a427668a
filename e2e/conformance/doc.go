// Package conformance checks that `oamflow dry-run --offline` renders
// KubeVela's own definitions and example Applications as the real vela CLI
// does. The corpus (KubeVela's definitions, example apps and vela's exact
// output for each) lives outside the repository, in
// ../shared/conformance/kubevela next to the clone; the test skips, saying
// so, when it is absent.
//
// The test needs no cluster, so unlike the rest of e2e it builds without the
// e2e tag and runs with `go test ./...` (make test-unit, CI); `make
// conformance` runs it alone and prints the score and the diffs:
//
//	go test -count=1 -v -run '^TestConformance$' ./e2e/conformance/
//
// The only allowed differences from vela's output are the deliberate
// deviations listed in deviations_test.go (and explained in
// docs/compatibility.md), each asserted exactly, and the cases listed as
// pending there, each with the reason it still differs.
package conformance
