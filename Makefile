# minik8s. `make up` starts a single-node cluster on this host; `make test` runs every test.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
# bin/ comes last: a kubectl the host has wins over the one `make kubectl` builds.
export PATH := /usr/local/go/bin:$(PATH):$(BIN)
IMAGES := $(CURDIR)/images/out
PAUSE_EMBED := pkg/runtime/pauseimage/assets/pause.tar
COMMANDS := miniapi minilet miniproxy minilab
# grpcnotrace drops grpc's golang.org/x/net/trace (debug pages on http.DefaultServeMux, which
# no binary serves): its html/template keeps the linker from dropping unused methods, ~15 MiB
# of minilet's RSS (docs/performance.md, "minilet: memory at 0 pods").
TAGS := grpcnotrace
# /version (kubectl version -o yaml) names the commit miniapi was built from: go build stamps
# it where git can read the checkout, whatever GOFLAGS says; not where git refuses it (a root
# build of a checkout another user owns), which would fail the build.
BUILDVCS := $(shell git rev-parse --git-dir >/dev/null 2>&1 && echo auto || echo false)
# miniproxy without cgo: only net's resolver and os/user linked it, and with it libc and ld.so,
# ~1.5–2 MiB of the daemon's RSS (docs/performance.md, "Where miniproxy's memory goes"). Go's
# own resolver reads /etc/hosts, /etc/resolv.conf and nsswitch.conf's hosts order; lost are
# NSS modules (mdns, LDAP...) for the API server's name, which a kubeconfig gives as an address.
NOCGO_COMMANDS := miniproxy

.PHONY: all disk-space deps images kubectl etcd build up down test unit lint fresh-check fuzz bench bench-ha bench-mem bench-cr bench-policy clean install uninstall conformance kube-e2e

all: build

deps:
	@bash hack/install-deps.sh

# Our own images (pause, netexec, busybox, coredns) as OCI tarballs, rewritten only when their
# content changes (CoreDNS compiles for minutes once, then comes from the go build cache);
# the builder also copies pause.tar
# into $(PAUSE_EMBED) for minilet to embed.
images:
	$(GO) run ./images/build -o $(IMAGES)

# kubectl for make up, the scripts and the tests: the host's if it has one, else built from
# the published k8s.io/kubectl module (hack/kubectl, a module of its own) into bin/kubectl.
kubectl:
	@if ! command -v kubectl >/dev/null 2>&1; then \
		echo "kubectl: none on PATH; building bin/kubectl from k8s.io/kubectl (a few minutes)"; \
		mkdir -p $(BIN) && cd hack/kubectl && $(GO) build -o $(BIN)/kubectl . ; \
	fi

# etcd for the etcd store engine, its tests and the HA lab: etcd 3.6 built from its published
# server module (hack/etcd, a module of its own) into bin/etcd, and etcdctl from its module at
# the same version into bin/etcdctl; Debian's etcd-server is 3.4, which etcd no longer maintains.
etcd:
	@mkdir -p $(BIN)
	cd hack/etcd && $(GO) build -o $(BIN)/etcd . && $(GO) build -o $(BIN)/etcdctl ./etcdctl

build: deps images kubectl etcd
	@mkdir -p $(BIN)
	$(GO) build -tags $(TAGS) -buildvcs=$(BUILDVCS) -o $(BIN)/ $(addprefix ./cmd/,$(filter-out $(NOCGO_COMMANDS),$(COMMANDS)))
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -buildvcs=$(BUILDVCS) -o $(BIN)/ $(addprefix ./cmd/,$(NOCGO_COMMANDS))

up: deps build
	@bash hack/up.sh

down:
	@bash hack/down.sh

# Linters pinned by version and run from the module proxy: a clean clone needs only go.
# What staticcheck leaves out, and why, is in staticcheck.conf.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOIMPORTS := golang.org/x/tools/cmd/goimports@v0.52.0
GO_DIRS := $(wildcard cmd internal pkg images test bench deploy systemd)

lint:
	@out=$$(gofmt -l $(GO_DIRS)); if [[ -n $$out ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@out=$$($(GO) run $(GOIMPORTS) -l $(GO_DIRS)); if [[ -n $$out ]]; then echo "goimports needed (standard library imports in a group of their own):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy (run go mod tidy):"; $(GO) mod tidy -diff; exit 1; }

# The fast loop: the unit tests, with the race detector. -short makes internal/testenv skip
# the integration tests (RequireRoot, Integration: root, containerd, a VM, or whole daemons
# such as pkg/control/controlplane's clusters or etcd); `make test` runs without it, so they all
# run there. The clients' tests on an in-process miniapi (controlplanetest) stay; tests that
# need no options of their own can share one per package (Shared). The last line is the wall time and the
# CPU time it took (user + sys, the builds included): on a shared machine the CPU time says
# whether a slow wall time was the load; there MINIK8S_TEST_TIMEOUT_SCALE=3 stretches the
# tests' limits (internal/testenv.Timeout). Packages run two at once (go's default here):
# with -p 4 (540 s wall against 687) the apiserver's hardening test, beside three other race
# binaries, saw slow writes dropped (EOF) in two runs of two, on a quiet machine too.
# -ldflags=-w links the ~140 test binaries without DWARF (only debuggers read it; stack
# traces and race reports use the symbol table): a race test binary links in ~20% less CPU.
unit:
	@TIMEFORMAT='%0Rs wall, %0Us user + %0Ss sys CPU'; \
		{ time { $(GO) test -short -race -count=1 -ldflags=-w -timeout 15m ./...; rc=$$?; printf 'make unit: exit %d, ' $$rc; }; } 2>&1; \
		exit $$rc

# Unit tests, integration tests against real containerd/CNI/netns/kubectl, and the e2e on a
# minilab cluster. Tests needing root or a tool skip with a reason elsewhere; here
# (MINIK8S_MAKE_TEST=1) a missing tool fails them (internal/testenv).
# miniapi's fuzz targets (request bodies, patches, selectors, request paths), each for a
# count of inputs about 30 s of this machine's: a count, not a -fuzztime duration, because
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline exceeded" when
# the duration ends while a worker is busy (golang/go#75804, fixed in Go 1.27; it failed
# a CI run of ours). Their seed corpora are in pkg/control/apiserver/testdata/fuzz. A crash
# fails the target and leaves the input that caused it there.
FUZZ_TARGETS := FuzzDecodeBody=60000 FuzzPatch=60000 FuzzSelectors=20000 FuzzRequestPath=25000
fuzz:
	for t in $(FUZZ_TARGETS); do $(GO) test -run '^$$' -fuzz "^$${t%=*}$$" -fuzztime "$${t#*=}x" ./pkg/control/apiserver/ || exit 1; done

# A test run needs room (labs, containerd, images, bbolt): see hack/disk-space.sh.
disk-space:
	@bash hack/disk-space.sh

# The longest packages come first: go test starts packages in the order given (-p of them at
# once), so the end-to-end scenarios, the conformance subset (test/conformance/ci-subset.txt,
# e2e.test built once into ~/.cache/minik8s) and the lab guides (a VM among them) run beside
# each other and beside all the rest instead of after most of them.
SLOWEST_TESTS := ./test/e2e/ ./test/conformance/ ./test/labs/ ./systemd/ ./pkg/control/controlplane/
test: disk-space deps build lint fresh-check fuzz kube-e2e
	MINIK8S_MAKE_TEST=1 MINIK8S_BIN=$(BIN) MINIK8S_IMAGES=$(IMAGES) $(GO) test -count=1 -timeout 55m $(SLOWEST_TESTS) ./...

# e2e.test and the Ginkgo CLI for the conformance subset (TestCISubset), built once into
# ~/.cache/minik8s by hack/kube-build.sh: a cold e2e.test build (about 10 min of two idle
# cores) happens here, outside go test's -timeout; later runs find both cached.
kube-e2e:
	@bash hack/kube-build.sh e2e.test >/dev/null
	@bash hack/kube-build.sh ginkgo >/dev/null

# A host without kubectl and busybox on PATH can follow the README: `make build` into a
# scratch bin/ (building bin/kubectl), the minilab commands on a lab of their own, and no
# test skipping for a tool outside internal/testenv (hack/fresh-check.sh says what it does not run).
fresh-check: build
	@bash hack/fresh-check.sh

# The figures of docs/performance.md: API create/list/watch on bolt and etcd, with baselines
# measured in the same run (about 3 minutes; etcd is bin/etcd, `make etcd`).
bench: deps etcd
	$(GO) run ./bench/apibench -duration 5s

# The HA API figures of docs/performance.md: three miniapi, then three kube-apiservers
# (built once into ~/.cache/minik8s by hack/kube-build.sh), on one 3-member etcd.
bench-ha: deps etcd
	$(GO) build -tags $(TAGS) -o $(BIN)/ ./cmd/miniapi
	MINIK8S_BIN=$(BIN) $(GO) run ./bench/habench -miniapi $(BIN)/miniapi -kube-apiserver "$$(bash hack/kube-build.sh kube-apiserver)"

# The memory figures of docs/performance.md: one client-go load (creates at 1/16/64 clients, a
# LIST of 10 000 pods, 200 watchers) against bin/miniapi on bolt, then kube-apiserver on etcd
# with kube-scheduler and kube-controller-manager (each built once as bench-ha builds it).
bench-mem: deps etcd
	$(GO) build -tags $(TAGS) -o $(BIN)/ ./cmd/miniapi
	MINIK8S_BIN=$(BIN) $(GO) run ./bench/membench -miniapi $(BIN)/miniapi -kube-apiserver "$$(bash hack/kube-build.sh kube-apiserver)" \
		-kube-scheduler "$$(bash hack/kube-build.sh kube-scheduler)" -kube-controller-manager "$$(bash hack/kube-build.sh kube-controller-manager)"

# The custom resource figures of docs/performance.md: creates of a CR with a 20-field schema
# and a CEL rule on miniapi (bolt, etcd) and on kube-apiserver (etcd), as bench-ha builds it.
bench-cr: deps etcd
	$(GO) build -tags $(TAGS) -o $(BIN)/ ./cmd/miniapi
	MINIK8S_BIN=$(BIN) $(GO) run ./bench/crbench -miniapi $(BIN)/miniapi -kube-apiserver "$$(bash hack/kube-build.sh kube-apiserver)"

# The NetworkPolicy figures of docs/performance.md: our enforcement (bin/policyd, minilet's
# controller alone) beside kube-router's (built once into ~/.cache/minik8s by
# hack/kube-router-build.sh), 1000 policies over 5000 pods, each in a namespace of its own.
bench-policy: deps
	$(GO) build -tags $(TAGS) -o $(BIN)/ ./bench/policybench/policyd
	$(GO) run ./bench/policybench -policyd $(BIN)/policyd -kube-router "$$(bash hack/kube-router-build.sh)" -changes 1 -sync-timeout 25m -change-timeout 20m

# The Kubernetes v1.36 [Conformance] tests on a fresh 2-node minilab (docs/conformance.md):
# e2e.test is built once into ~/.cache/minik8s (about 10 min cold); FOCUS=REGEX narrows
# the run (FOCUS_FILE=test/conformance/ci-subset.txt: the subset make test runs, by name),
# CONFORMANCE_PROCS=N runs N processes (the Ginkgo CLI); the JUnit report and the
# per-SIG summary go to _output/conformance/.
conformance: build
	FOCUS='$(FOCUS)' MINIK8S_IMAGES=$(IMAGES) bash hack/conformance.sh

# `make install` copies bin/ (run `make build` first; etcd and etcdctl too) to $(DESTDIR)$(PREFIX)/bin, the units of
# systemd/ to $(UNITDIR) and their example flags to $(CONFDIR) (an existing one is kept);
# `make uninstall` removes them, configuration only where unchanged (docs/systemd.md).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
MODULESLOADDIR ?= $(PREFIX)/lib/modules-load.d
NETWORKDIR ?= $(PREFIX)/lib/systemd/network
CONFDIR ?= /etc/minik8s
# apilb.service runs miniproxy apilb: the nodes' local API balancer of an HA control plane.
DAEMONS := miniapi minilet miniproxy etcd apilb
# Our commands and etcd's (make etcd), for an HA control plane's etcd unit.
INSTALLED := $(COMMANDS) etcd etcdctl
SUBST := sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@CONFDIR@|$(CONFDIR)|g'

install:
	@for c in $(INSTALLED); do [[ -x $(BIN)/$$c ]] || { echo "install: no $(BIN)/$$c: run make build first" >&2; exit 1; }; done
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(MODULESLOADDIR) $(DESTDIR)$(NETWORKDIR) $(DESTDIR)$(CONFDIR)/manifests
	install -m 0755 $(addprefix $(BIN)/,$(INSTALLED)) $(DESTDIR)$(BINDIR)/
	install -m 0644 systemd/modules-load.conf $(DESTDIR)$(MODULESLOADDIR)/minik8s.conf
	install -m 0644 systemd/80-minik8s.link $(DESTDIR)$(NETWORKDIR)/80-minik8s.link
	@set -e; for d in $(DAEMONS); do \
		$(SUBST) systemd/$$d.service >$(DESTDIR)$(UNITDIR)/$$d.service; chmod 0644 $(DESTDIR)$(UNITDIR)/$$d.service; \
		env=$(DESTDIR)$(CONFDIR)/$$d.env; \
		if [[ -e $$env ]]; then echo "install: kept $$env"; else $(SUBST) systemd/$$d.env >$$env; chmod 0644 $$env; fi; \
	done
	@echo "installed; on a systemd host: systemctl daemon-reload, udevadm control --reload, edit $(CONFDIR)/*.env, systemctl enable --now miniapi minilet miniproxy (and etcd on control-plane hosts of an HA control plane, apilb on every node of one)"

uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(INSTALLED)) $(foreach d,$(DAEMONS),$(DESTDIR)$(UNITDIR)/$(d).service) $(DESTDIR)$(MODULESLOADDIR)/minik8s.conf $(DESTDIR)$(NETWORKDIR)/80-minik8s.link
	@for d in $(DAEMONS); do \
		env=$(DESTDIR)$(CONFDIR)/$$d.env; \
		if $(SUBST) systemd/$$d.env | cmp -s - $$env; then rm -f $$env; elif [[ -e $$env ]]; then echo "uninstall: kept $$env (changed)"; fi; \
	done
	@rmdir $(DESTDIR)$(CONFDIR)/manifests $(DESTDIR)$(CONFDIR) 2>/dev/null || true

clean:
	rm -rf $(BIN) $(IMAGES) $(PAUSE_EMBED)
