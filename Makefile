# crawl-operator. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN            := $(CURDIR)/bin
K8S_BIN        := $(BIN)/k8s
IMG            ?= ghcr.io/lohisoft/crawl-operator:dev
CONTROLLER_GEN := go tool controller-gen
GO_TEST_FLAGS  ?=

export KUBEBUILDER_ASSETS := $(K8S_BIN)

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*##/ {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: ## Generate CRDs and RBAC from the API types and markers.
	rm -f config/crd/bases/*.yaml
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./... output:rbac:artifacts:config=config/rbac
	rm -f charts/crawl-operator/files/crds/*.yaml
	cp config/crd/bases/*.yaml charts/crawl-operator/files/crds/
	cp config/rbac/role.yaml charts/crawl-operator/files/rbac/role.yaml

.PHONY: generate
generate: ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: verify-generated
verify-generated: manifests generate ## Fail when committed generated files are out of date (CI, on a clean clone).
	@test -z "$$(git status --porcelain -- api config charts/crawl-operator/files)" || { git status --short -- api config charts/crawl-operator/files; echo "generated files are stale: run 'make manifests generate' and commit"; exit 1; }

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet the tree.
	go vet ./...

.PHONY: build
build: ## Build bin/manager, bin/crawler and the dev tools (bin/devcluster, bin/samplesite).
	CGO_ENABLED=0 go build -o $(BIN)/manager ./cmd/manager
	CGO_ENABLED=0 go build -o $(BIN)/crawler ./cmd/crawler
	CGO_ENABLED=0 go build -o $(BIN)/devcluster ./hack/devcluster
	CGO_ENABLED=0 go build -o $(BIN)/samplesite ./hack/samplesite

.PHONY: k8s-bin
k8s-bin: ## Build etcd, kube-apiserver, kubectl, kube-scheduler, kube-controller-manager into bin/k8s (skipped when current).
	hack/k8s-bin.sh

##@ Test

.PHONY: test
test: k8s-bin manifests generate vet build ## Run every test: unit, envtest and end-to-end, then each fuzz target briefly.
	go test -timeout 30m $(GO_TEST_FLAGS) ./...
	hack/fuzz.sh 3s

FUZZTIME ?= 2m

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 2m; failures land in testdata/fuzz).
	hack/fuzz.sh $(FUZZTIME)

.PHONY: bench
bench: ## Run the benchmarks.
	go test -run '^$$' -bench . -benchmem ./...

##@ Run

REAL_NODE ?=

.PHONY: demo
demo: k8s-bin build ## Run the whole job locally: cluster, manager, sample site, a crawl, a search (REAL_NODE=1: in real containers).
	REAL_NODE=$(REAL_NODE) RN_IMAGE=$(IMG) hack/demo.sh

.PHONY: dev-cluster
dev-cluster: k8s-bin build ## Start the local cluster in the background (KUBECONFIG=bin/kubeconfig); REAL_NODE=1: a real kubelet + containerd node (root).
	REAL_NODE=$(REAL_NODE) RN_IMAGE=$(IMG) hack/dev-cluster.sh up

.PHONY: dev-cluster-down
dev-cluster-down: ## Stop the local cluster and everything `make demo` started.
	hack/dev-cluster.sh down

.PHONY: run
run: build ## Run the manager against $KUBECONFIG.
	$(BIN)/manager --crawler-image=$(IMG)

IMAGE_TAR ?= $(BIN)/crawl-operator-image.tar

.PHONY: image
image: ## Build the image without Docker as $(IMAGE_TAR) (docker load / ctr images import), tagged $(IMG).
	go run ./hack/image --tag $(IMG) --out $(IMAGE_TAR)

.PHONY: docker-build
docker-build: ## Build the image with a Docker engine (same layout as `make image`).
	docker build -t $(IMG) .
