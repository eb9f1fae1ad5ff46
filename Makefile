# ltiop — make targets. The two a newcomer needs: `make demo` and `make test`.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

CONTROLLER_GEN := go tool controller-gen
GEN_PATHS := paths=./...
CRD_RBAC_ARGS := crd rbac:roleName=ltiop-manager
IMG ?= ltiop:latest

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

.PHONY: envtest
envtest: ## Build kube-apiserver and etcd from the Go module proxy into bin/ (cached).
	hack/build-binaries.sh >/dev/null

.PHONY: lint-chart
lint-chart: ## Run helm lint on the chart (Helm is a go tool: nothing to download).
	go tool helm lint charts/ltiop --set publicUrl=https://lti.example.com
	go tool helm lint charts/ltiop -f charts/ltiop/ci/full-values.yaml

.PHONY: test
test: verify-generated verify-fmt vet lint-chart envtest ## Check generated files, vet, and run every test (Ginkgo + envtest).
	KUBEBUILDER_ASSETS="$$(hack/build-binaries.sh)" go test -race -count=1 ./... $(TEST_ARGS)

.PHONY: bench
bench: ## Run the benchmarks of the hot paths.
	go test -run '^$$' -bench . -benchmem ./... $(BENCH_ARGS)

##@ Run

.PHONY: demo
demo: ## Run ltiop end to end on an embedded local control plane (no cluster needed).
	hack/demo.sh

.PHONY: build
build: ## Build the ltiop binary into bin/.
	go build -trimpath -o bin/ltiop .

.PHONY: docker-build
docker-build: ## Build the container image.
	docker build -t $(IMG) .

.PHONY: deploy
deploy: ## Install into the cluster of the current kubectl context.
	kubectl apply -k config/default

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
