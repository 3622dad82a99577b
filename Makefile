# minik8s. `make up` starts a single-node cluster on this host; `make test` runs every test.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
BIN := $(CURDIR)/bin
IMAGES := $(CURDIR)/images/out
PAUSE_EMBED := pkg/runtime/pauseimage/assets/pause.tar
COMMANDS := miniapi minilet minilab

.PHONY: all deps images build up down test lint bench clean

all: build

deps:
	@bash hack/install-deps.sh

# Our own images (pause, netexec, busybox) as OCI tarballs; the builder also copies pause.tar
# into $(PAUSE_EMBED) for minilet to embed.
images:
	$(GO) run ./images/build -o $(IMAGES)

build: images
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ $(addprefix ./cmd/,$(COMMANDS))

up: deps build
	@bash hack/up.sh

down:
	@bash hack/down.sh

lint:
	@out=$$(gofmt -l cmd pkg images test bench 2>/dev/null); if [[ -n $$out ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Unit tests, integration tests against real containerd/CNI/netns/kubectl, and the e2e on a
# minilab cluster. Tests needing root skip with a reason elsewhere; here they all run.
test: deps build lint
	MINIK8S_BIN=$(BIN) MINIK8S_IMAGES=$(IMAGES) $(GO) test -count=1 -timeout 40m ./...

# The figures of docs/performance.md: API create/list/watch on bolt and etcd, with baselines
# measured in the same run (about 3 minutes; etcd is skipped without /usr/bin/etcd).
bench: deps
	$(GO) run ./bench/apibench -duration 5s

clean:
	rm -rf $(BIN) $(IMAGES) $(PAUSE_EMBED)
