# Meridian — see `make help`.
GO       ?= go
BIN      := bin/meridian
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/meridian-gslb/meridian/internal/app.Version=$(VERSION)
# Static (no cgo), no build paths, no symbol table or DWARF: the binary that
# goes into the image, and the one the e2e tests run. Panics still print
# stack traces with function names and lines.
GOBUILD  := CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)"
IMAGE    ?= ghcr.io/meridian-gslb/meridian
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
# The image's mtimes and created date: the commit time, for the same digest
# on every run (set SOURCE_DATE_EPOCH to override).
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
MKIMAGE  := bin/mkimage
FUZZTIME ?= 60s
STATICCHECK := bin/staticcheck
E2E_DEPS := dig=dnsutils kdig=knot-dnsutils dnsperf=dnsperf ip=iproute2 tc=iproute2 curl=curl chromium=chromium unbound=unbound named=bind9 knotd=knot

.PHONY: help run build test unit e2e image image-test kube-bins bench fuzz lint coredns clean
.PHONY: peer-bins

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## build bin/meridian (static, -trimpath, stripped)
	$(GOBUILD) -o $(BIN) ./cmd/meridian

run: build ## serve the demo config: DNS on 127.0.0.1:5353, HTTP on 127.0.0.1:8080
	./$(BIN) serve --config deploy/examples/demo.yaml --demo-backends

test: lint unit e2e image-test ## vet + unit tests with -race + end-to-end tests with dig/kdig + the image test

lint: $(STATICCHECK) ## gofmt, go vet, go mod tidy check (module and tools/), staticcheck (e2e files included)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff
	cd tools && $(GO) mod tidy -diff
	cd tools/mkimage && $(GO) mod tidy -diff && $(GO) vet ./... && $(CURDIR)/$(STATICCHECK) ./...
	$(STATICCHECK) -tags e2e ./...

# staticcheck is pinned in tools/go.mod, a module of its own, so its
# dependencies never change the versions the binaries are built with.
$(STATICCHECK): tools/go.mod tools/go.sum
	cd tools && $(GO) build -o $(CURDIR)/$(STATICCHECK) honnef.co/go/tools/cmd/staticcheck

unit: ## unit tests with the race detector (installs promtool for the alert-rule test)
	@scripts/deps.sh promtool=prometheus || { [ -z "$$CI" ] || { echo "promtool not installed and CI is set: the alert-rule tests would not run" >&2; exit 1; }; echo "promtool not installed (apt unreachable?): deploy/prometheus skips its tests" >&2; }
	$(GO) test -race -count=1 ./...

# The e2e test binary is compiled like bin/meridian (CGO_ENABLED=0,
# -trimpath), so the two share their compiled packages on a cold machine.
e2e: build coredns ## end-to-end tests: the real binaries queried with dig and kdig, multi-node netns scenarios, kube-apiservers
	@scripts/deps.sh $(E2E_DEPS)
	@kube_bins=$$(GO=$(GO) scripts/kube-bins.sh | tail -n 1) && [ -n "$$kube_bins" ] && \
	peer_bins=$$(GO=$(GO) scripts/peer-bins.sh | tail -n 1) && [ -n "$$peer_bins" ] && \
	echo "KUBE_BINS=$$kube_bins EXTERNALDNS_BIN=$$peer_bins/external-dns" && \
	KUBE_BINS=$$kube_bins EXTERNALDNS_BIN=$$peer_bins/external-dns MERIDIAN_BIN=$(CURDIR)/$(BIN) COREDNS_BIN=$(CURDIR)/bin/coredns-meridian CGO_ENABLED=0 $(GO) test -trimpath -count=1 -tags e2e -timeout 30m ./e2e/...

# tools/mkimage is a module of its own too: go-containerregistry never
# changes the versions the binaries are built with.
$(MKIMAGE): tools/mkimage/go.mod tools/mkimage/go.sum tools/mkimage/main.go
	cd tools/mkimage && $(GO) build -o $(CURDIR)/$(MKIMAGE) .

image: build $(MKIMAGE) ## OCI image without a daemon: bin/meridian-image.tar (docker load) and bin/oci/ (OCI layout); prints the digest
	$(MKIMAGE) -binary $(BIN) -ca-bundle $(CA_BUNDLE) -repo $(IMAGE) -version $(VERSION) \
	  -revision "$(REVISION)" -created "$(SOURCE_DATE_EPOCH)" -tar bin/meridian-image.tar -oci bin/oci

image-test: build ## the image test (tools/mkimage): layout, config, same digest twice, the binary in it runs `version`
	cd tools/mkimage && MERIDIAN_BIN=$(CURDIR)/$(BIN) MERIDIAN_VERSION=$(VERSION) $(GO) test -count=1 ./...

peer-bins: ## build the real ExternalDNS (e2e/peerbins/externaldns, Go 1.27 toolchain) into a cache dir outside the repo; prints the dir
	@GO=$(GO) scripts/peer-bins.sh

kube-bins: ## build kube-apiserver, etcd, kubectl and helm (e2e/kubebins) into a cache dir outside the repo; prints the dir
	@GO=$(GO) scripts/kube-bins.sh

bench: build coredns ## dnsperf: Meridian, Knot, PowerDNS, CoreDNS+meridian vs CoreDNS+fixed; Go benchmarks
	$(GO) test -run '^$$' -bench . -benchmem ./internal/engine/ ./internal/geo/
	bench/run.sh

.PHONY: bench-names
bench-names: build ## dnsperf over 10 000 distinct weighted names: Meridian vs Knot, pinned, 3 interleaved rounds (bench/run.sh BENCH_QUERIES=names)
	MERIDIAN_BIN=$(CURDIR)/$(BIN) BENCH_QUERIES=names BENCH_ROUNDS=$${BENCH_ROUNDS:-3} bench/run.sh

.PHONY: bench-ring
bench-ring: build ## 5 probers × 1000 endpoints on loopback: CPU, memory, gossip bytes/s (bench/ring)
	MERIDIAN_BIN=$(CURDIR)/$(BIN) $(GO) run ./bench/ring

.PHONY: bench-scale
bench-scale: build ## generated configs of 1k/10k/100k services (BENCH_SCALE_SIZES): check-config, serve ready, RSS, 5 SIGHUP reloads (bench/scale)
	MERIDIAN_BIN=$(CURDIR)/$(BIN) $(GO) run ./bench/scale

.PHONY: bench-failover
bench-failover: build ## Meridian vs PowerDNS Lua ifurlup on the same loopback backends: kill, restart, blackhole, flap, 10 % loss, and clients behind Unbound (bench/failover)
	MERIDIAN_BIN=$(CURDIR)/$(BIN) $(GO) run ./bench/failover

.PHONY: bench-kube-scale
bench-kube-scale: build ## 2 000 and 10 000 annotated Services on 2 real kube-apiservers: time to served, one annotation change, status write-back, RSS (bench/kubescale; KUBESCALE_SIZES)
	@kube_bins=$$(GO=$(GO) scripts/kube-bins.sh | tail -n 1) && [ -n "$$kube_bins" ] && \
	KUBE_BINS=$$kube_bins MERIDIAN_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -tags kubescale -run '^TestKubeScale$$' -timeout 60m -v ./bench/kubescale

fuzz: ## fuzz the request path, the config loader, the Kubernetes annotations and member kubeconfigs, and ring messages for FUZZTIME each
	$(GO) test -run '^$$' -fuzz '^FuzzServe$$' -fuzztime $(FUZZTIME) ./internal/dnsserver/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/config/
	$(GO) test -run '^$$' -fuzz '^FuzzParseAnnotations$$' -fuzztime $(FUZZTIME) ./internal/kube/
	$(GO) test -run '^$$' -fuzz '^FuzzRingMessage$$' -fuzztime $(FUZZTIME) ./internal/ring/
	$(GO) test -run '^$$' -fuzz '^FuzzInlineKubeconfig$$' -fuzztime $(FUZZTIME) ./internal/kube/

coredns: ## build bin/coredns-meridian: CoreDNS with the meridian plugin
	$(GOBUILD) -o bin/coredns-meridian ./cmd/coredns-meridian

clean: ## remove build output
	rm -rf bin
