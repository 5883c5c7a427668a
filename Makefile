# oamflow Makefile. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

ROOT        := $(abspath .)
BIN         := $(ROOT)/bin
K8S_BIN     := $(BIN)/k8s
GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X github.com/oamflow/oamflow/pkg/cli.Version=$(VERSION)
# Build tags of the controller: hack/buildflags (ControllerTags) says why; keep the two equal.
CONTROLLER_TAGS := kustomize_disable_go_plugin_support
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT  := $(BIN)/golangci-lint
CRD_DIR     := charts/oamflow/crds
# The image's tag is the chart's appVersion, the tag its values default to.
IMAGE_TAG   ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' charts/oamflow/Chart.yaml)
IMAGE_FLAGS ?=
# Packages whose tests need no build tag; e2e tests carry the `e2e` tag.
PKGS        ?= ./...
TEST_FLAGS  ?= -count=1 -timeout 30m
E2E_FLAGS   ?= -count=1 -timeout 40m -v
BENCH_APPS  ?= 200,1000

export KUBEBUILDER_ASSETS := $(K8S_BIN)
export OAMFLOW_K8S_BIN    := $(K8S_BIN)

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
	  /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code, CRDs (charts/oamflow/crds), the chart's definitions and values table, and the provider package schemas (pkg/cuepkg), and the CLI reference in README.md.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...
	rm -f $(CRD_DIR)/*.yaml
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./apis/... output:crd:artifacts:config=$(CRD_DIR)
	go run ./hack/chartgen
	go run ./hack/cuepkggen
	$(GO) run ./hack/clidoc -readme README.md

.PHONY: verify
verify: $(CONTROLLER_GEN) $(GOLANGCI_LINT) ## Fail if generated files, formatting, go.mod or lint drift from the sources; and on import-rule breaks.
	@hack/verify.sh

.PHONY: fmt
fmt: ## Format Go sources.
	$(GO) fmt ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (version pinned in hack/tools/golangci-lint) with .golangci.yml.
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...

.PHONY: vet
vet: ## Run go vet (including e2e files).
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e/...

##@ Build

.PHONY: build
build: ## Build bin/oamflow (CLI) and bin/oamflow-controller (manager).
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/oamflow ./cmd/oamflow
	$(GO) build -tags $(CONTROLLER_TAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/oamflow-controller ./cmd/oamflow-controller

.PHONY: image
image: ## Build the oamflow-controller image offline (no Docker): bin/image/oci (OCI layout, linux/amd64+arm64 index), bin/image/*.tar (docker load), bin/image/digest. Same commit, same digest.
	$(GO) run ./hack/image -out $(BIN)/image $(IMAGE_FLAGS)

.PHONY: image-verify
image-verify: ## Prove make image reproducible (slow: two cross-compiles, the second with an empty Go build cache; not in make test): build into bin/image-verify/a and b, fail unless every file is the same, then check what the image holds (hack/image -verify).
	rm -rf $(BIN)/image-verify
	$(GO) run ./hack/image -out $(BIN)/image-verify/a $(IMAGE_FLAGS)
	# An empty build cache: no compiled package is shared with the first build.
	GOCACHE=$(BIN)/image-verify/gocache $(GO) run ./hack/image -out $(BIN)/image-verify/b $(IMAGE_FLAGS)
	rm -rf $(BIN)/image-verify/gocache
	diff -r $(BIN)/image-verify/a $(BIN)/image-verify/b
	@echo "two builds, one digest: $$(cat $(BIN)/image-verify/a/digest)"
	$(GO) run ./hack/image -verify -out $(BIN)/image-verify/a

.PHONY: image-push
image-push: ## Push bin/image/oci to $(REGISTRY)/oamflow-controller:<tag> (credentials from ~/.docker/config.json); run make image first.
	@test -n "$(REGISTRY)" || { echo "REGISTRY=host[:port][/path] is required" >&2; exit 1; }
	$(GO) run ./hack/image -out $(BIN)/image -push $(REGISTRY)/oamflow-controller:$(IMAGE_TAG)

.PHONY: k8s-binaries
k8s-binaries: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, kwokctl into bin/k8s (once; ~15 min the first time).
	hack/build-k8s.sh

.PHONY: helm
helm: $(BIN)/helm ## Build the helm CLI of the Helm SDK version oamflow uses into bin/helm.
$(BIN)/helm: hack/tools/helm/go.mod
	cd hack/tools/helm && $(GO) build -o $(BIN)/helm helm.sh/helm/v3/cmd/helm

# The first build on a fresh machine takes a few minutes (see CONTRIBUTING.md); bin/ caches it.
$(GOLANGCI_LINT): hack/tools/golangci-lint/go.mod
	cd hack/tools/golangci-lint && $(GO) build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

$(CONTROLLER_GEN): hack/tools/controller-gen/go.mod
	cd hack/tools/controller-gen && $(GO) build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

##@ Main job

.PHONY: demo
demo: build k8s-binaries ## Run the demo: 3 local clusters, controller, a multi-cluster Application with a Helm chart.
	hack/demo.sh

.PHONY: demo-down
demo-down: ## Stop the demo's controller and local clusters.
	@home=$${OAMFLOW_HOME:-$$HOME/.oamflow}; \
	  if [ -f $$home/controller.pid ]; then kill $$(cat $$home/controller.pid) 2>/dev/null || true; rm -f $$home/controller.pid; fi
	$(BIN)/oamflow local down

##@ Test

.PHONY: test
test: k8s-binaries test-unit e2e ## Run every test: unit, envtest (real kube-apiserver + etcd) and e2e on local clusters.

.PHONY: faults
faults: k8s-binaries ## Long fault suite (~10 min): 50 Applications churn on a hub and 2 members while the controller is SIGKILLed, hub kube-apiserver/etcd and a member's API server restarted and API errors injected; then nothing may be lost, left behind or wrongly deleted. FAULTS_SEED replays a run, FAULTS_APPS resizes it; the short variant runs in make e2e.
	$(GO) test -tags faults -timeout 30m -v ./e2e/faults/

.PHONY: test-unit
test-unit: k8s-binaries ## Unit and envtest tests (go test ./...).
	GO=$(GO) hack/gotest.sh $(TEST_FLAGS) $(PKGS)

.PHONY: e2e
e2e: k8s-binaries build ## End-to-end tests against local clusters started from bin/k8s.
	# One package at a time (-p 1): e2e and e2e/faults each start several
	# clusters, and on a 2-core machine two of them at once starve
	# kube-controller-manager past its 10 s wait for its API server.
	GO=$(GO) hack/gotest.sh -tags e2e -p 1 $(E2E_FLAGS) ./e2e/...
	# e2e tests living beside their package: Helm install + wait on a kwok cluster.
	GO=$(GO) hack/gotest.sh -tags e2e $(E2E_FLAGS) -run '^TestE2E' ./pkg/helm/

.PHONY: conformance
conformance: ## KubeVela conformance alone: render every case of ../shared/conformance/kubevela with dry-run --offline, print N/M identical and the diffs.
	$(GO) test -count=1 -v -run '^TestConformance$$' ./e2e/conformance/ | grep -v -E '^(=== RUN|    --- PASS)'

.PHONY: bench
bench: ## Go benchmarks (render, health, state-keep); harnesses live under hack/bench.
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

.PHONY: bench-apps
bench-apps: k8s-binaries ## The controller at scale (issue 18): 200 then 1,000 Applications on a fresh local cluster each, create and update waves, no-op resync; prints time, latency, CPU, RSS and requests per app. BENCH_APPS=200 for one count.
	$(GO) run ./hack/bench/apps -apps $(BENCH_APPS) -v

.PHONY: clean
clean: ## Remove bin/ except the slow-to-build bin/k8s.
	find $(BIN) -maxdepth 1 -type f -delete 2>/dev/null || true

##@ Docs

.PHONY: docs
docs: ## Regenerate the CLI reference in README.md from the cobra command tree.
	$(GO) run ./hack/clidoc -readme README.md
