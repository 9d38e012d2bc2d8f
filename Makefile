# kubectl-netbench — see README.md.
SHELL := /usr/bin/env bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
PKG := github.com/kubectl-netbench/kubectl-netbench
LDFLAGS := -s -w -X $(PKG)/internal/version.Version=$(VERSION) -X $(PKG)/internal/version.Commit=$(COMMIT)
ARCH ?= $(shell $(GO) env GOARCH)
# One Go build configuration for everything make runs, as the release, the agent image and the
# lab's Kubernetes are built (CGO off, -trimpath): the Go cache then compiles each shared package
# once (client-go, kubectl, … for the lab, vet, the tests and the release alike). Only -race
# (hack/lint.sh) needs cgo and builds on its own.
export CGO_ENABLED := 0
export GOFLAGS := -trimpath $(filter-out -trimpath,$(shell $(GO) env GOFLAGS))

.PHONY: all build test test-mutations lint agent-image bench bench-lab bench-ladder bench-udp bench-matrix vet clean demo release-check krew-manifest lab-up lab-down lab-status lab-kubeconfig lab-check-clean e2e

all: build

build: bin/kubectl-netbench bin/netbench-agent

bin/kubectl-netbench: FORCE
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $@ ./cmd/kubectl-netbench

bin/netbench-agent: FORCE
	CGO_ENABLED=0 GOARCH=$(ARCH) $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $@ ./cmd/netbench-agent

## test: every unit, socket and network-namespace test, with a summary line.
test:
	hack/test.sh

vet:
	$(GO) vet ./...

## lint: go vet, gofmt, staticcheck, shellcheck, -race on the pure packages, short fuzz runs.
lint:
	hack/lint.sh

## agent-image: the agent image as a tarball containerd imports (bin/agent-image.tar), by the
## release's own recipe (hack/agent-image.sh); its digest in bin/agent-image.digest.
agent-image:
	VERSION=$(VERSION) ARCHS=$(ARCH) hack/agent-image.sh bin/agent-image.tar

## bench: our engines side by side with iperf3, fortio and ping on one veth path; writes
## benchmarks/RESULTS.md (root).
bench: bin/netbench-agent
	$(GO) run ./hack/bench -agent bin/netbench-agent -out benchmarks/RESULTS.md

## bench-lab: the plugin beside iperf3, ping, fortio's runner, curl, sockperf and irtt run in the
## same lab pods' network namespaces, on a same-node, a same-zone and a cross-zone path, the
## cross-zone path with the lab's UDP loss and FIFO bottleneck, and beside dnsperf on a
## CPU-limited CoreDNS; writes
## benchmarks/LAB-RESULTS.md, whose header says how long its measuring took (root, lab up).
bench-lab:
	$(MAKE) -s bin/kubectl-netbench bin/netbench-agent VERSION=dev
	hack/lab/lab.sh images
	KUBECONFIG=$$(hack/lab/lab.sh kubeconfig) $(GO) run ./hack/benchlab -rounds 5 -out benchmarks/LAB-RESULTS.md

## bench-ladder: the ladder's own overhead (wall minus measuring) on the lab, five runs; writes
## benchmarks/LADDER.md (root, lab up).
bench-ladder:
	hack/bench-ladder.sh 5

## bench-udp: the udp probe beside ICMP and iputils ping at the same rate, on the lab's cross-zone
## pod path, five rounds; writes benchmarks/UDP.md (root, lab up).
bench-udp:
	hack/bench-udp.sh 5

## bench-matrix: the matrix's own cost (API calls, plugin memory, time) by cluster size, against
## a fake cluster; writes benchmarks/MATRIX.md.
bench-matrix:
	hack/bench-matrix.sh 3

## lab-up: the local 4-node, 2-zone cluster (root); lab-down removes every trace of it.
lab-up:
	hack/lab/lab.sh up

lab-down:
	hack/lab/lab.sh down

lab-status:
	hack/lab/lab.sh status

lab-kubeconfig:
	@hack/lab/lab.sh kubeconfig

lab-check-clean:
	hack/lab/lab.sh check-clean

## demo: the lab (brought up if needed), sample workloads, a `path` and a `dns` report.
demo: lab-up
	hack/demo.sh

## release-check: GoReleaser snapshot of every archive (RELEASE_PLATFORMS=host: this platform's
## only, as CI does), and the krew manifest validated and
## installed from this platform's archive (no publishing).
release-check:
	hack/release-check.sh

krew-manifest:
	$(GO) run ./hack/krew/render -dist dist -out dist/netbench.yaml

## test-mutations: each fidelity test run with the defect it catches injected; each must fail
## (root, lab up; also the last step of make test).
test-mutations:
	hack/mutations.sh

## e2e: the end-to-end tests against the running lab (RUN='^TestPath' runs those alone).
e2e:
	NETBENCH_LAB_KUBECONFIG=$$(hack/lab/lab.sh kubeconfig) PKGS=./test/e2e/ hack/test.sh -timeout 20m $(if $(RUN),-run '$(RUN)')

clean:
	rm -rf bin dist

FORCE:
