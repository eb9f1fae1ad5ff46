# ltiop — make targets. The two a newcomer needs: `make demo` and `make test`.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

CONTROLLER_GEN := go tool controller-gen
GEN_PATHS := paths=./...
CRD_RBAC_ARGS := crd rbac:roleName=ltiop-manager
# The image the docker-* targets build and push, and that build-installer and deploy install.
IMG ?= ltiop:latest
# docker, or podman.
CONTAINER_TOOL ?= docker
# The platforms of docker-buildx.
PLATFORMS ?= linux/amd64,linux/arm64
KUBECTL ?= kubectl
KUSTOMIZE := go tool kustomize
# Injected into the binary (ltiop --version, the start log line, ltiop_build_info, the
# OpenAPI document). Override for a release: make docker-build VERSION=v0.2.0.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_PKG := github.com/ltiop/ltiop/internal/version
LDFLAGS := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT)
# Where `make build` writes the binary, and its go build flags (tests add -race there to
# reuse the packages their own build compiled).
LTIOP_BIN ?= bin/ltiop
BUILD_FLAGS ?= -trimpath

.PHONY: all
all: build

##@ Development

.PHONY: manifests
manifests: ## Generate the CRD and RBAC manifests from the markers.
	$(CONTROLLER_GEN) $(CRD_RBAC_ARGS) $(GEN_PATHS) output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	hack/sync-chart.sh

.PHONY: generate
generate: ## Generate the DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: verify-generated
verify-generated: ## Fail when generated files are not current (run `make manifests generate`).
	hack/verify-generated.sh

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -w $$(git ls-files '*.go')

.PHONY: verify-fmt
verify-fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^hack/tools/')); \
	if [ -n "$$out" ]; then echo "gofmt would change: $$out (run make fmt)"; exit 1; fi

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: ## Run golangci-lint (.golangci.yml; a go tool: nothing to download).
	go tool golangci-lint run ./...

.PHONY: envtest
envtest: ## Build kube-apiserver and etcd from the Go module proxy into bin/ (cached).
	hack/build-binaries.sh >/dev/null

.PHONY: lint-chart
lint-chart: ## Run helm lint on the chart (Helm is a go tool: nothing to download).
	go tool helm lint charts/ltiop --set publicUrl=https://lti.example.com
	go tool helm lint charts/ltiop -f charts/ltiop/ci/full-values.yaml

# actionlint checks the workflows' syntax, expressions, action inputs and permissions; it runs
# shellcheck on their scripts when shellcheck is on the PATH. Its own modfile: it cannot share
# the main module's build list (hack/tools/actionlint/go.mod says why).
.PHONY: lint-workflows
lint-workflows: ## Check .github/workflows with actionlint (a go tool: nothing to download).
	go tool -modfile=hack/tools/actionlint/go.mod actionlint

# Redocly CLI (npm, pinned by hack/openapilint/package-lock.json, installed there by the script)
# lints the OpenAPI document: 0 errors, and each warning left justified in its ignore file.
.PHONY: lint-openapi
lint-openapi: ## Lint webserver/openapi.json with Redocly CLI (needs node and npm).
	hack/openapilint/lint.sh

.PHONY: test
test: verify-generated verify-fmt vet lint lint-chart lint-workflows lint-openapi envtest ## Check generated files, vet, lint, and run every test (Ginkgo + envtest).
	KUBEBUILDER_ASSETS="$$(hack/build-binaries.sh)" go test -race -count=1 ./... $(TEST_ARGS)

.PHONY: test-node
test-node: ## Run ltiop as pods on a real one-node cluster (root): image, helm install, launch, uninstall.
	hack/test-node.sh

.PHONY: bench
bench: ## Run the benchmarks of the hot paths.
	go test -run '^$$' -bench . -benchmem ./... $(BENCH_ARGS)

##@ Run

.PHONY: demo
demo: ## Run ltiop end to end on an embedded local control plane (no cluster needed).
	hack/demo.sh

# Built, then run (not `go run`, which exits 1 after a Ctrl-C whatever ltiop returned).
.PHONY: run
run: build ## Run ltiop from source against the cluster of the current kubectl context (set LTIOP_PUBLIC_URL and LTIOP_NAMESPACE; args in RUN_ARGS).
	$(LTIOP_BIN) $(RUN_ARGS)

##@ Build

.PHONY: build
build: ## Build the ltiop binary (LTIOP_BIN, default bin/ltiop) with VERSION and COMMIT.
	go build $(BUILD_FLAGS) -ldflags "$(LDFLAGS)" -o $(LTIOP_BIN) .

# The image `make image` builds (and a release pushes): ghcr.io/ltiop/ltiop at VERSION.
IMAGE ?= ghcr.io/ltiop/ltiop:$(VERSION)

.PHONY: image
image: ## Build the image IMAGE for PLATFORMS without Docker: bin/image/ltiop (OCI layout), ltiop.tar, sbom.cdx.json.
	hack/image.sh $(IMAGE) $(VERSION) $(COMMIT) $(PLATFORMS)

.PHONY: docker-build
docker-build: ## Build the container image IMG for this machine's platform.
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the container image IMG.
	$(CONTAINER_TOOL) push $(IMG)

# The Dockerfile cross-compiles (FROM --platform=$$BUILDPLATFORM, GOOS/GOARCH from the
# target platform), so one builder makes every platform without emulation.
.PHONY: docker-buildx
docker-buildx: ## Build and push IMG for PLATFORMS (default linux/amd64,linux/arm64) with buildx.
	- $(CONTAINER_TOOL) buildx create --name ltiop-builder
	$(CONTAINER_TOOL) buildx use ltiop-builder
	$(CONTAINER_TOOL) buildx build --push --platform=$(PLATFORMS) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --tag $(IMG) . \
	  || status=$$?; $(CONTAINER_TOOL) buildx rm ltiop-builder; exit $${status:-0}

.PHONY: build-installer
build-installer: manifests generate ## Write dist/install.yaml: CRDs, RBAC, Namespace and Deployment with the image IMG.
	mkdir -p dist
	hack/build-installer.sh $(IMG) > dist/install.yaml.tmp
	mv dist/install.yaml.tmp dist/install.yaml

##@ Deployment

ignore-not-found ?= false

.PHONY: install
install: manifests ## Install the CRDs into the cluster of the current kubectl context.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests ## Remove the CRDs (and with them every registration!). ignore-not-found=true to ignore missing ones.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests ## Install ltiop (image IMG) into the cluster of the current kubectl context.
	hack/build-installer.sh $(IMG) | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: ## Remove ltiop, its namespace and its CRDs. ignore-not-found=true to ignore missing ones.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
